"""-m sweeps over models: basic, joblib and Ray launchers, a failed job, resume, the comparison report."""

from __future__ import annotations

import csv
import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import EVE_SAMPLE, JUDGE_CORRECT, JUDGE_INCORRECT, one_line_error
from test_cli import SECRET, cli
from test_wandb_tracker import read_offline_run

from runner.metrics.paired import paired_difference
from runner.outputs.sweep_report import sweep_group


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
    kappa = [r for r in report if r["metric"] == "fleiss_kappa"]  # the panel's reliability, a row of its own
    assert [(r["model"], r["task"]) for r in kappa] == [("m1", "open_ended"), ("m2", "open_ended")]
    for row in kappa:
        stats = results[row["model"]]["tasks"]["open_ended"]["judge_stats"]
        assert (row["value"] or None) == (None if stats["fleiss_kappa"] is None else str(stats["fleiss_kappa"]))
    report = [r for r in report if r["metric"] != "fleiss_kappa"]
    for row in report:
        expected = results[row["model"]]["tasks"][row["task"]]["metrics"][row["metric"]]
        assert float(row["value"]) == pytest.approx(expected)
        assert row["benchmark"] == "eve"
    assert len(report) == 2 * (1 + 5)
    acc = next(r for r in report if r["model"] == "m1" and r["metric"] == "accuracy")
    assert float(acc["ci_low"]) <= float(acc["value"]) <= float(acc["ci_high"])
    for row in report:  # the intervals are the runs' own (results.json `ci`), stderr kept beside them
        block = results[row["model"]]["tasks"][row["task"]]
        assert [float(row["ci_low"]), float(row["ci_high"])] == pytest.approx(block["ci"][row["metric"]])
        assert float(row["stderr"]) == pytest.approx(block["stderr"][row["metric"]])
    check_pairs(sweep_dir, single)
    md = (sweep_dir / "report" / "comparison.md").read_text()
    assert "| m1 | m2 |" in md.splitlines()[2].replace(" ", " ") or "m1 | m2" in md
    assert "## Cost" in md
    for chart in ("tasks.png", "judge_agreement.png"):
        assert (sweep_dir / "report" / chart).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    return results


