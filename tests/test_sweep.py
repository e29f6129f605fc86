"""-m sweeps over models: basic, joblib and Ray launchers, a failed job, resume, the comparison report."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import EVE_SAMPLE, JUDGE_CORRECT, JUDGE_INCORRECT
from test_cli import SECRET, cli
from test_wandb_tracker import read_offline_run

from runner.report import sweep_group


def reply(body: dict[str, Any]) -> str:
    """Model m1 always answers B, m2 always A; judge j2 rejects everything, j1 accepts."""
    text = body["messages"][-1]["content"]
    if "fact-checker" in text:
        return JUDGE_CORRECT if body["model"] == "j1" else JUDGE_INCORRECT
    return {"m1": "Answer: B", "m2": "Answer: A"}.get(body["model"], "Answer: C")


def user_configs(tmp_path: Path, url: str, m2_url: str | None = None) -> Path:
    conf = tmp_path / "userconf"
    for name, base in (("m1", url), ("m2", m2_url or url)):
        (conf / "model").mkdir(parents=True, exist_ok=True)
        (conf / "model" / f"{name}.yaml").write_text(
            f"name: {name}\nmodel: openai/{name}\napi_base: {base}\napi_key: k\nconcurrency: 4\n"
            "max_retries: 1\nbackoff: 0.01\ntimeout: 5\nparams: {temperature: 0.0}\n")
    (conf / "judges").mkdir(exist_ok=True)
    (conf / "judges" / "pair.yaml").write_text("panel:\n" + "".join(
        f"  - {{name: {j}, model: openai/{j}, api_base: '{url}', api_key: k, concurrency: 4}}\n"
        for j in ("j1", "j2")))
    return conf


def sweep_args(conf: Path, sweep_dir: Path, *extra: str) -> list[str]:
    return ["-m", "model=m1,m2", "judges=pair", f"hydra.searchpath=[file://{conf}]",
            f"benchmark.data_dir={EVE_SAMPLE}", "benchmark.tasks=[mcqa_single_answer,open_ended]",
            "benchmark.limit=4", "cache.enabled=false", f"hydra.sweep.dir={sweep_dir}", *extra]


def job_results(sweep_dir: Path) -> dict[str, dict[str, Any]]:
    return {json.loads(p.read_text())["model"]: json.loads(p.read_text())
            for p in sweep_dir.glob("*/results.json")}


def check_sweep(sweep_dir: Path) -> dict[str, dict[str, Any]]:
    results = job_results(sweep_dir)
    assert set(results) == {"m1", "m2"}
    rows = single = [r for r in _rows("mcqa_single_answer")[2:6]]
    assert results["m1"]["tasks"]["mcqa_single_answer"]["metrics"]["accuracy"] == \
        pytest.approx(sum(r["Answer"] == "B" for r in single) / 4)
    assert results["m2"]["tasks"]["mcqa_single_answer"]["metrics"]["accuracy"] == \
        pytest.approx(sum(r["Answer"] == "A" for r in rows) / 4)
    # j1 always passes, j2 never: avg 0.5, a 1-1 split is no majority, and they never agree.
    judged = results["m1"]["tasks"]["open_ended"]["metrics"]
    assert judged == {"llm_as_judge_j1": 1.0, "llm_as_judge_j2": 0.0, "llm_as_judge_avg": 0.5,
                      "judge_voting": 0.0, "judge_agreement": 0.0}

    with open(sweep_dir / "report" / "comparison.csv", newline="") as fh:
        report = list(csv.DictReader(fh))
    assert list(report[0])[:5] == ["model", "benchmark", "task", "metric", "value"]
    for row in report:
        expected = results[row["model"]]["tasks"][row["task"]]["metrics"][row["metric"]]
        assert float(row["value"]) == pytest.approx(expected)
        assert row["benchmark"] == "eve"
    assert len(report) == 2 * (1 + 5)
    acc = next(r for r in report if r["model"] == "m1" and r["metric"] == "accuracy")
    assert float(acc["ci_low"]) <= float(acc["value"]) <= float(acc["ci_high"])
    md = (sweep_dir / "report" / "comparison.md").read_text()
    assert "| m1 | m2 |" in md.splitlines()[2].replace(" ", " ") or "m1 | m2" in md
    assert "## Cost" in md
    for chart in ("tasks.png", "judge_agreement.png"):
        assert (sweep_dir / "report" / chart).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    return results


def _rows(task: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (EVE_SAMPLE / f"{task}.jsonl").read_text().splitlines()]


def test_basic_sweep_runs_each_model_in_its_own_dir_with_one_report_and_grouped_wandb_runs(fake_llm, tmp_path):
    fake_llm.default = reply
    sweep_dir = tmp_path / "sweep"
    proc = cli(sweep_args(user_configs(tmp_path, fake_llm.base_url), sweep_dir, "tracker=wandb",
                          f"model.api_key={SECRET}"), env={"WANDB_MODE": "offline"}, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = check_sweep(sweep_dir)
    assert [p for p in sweep_dir.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()] == []
    assert sorted(p.name for p in sweep_dir.iterdir() if (p / "results.json").exists()) == \
        ["0_m1", "1_m2"]
    for model, res in results.items():
        assert res["totals"]["requests"] > 0 and res["run"]["git"].get("commit")
        (sync,) = Path(res["run"]["run_dir"]).glob("wandb/offline-run-*")
        run = read_offline_run(sync)
        assert run["run"].run_group == sweep_group(str(sweep_dir))
        assert f"model:{model}" in list(run["run"].tags)
        assert run["summary"]["mcqa_single_answer/accuracy"] == \
            res["tasks"]["mcqa_single_answer"]["metrics"]["accuracy"]
    (report_run,) = (sweep_dir / "report").glob("wandb/offline-run-*")
    assert "comparison" in read_offline_run(report_run)["tables"]


def test_joblib_sweep_runs_jobs_in_parallel_processes(fake_llm, tmp_path):
    fake_llm.default = reply
    sweep_dir = tmp_path / "sweep"
    proc = cli(sweep_args(user_configs(tmp_path, fake_llm.base_url), sweep_dir, "launcher=joblib",
                          "tracker=none"), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    check_sweep(sweep_dir)


@pytest.mark.slow
def test_ray_sweep_runs_two_jobs_on_a_local_ray_instance(fake_llm, tmp_path):
    fake_llm.default = reply
    sweep_dir = tmp_path / "sweep"
    proc = cli(sweep_args(user_configs(tmp_path, fake_llm.base_url), sweep_dir, "launcher=ray",
                          "hydra.launcher.ray.init.num_cpus=2", "tracker=none"),
               env={"RAY_USAGE_STATS_ENABLED": "0"}, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    check_sweep(sweep_dir)


def test_a_failed_job_keeps_the_others_and_the_sweep_resumes(fake_llm, tmp_path):
    fake_llm.default = reply
    sweep_dir = tmp_path / "sweep"
    dead = "http://127.0.0.1:9/v1"  # nothing listens on the discard port
    first = cli(sweep_args(user_configs(tmp_path, fake_llm.base_url, m2_url=dead), sweep_dir, "tracker=none"),
                timeout=300)
    assert first.returncode != 0
    assert "1 job(s) of the sweep failed" in first.stderr and "Traceback" not in first.stderr
    assert set(job_results(sweep_dir)) == {"m1"}
    assert (sweep_dir / "1_m2" / "error.txt").exists()
    assert "Failed jobs" in (sweep_dir / "report" / "comparison.md").read_text()

    fake_llm.reset()
    second = cli(sweep_args(user_configs(tmp_path, fake_llm.base_url), sweep_dir, "tracker=none"), timeout=300)
    assert second.returncode == 0, second.stderr[-3000:]
    asked = {b["model"] for b in fake_llm.requests}
    assert "m1" not in asked, "the finished job's samples must be kept, not re-asked"
    assert "m2" in asked
    check_sweep(sweep_dir)


def test_report_command_reads_any_folder_of_runs(tmp_path):
    run = tmp_path / "runs" / "a"
    run.mkdir(parents=True)
    (run / "results.json").write_text(json.dumps({
        "benchmark": "eve", "model": "x", "judges": [], "usage": {"x": {"role": "model", "cost": 0.25}},
        "tasks": {"mcqa_single_answer": {"n": 4, "metrics": {"accuracy": 0.75}, "stderr": {"accuracy": 0.25}}}}))
    from runner.report import main

    assert main([str(tmp_path / "runs")]) == 0
    with open(tmp_path / "runs" / "report" / "comparison.csv", newline="") as handle:
        (row,) = list(csv.DictReader(handle))
    # 0.75 ± 1.96 * 0.25 = [0.26, 1.24] -> clipped to [0.26, 1.0]
    assert float(row["ci_low"]) == pytest.approx(0.75 - 1.959964 * 0.25)
    assert float(row["ci_high"]) == 1.0
    assert "| x | eve | 0.2500 |" in (tmp_path / "runs" / "report" / "comparison.md").read_text()
