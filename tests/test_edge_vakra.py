"""VAKRA edge cases of issue 10 ("Numbers you can trust"): a missing prediction is not an error, a figure
over nothing is null, and no MCP server able to start stops the run with exit 3, through the real CLI."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from conftest import ROOT, fake_model_overrides, read_jsonl, run_in_process
from test_vakra_run import copy_data, overrides, scripted_judge


def cli(args: list[str], timeout: float = 180) -> subprocess.CompletedProcess[str]:
    """`python -m runner ARGS` from the clone, as a user runs it (no debug output)."""
    env = {k: v for k, v in os.environ.items() if k != "RUNNER_DEBUG"}
    return subprocess.run([sys.executable, "-m", "runner", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=timeout, env=env)


def records(run_dir: Path, domain: str) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in read_jsonl(run_dir / "samples" / f"{domain}.jsonl")}


def test_a_domain_whose_predictions_are_all_missing_scores_0_overall_and_null_per_domain(fake_llm, tmp_path):
    fake_llm.default = scripted_judge
    gt, pred = copy_data("capability_dashboard_apis", tmp_path)
    (pred / "weather.json").write_text("[]")  # the agent produced nothing for this domain
    run_dir = tmp_path / "run"
    results = run_in_process(overrides(fake_llm.base_url, run_dir, f"benchmark.gt_root={gt}",
                                       f"benchmark.pred_root={pred}", "benchmark.domains=[weather]"), run_dir)
    wx = results["tasks"]["weather"]
    # No paired dialogue: the per-domain mean (over paired dialogues) is over nothing, so null.
    assert wx["metrics"] == {"mean_dialogue_score": None, "num_correct": 0.0, "num_samples": 4}
    assert (wx["n"], wx["n_errors"], wx["n_invalid"], wx["n_paired"]) == (4, 0, 0, 0)
    assert wx["missing_prediction_uuids"] == ["wx-001", "wx-002", "wx-003", "wx-004"]
    # The summary mean counts each missing prediction as 0 over the 4 ground-truth dialogues: 0.0, not null.
    assert results["summary"] == {"n_domains": 1, "n_paired_dialogues": 0, "n_missing_predictions": 4,
                                  "n_extra_predictions": 0, "n_samples": 4, "n_correct": 0.0,
                                  "mean_dialogue_score": 0.0, "n_errors": 0, "n_invalid": 0}
    got = records(run_dir, "weather")
    assert {r["status"] for r in got.values()} == {"ok"}
    assert all(r["extra"]["missing_prediction"] and r["scores"] == {"dialogue_score": 0.0} for r in got.values())
    assert fake_llm.count == 0  # nothing to judge
    report = json.loads((run_dir / "vakra_results.json").read_text())
    block = report["domains"]["weather"]
    assert (block["errors"], block["dialogues"], block["summary"]["min_dialogue_score"]) == ({}, [], None)
    assert report["summary"]["mean_dialogue_score"] == 0.0


def test_missing_predictions_do_not_change_the_exit_status_of_the_cli(fake_llm, tmp_path):
    # library's lib-006 has no prediction (the bundled data) and weather has none at all. Nothing failed,
    # so the run exits 0, even with a domain whose per-domain mean is null.
    fake_llm.default = scripted_judge
    gt, pred = copy_data("capability_dashboard_apis", tmp_path)
    (pred / "weather.json").unlink()
    run_dir = tmp_path / "run"
    proc = cli(fake_model_overrides(fake_llm.base_url) + [
        "benchmark=vakra", f"benchmark.gt_root={gt}", f"benchmark.pred_root={pred}", "tracker=none",
        "progress=false", "cache.enabled=false", f"hydra.run.dir={run_dir}"])
    assert proc.returncode == 0, proc.stderr
    results = json.loads((run_dir / "results.json").read_text())
    assert results["summary"]["n_missing_predictions"] == 5 and results["summary"]["n_errors"] == 0
    assert results["summary"]["mean_dialogue_score"] == 3 / 11  # library's 3 correct over 7 + 4 dialogues
    assert results["tasks"]["library"]["metrics"]["mean_dialogue_score"] == 0.5  # 3 of the 6 paired
    assert results["tasks"]["weather"]["metrics"]["mean_dialogue_score"] is None
    assert records(run_dir, "library")["lib-006"]["status"] == "ok"


def test_a_server_command_that_does_not_exist_exits_3_naming_it_with_no_traceback(tmp_path):
    config = tmp_path / "mcp_connection_config.yaml"
    config.write_text("tasks:\n  2:\n    command: vakra-mcp-server-not-installed\n    args: [--stdio]\n")
    run_dir = tmp_path / "run"
    proc = cli(["benchmark=vakra", f"benchmark.mcp_config={config}", "tracker=none", "progress=false",
                "cache.enabled=false", f"hydra.run.dir={run_dir}", "judges.panel=[{name:j,model:openai/j,"
                "api_base:'http://127.0.0.1:9/v1',api_key:unused}]"])
    assert proc.returncode == 3, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert "Traceback" not in proc.stderr
    last = lines[-1]
    assert "command 'vakra-mcp-server-not-installed' not found" in last
    assert str(config) in last and "install it or fix the command" in last
    assert not (run_dir / "samples").exists()  # stopped before anything was replayed


def test_a_container_runtime_that_does_not_exist_stops_the_run_the_same_way(tmp_path):
    config = tmp_path / "mcp.yaml"
    config.write_text("tasks:\n  2: {container_name: vakra, container_runtime: no-such-container-runtime}\n")
    proc = cli(["benchmark=vakra", f"benchmark.mcp_config={config}", "tracker=none", "progress=false",
                f"hydra.run.dir={tmp_path / 'run'}", "judges.panel=[{name:j,model:openai/j,"
                "api_base:'http://127.0.0.1:9/v1',api_key:unused}]"])
    assert proc.returncode == 3 and "Traceback" not in proc.stderr
    assert "command 'no-such-container-runtime' not found" in proc.stderr.strip().splitlines()[-1]


def test_one_domain_whose_server_cannot_start_fails_alone(fake_llm, tmp_path):
    # atlantis's server refuses to start (the bundled server knows no such domain); weather's starts. That
    # is one broken domain, not "no MCP server able to start": its dialogues are errors, weather is scored.
    fake_llm.default = scripted_judge
    gt, pred = copy_data("capability_dashboard_apis", tmp_path)
    for root in (gt, pred):
        shutil.copy(root / "weather.json", root / "atlantis.json")
    run_dir = tmp_path / "run"
    args = overrides(fake_llm.base_url, run_dir, f"benchmark.gt_root={gt}", f"benchmark.pred_root={pred}",
                     "benchmark.domains=[atlantis,weather]", "benchmark.replay_concurrency=1")
    results = run_in_process(args, run_dir)
    atlantis = results["tasks"]["atlantis"]
    assert (atlantis["n_errors"], atlantis["metrics"]["mean_dialogue_score"]) == (4, None)
    assert results["tasks"]["weather"]["metrics"]["mean_dialogue_score"] == 0.75
    assert results["summary"]["mean_dialogue_score"] == 3 / 8  # the errors count 0 over all 8 dialogues