def check_pairs(sweep_dir: Path, single: list[dict[str, Any]]) -> None:
    """m1 (always B) against m2 (always A) on the 4 MCQ samples; on open_ended j1 passes both: no difference."""
    with open(sweep_dir / "report" / "pairs.csv", newline="") as fh:
        pairs = {r["task"]: r for r in csv.DictReader(fh)}
    assert set(pairs) == {"mcqa_single_answer", "open_ended"}
    mcq = pairs["mcqa_single_answer"]
    m1, m2 = ([float(r["Answer"] == letter) for r in single] for letter in "BA")
    expected = paired_difference(m1, m2, n_boot=1000, seed=0)
    assert (mcq["metric"], mcq["model_a"], mcq["model_b"], mcq["test"], int(mcq["n"])) == \
        ("accuracy", "m1", "m2", "mcnemar_exact", 4)
    for key in ("diff", "ci_low", "ci_high", "p_value"):
        assert float(mcq[key]) == pytest.approx(expected[key]), key
    judged = pairs["open_ended"]  # the first metric open_ended reports: its headline, the panel vote
    assert (judged["metric"], float(judged["diff"]), float(judged["p_value"])) == ("judge_voting", 0.0, 1.0)
    md = (sweep_dir / "report" / "pairs.md").read_text()
    assert "| mcqa_single_answer | accuracy | m1 | m2 | 4 (too few) unreliable |" in md
    assert "`open_ended` m1 vs m2: n = 4 paired samples (< 10) is too few to say anything" in md
    assert (sweep_dir / "report" / "pairs.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _rows(task: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (EVE_SAMPLE / f"{task}.jsonl").read_text().splitlines()]


def test_basic_sweep_runs_each_model_in_its_own_dir_with_one_report_and_grouped_wandb_runs(fake_llm, tmp_path):
    fake_llm.default = reply
    sweep_dir = tmp_path / "sweep"
    proc = cli(sweep_args(user_configs(tmp_path, fake_llm.base_url), sweep_dir, "tracker=wandb",
                          f"model.api_key={SECRET}"), env={"WANDB_MODE": "offline"}, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = check_sweep(sweep_dir)
    check_table(proc.stdout, results)
    assert [p for p in sweep_dir.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()] == []
    assert sorted(p.name for p in sweep_dir.iterdir() if (p / "results.json").exists()) == \
        ["0_m1", "1_m2"]
    for model, res in results.items():
        assert res["totals"]["requests"] > 0 and res["run"]["git"].get("commit")
        (sync,) = Path(res["run"]["run_dir"]).glob("wandb/offline-run-*")
        run = read_offline_run(sync)
        assert run["run"].run_group == sweep_group(str(sweep_dir))
        assert f"model:{model}" in list(run["run"].tags)
        summary = run["summary"]
        assert summary["mcqa_single_answer/accuracy"] == res["tasks"]["mcqa_single_answer"]["metrics"]["accuracy"]
        low, high = res["tasks"]["mcqa_single_answer"]["ci"]["accuracy"]
        assert (summary["mcqa_single_answer/accuracy_ci_low"], summary["mcqa_single_answer/accuracy_ci_high"]) == \
            pytest.approx((low, high))
        stats = res["tasks"]["open_ended"]["judge_stats"]
        assert summary["open_ended/fleiss_kappa"] == pytest.approx(stats["fleiss_kappa"])
        assert [summary["open_ended/fleiss_kappa_ci_low"], summary["open_ended/fleiss_kappa_ci_high"]] == \
            pytest.approx(stats["fleiss_kappa_ci"])
        assert {j: summary[f"open_ended/judge_invalid_rate/{j}"] for j in ("j1", "j2")} == {"j1": 0.0, "j2": 0.0}
    (report_run,) = (sweep_dir / "report").glob("wandb/offline-run-*")
    logged = read_offline_run(report_run)
    assert {"comparison", "pairs"} <= set(logged["tables"]) and logged["run"].job_type == "report"
    # the comparison is printed when the sweep ends, as report/comparison.md has it
    assert (sweep_dir / "report" / "comparison.md").read_text().strip() in proc.stdout


def test_a_sweep_over_an_option_that_does_not_exist_names_the_close_one(fake_llm, tmp_path):
    args = sweep_args(user_configs(tmp_path, fake_llm.base_url), tmp_path / "sweep", "tracker=none")
    args[1] = "model=m1,m22"  # a typo in the second option: refused before the first job runs
    proc = cli(args)
    line = one_line_error(proc)
    assert proc.returncode == 2 and "model=m22 is not an option of model (did you mean model=m2?)" in line
    assert fake_llm.count == 0 and not (tmp_path / "sweep" / "0_m1").exists()


def check_table(stdout: str, results: dict[str, dict[str, Any]]) -> None:
    """Each job's final table: a 95% CI column beside value, and the panel's Fleiss kappa row."""
    assert stdout.count("95% CI") == 2
    for res in results.values():
        low, high = res["tasks"]["mcqa_single_answer"]["ci"]["accuracy"]
        assert f"[{low:.3f}, {high:.3f}]" in stdout
    kappa = next(line for line in stdout.splitlines() if "fleiss_kappa" in line)
    stats = results["m1"]["tasks"]["open_ended"]["judge_stats"]
    low, high = stats["fleiss_kappa_ci"]
    assert f"{stats['fleiss_kappa']:.4f}" in kappa and f"[{low:.3f}, {high:.3f}]" in kappa


def test_joblib_sweep_runs_jobs_in_parallel_processes(fake_llm, tmp_path):
    fake_llm.default = reply
    sweep_dir = tmp_path / "sweep"
    proc = cli(sweep_args(user_configs(tmp_path, fake_llm.base_url), sweep_dir, "launcher=joblib",
                          "tracker=none"), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    check_sweep(sweep_dir)


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("hydra_plugins.hydra_ray_launcher") is None,
                    reason="needs the cluster extra: bash scripts/install.sh cluster")
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
    assert "1 of 2 job(s) of the sweep failed" in first.stderr and "Traceback" not in first.stderr
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
        "tasks": {"mcqa_single_answer": {"n": 4, "metrics": {"accuracy": 0.75, "f1": None},
                                         "stderr": {"accuracy": 0.25}, "ci": {"accuracy": [0.3, 0.95], "f1": None}}}}))
    from runner.outputs.sweep_report import main

    assert main([str(tmp_path / "runs")]) == 0
    with open(tmp_path / "runs" / "report" / "comparison.csv", newline="") as handle:
        acc, f1 = list(csv.DictReader(handle))
    # the run's own interval, not a normal approximation from the standard error (kept beside it)
    assert (float(acc["ci_low"]), float(acc["ci_high"]), float(acc["stderr"])) == (0.3, 0.95, 0.25)
    assert (f1["value"], f1["ci_low"], f1["ci_high"]) == ("", "", "")
    md = (tmp_path / "runs" / "report" / "comparison.md").read_text()
    assert "| x | eve | 0.2500 |" in md and "0.750 [0.300, 0.950]" in md
    assert (tmp_path / "runs" / "report" / "pairs.csv").read_text().startswith("task,metric,model_a,model_b,n,")
    assert "No task has two or more models" in (tmp_path / "runs" / "report" / "pairs.md").read_text()


def test_final_table_has_a_ci_column_a_dash_for_no_interval_and_the_panels_kappa(capsys):
    from runner.outputs.display import Display

    Display(enabled=False).table({"benchmark": "eve", "model": "x", "tasks": {
        "open_ended": {"n": 5, "n_invalid": 0, "n_errors": 0,
                       "metrics": {"llm_as_judge_avg": 0.6, "judge_voting": None},
                       "ci": {"llm_as_judge_avg": [0.23072, 0.88238], "judge_voting": None},
                       "judge_stats": {"n": 5, "fleiss_kappa": 0.4, "fleiss_kappa_ci": [-0.1, 0.9]}},
        "old_run": {"n": 2, "metrics": {"accuracy": 0.5}}}})  # a results.json written before intervals
    lines = capsys.readouterr().out.splitlines()
    header = next(line for line in lines if "metric" in line)
    assert header.index("value") < header.index("95% CI") < header.index(" n ")
    row = next(line for line in lines if "llm_as_judge_avg" in line)
    assert "0.6000" in row and "[0.231, 0.882]" in row
    assert "—" in next(line for line in lines if "judge_voting" in line).split("judge_voting")[1]
    assert "[-0.100, 0.900]" in next(line for line in lines if "fleiss_kappa" in line)
    assert "—" in next(line for line in lines if "accuracy" in line)
