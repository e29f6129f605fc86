"""Batch mode end to end (issue 36): EVE with a three-judge panel in batch mode against the fake server's Files
and Batches endpoints gives the direct run's metrics, records, fingerprints and cache entries, at batch prices; a
runner killed with SIGKILL mid-poll resumes polling its batch and submits no request twice; an endpoint without
a batch API is refused before any request (one line), `batch: auto` goes direct; a dry run shows both prices."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    EVE_SAMPLE,
    JUDGE_CORRECT,
    JUDGE_INCORRECT,
    ROOT,
    cli,
    one_line_error,
    read_jsonl,
    run_in_process,
    run_overrides,
)
from fake_llm import FakeLLM

from runner.models import batch as batch_module
from runner.models.batch_journal import JOURNAL, describe

PRICES = {"input_per_mtok": 1000000, "output_per_mtok": 3000000}
"""$1 and $3 a token: every cost an exact number, and its half too."""


@pytest.fixture(autouse=True)
def fast_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batch_module, "POLL_FIRST_S", 0.01)
    monkeypatch.setattr(batch_module, "POLL_MAX_S", 0.02)


def judged(body: dict[str, Any]) -> str:
    """Three judges that disagree now and then; the model answers B and a sentence."""
    if "judgement" not in json.dumps(body):
        return "B. It is about radar."
    text = json.dumps(body["messages"])
    return JUDGE_INCORRECT if body["model"] == "judge3" and "radar" in text else JUDGE_CORRECT


def overrides(url: str, run_dir: Path, cache: Path, *, batch: bool) -> list[str]:
    on = {"batch": True, "batch_wait": 0.1} if batch else {}
    return run_overrides(url, run_dir, judges=3, limit=3, cache=cache,
                         model_fields={"timeout": 5, "max_retries": 2, "pricing": PRICES, **on},
                         judge_fields={"concurrency": 8, "max_retries": 2, "timeout": 5,
                                       "params": {"max_tokens": 256}, "pricing": PRICES, **on})


def cache_entries(folder: Path) -> dict[str, Any]:
    with sqlite3.connect(folder / "responses.sqlite") as conn:
        return {k: json.loads(v) for k, v in conn.execute("SELECT key, value FROM responses")}


def without_cost(record: dict[str, Any]) -> dict[str, Any]:
    """A record with its costs left out (a batch costs half), all else as it is."""
    text = json.dumps(record)
    for key in ("cost", "cost_usd"):
        text = text.replace(f'"{key}": ', f'"{key}_": ')
    out = json.loads(text)

    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if not k.endswith("_")}
        return [strip(v) for v in node] if isinstance(node, list) else node
    return dict(strip(out))


def test_eve_with_a_three_judge_panel_in_batches_is_the_direct_run_at_half_the_price(tmp_path):
    with FakeLLM(default=judged) as srv:
        direct = run_in_process(overrides(srv.base_url, tmp_path / "d", tmp_path / "cd", batch=False), tmp_path / "d")
        sent_directly = srv.count
        batched = run_in_process(overrides(srv.base_url, tmp_path / "b", tmp_path / "cb", batch=True), tmp_path / "b")
        assert srv.count == sent_directly  # nothing of the batch run went to /chat/completions
        lines = srv.batch_lines
        models = [body["model"] for _, _, body in lines]
    assert {name: block["metrics"] for name, block in batched["tasks"].items()} == \
        {name: block["metrics"] for name, block in direct["tasks"].items()}
    assert len(lines) == sent_directly and sorted(models).count("fake-model") == 18  # 6 tasks x 3 samples
    # two phases: the model's batch first, then one batch per judge with the judged tasks' replies
    assert [b["_lines"][0]["body"]["model"] for b in srv.batches.values()][0] == "fake-model"
    assert len(srv.batches) == 4
    for name, usage in batched["usage"].items():
        assert usage["requests"] == direct["usage"][name]["requests"] > 0
        assert usage["cost_usd"] == pytest.approx(direct["usage"][name]["cost_usd"] / 2)
        assert usage["batch"]["sent_in_batches"] and usage["batch"]["prices"].startswith("half the entry's")
    for task in direct["tasks"]:
        one = read_jsonl(tmp_path / "d" / "samples" / f"{task}.jsonl")
        two = {r["id"]: r for r in read_jsonl(tmp_path / "b" / "samples" / f"{task}.jsonl")}
        assert [without_cost(r) for r in one] == [without_cost(two[r["id"]]) for r in one]
        assert [r["fingerprint"] for r in one] == [two[r["id"]]["fingerprint"] for r in one]
    assert cache_entries(tmp_path / "cb") == cache_entries(tmp_path / "cd")
    assert json.loads((tmp_path / "b" / "results.json").read_text())["totals"]["cost_usd"] == \
        pytest.approx(direct["totals"]["cost_usd"] / 2)


def test_a_runner_killed_mid_poll_resumes_its_batch_and_submits_no_request_twice(tmp_path):
    run_dir = tmp_path / "run"
    env = {**os.environ, "RUNNER_BATCH_POLL_MAX_S": "0.05"}
    with FakeLLM(default="B") as srv:
        srv.batch_hold = True  # the batch stays in progress until the runner is gone
        args = run_overrides(srv.base_url, run_dir, judges=0, tasks=["mcqa_single_answer"], limit=4,
                             model_fields={"batch": True, "batch_wait": 0.1})
        proc = subprocess.Popen([sys.executable, "-m", "runner", *args], cwd=ROOT, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        journal = run_dir / JOURNAL
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None and not (
                journal.exists() and '"event": "status"' in journal.read_text()):
            time.sleep(0.05)
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        os.kill(proc.pid, signal.SIGKILL)  # mid-poll: the batch was created and polled
        proc.wait()
        assert not (run_dir / "results.json").exists() and len(srv.batches) == 1
        status = cli(["status", str(run_dir)], module="runner")  # `runner status RUN_DIR`: sends nothing
        assert status.returncode == 0 and "batch_0001  fake-model  4 request(s)  in_progress" in status.stdout
        assert "1 not finished" in status.stdout and len(srv.batch_lines) == 4
        srv.batch_hold = False
        again = subprocess.run([sys.executable, "-m", "runner", *args], cwd=ROOT, env=env, capture_output=True,
                               text=True, timeout=180)
        assert again.returncode == 0, again.stderr[-2000:]
        custom_ids = [c for _, c, _ in srv.batch_lines]
        assert len(srv.batches) == 1 and len(custom_ids) == len(set(custom_ids)) == 4  # nothing submitted twice
        assert srv.count == 0  # and nothing sent directly
    results = json.loads((run_dir / "results.json").read_text())
    assert results["tasks"]["mcqa_single_answer"]["n"] == 4 and results["tasks"]["mcqa_single_answer"]["n_errors"] == 0
    assert "0 not finished" in describe(run_dir)[-1]


def test_a_server_without_batches_is_refused_before_any_request_and_auto_goes_direct(tmp_path):
    with FakeLLM(default="B", batches=False) as srv:
        base = run_overrides(srv.base_url, judges=0, tasks=["mcqa_single_answer"], limit=2)
        refused = cli([*base, "model.batch=true", f"hydra.run.dir={tmp_path / 'a'}"])
        assert refused.returncode == 3, refused.stderr
        line = one_line_error(refused)
        assert "fake-model" in line and "has no batch API" in line and "batch: auto" in line and srv.count == 0
        auto = cli([*base, "model.batch=auto", f"hydra.run.dir={tmp_path / 'b'}"])
        assert auto.returncode == 0, auto.stderr
        assert srv.count == 2 and not srv.batch_lines
    claude = cli(["model=claude-haiku-4-5", "model.batch=true", "judges=none", "benchmark=eve",
                  f"benchmark.data_dir={EVE_SAMPLE}", "benchmark.tasks=[mcqa_single_answer]", "tracker=none",
                  f"hydra.run.dir={tmp_path / 'c'}"], env={"ANTHROPIC_API_KEY": "not-a-key"})
    assert claude.returncode == 2, claude.stderr
    assert "its provider (anthropic) has no batch API" in one_line_error(claude)


def test_a_dry_run_shows_both_prices(tmp_path, capsys):
    with FakeLLM(default=judged) as srv:
        plan = run_in_process([*overrides(srv.base_url, tmp_path / "p", tmp_path / "c", batch=True), "dry_run=true"],
                              tmp_path / "p")["plan"]
        assert srv.count == 0 and not srv.batch_lines
    for block in plan["endpoints"].values():
        assert block["batch"]["cost_usd_batch"] == pytest.approx(block["batch"]["cost_usd_direct"] / 2)
        assert block["cost_usd"] == block["batch"]["cost_usd_batch"]
    assert "has batch: true: priced at batch prices (half the entry's pricing" in capsys.readouterr().out
