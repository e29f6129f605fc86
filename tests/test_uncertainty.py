"""Every metric of every benchmark comes with its interval, every panel of two or more judges with its
reliability; `runner.rescore` reproduces both from the samples files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import test_mugen_runs as mugen
import test_pipeline as eve
import test_vakra_run as vakra
import test_win_rate as win_rate
from conftest import run_in_process
from scipy.stats import binomtest

from runner.run.rescore import rescore

JUDGE_STATS_KEYS = {"n", "fleiss_kappa", "fleiss_kappa_ci", "cohen_kappa", "cohen_kappa_ci", "invalid_rate", "reliable"}


def check_every_metric_has_an_interval(results: dict[str, Any]) -> None:
    for task, block in results["tasks"].items():
        assert set(block["ci"]) == set(block["metrics"]), task
        for metric, value in block["metrics"].items():
            interval = block["ci"][metric]
            if value is None or metric.startswith("num_"):  # a count has no interval (issue 31)
                assert interval is None, (task, metric)
                continue
            if value is None:
                assert interval is None, (task, metric)
                continue
            assert interval is not None, (task, metric)
            lo, hi = interval
            assert lo <= value + 1e-9 and value - 1e-9 <= hi, (task, metric, value, interval)


def check_rescore_reproduces(results: dict[str, Any], run_dir: Path) -> None:
    again = rescore(run_dir)
    for task, block in results["tasks"].items():
        assert again[task]["ci"] == block["ci"], task
        assert again[task].get("judge_stats") == block.get("judge_stats"), task


def test_eve_intervals_are_wilson_or_bootstrap_and_two_judges_have_kappas(fake_llm, tmp_path):
    fake_llm.default = eve.scripted_reply
    run_dir = tmp_path / "run"
    results = run_in_process(eve.eve_overrides(fake_llm.base_url, run_dir, None, judges=2), run_dir)
    check_every_metric_has_an_interval(results)
    single = results["tasks"]["mcqa_single_answer"]
    k = round(single["metrics"]["accuracy"] * single["n"])
    wilson = binomtest(k, single["n"]).proportion_ci(method="wilson")
    assert single["ci"]["accuracy"] == pytest.approx([wilson.low, wilson.high])
    for task in ("open_ended", "open_ended_w_context", "refusal"):
        stats = results["tasks"][task]["judge_stats"]
        assert set(stats) == JUDGE_STATS_KEYS and set(stats["cohen_kappa"]) == {"judge1|judge2"}
        assert stats["invalid_rate"] == {"judge1": 0.0, "judge2": 0.0}
    assert "judge_stats" not in single  # no judge graded it
    check_rescore_reproduces(results, run_dir)


def test_mugen_vakra_and_win_rate_intervals(fake_llm, tmp_path):
    fake_llm.default = mugen.rubric_judge
    run_dir = tmp_path / "mugen"
    results = run_in_process(mugen.overrides(fake_llm, run_dir, f"benchmark.prediction_dir={mugen.PREDICTIONS}"),
                             run_dir)
    check_every_metric_has_an_interval(results)
    check_rescore_reproduces(results, run_dir)

    fake_llm.default = vakra.scripted_judge
    run_dir = tmp_path / "vakra"
    results = run_in_process(vakra.overrides(fake_llm.base_url, run_dir), run_dir)
    check_every_metric_has_an_interval(results)
    assert all(block["ci"]["num_samples"] is None for block in results["tasks"].values())

    results, _, run_dir = win_rate.run(fake_llm, tmp_path, ["j1", "j2"])
    check_every_metric_has_an_interval(results)
    stats = next(iter(results["tasks"].values()))["judge_stats"]
    assert set(stats) == JUDGE_STATS_KEYS
    check_rescore_reproduces(results, run_dir)


def test_intervals_follow_the_seed_and_n_boot(fake_llm, tmp_path):
    fake_llm.default = eve.scripted_reply
    base = ["benchmark.tasks=[mcqa_multiple_answers]"]
    runs = {}
    for name, extra in (("a", []), ("b", []), ("c", ["seed=7"])):
        run_dir = tmp_path / name
        runs[name] = run_in_process(eve.eve_overrides(fake_llm.base_url, run_dir, None) + base + extra, run_dir)
    ci = {k: v["tasks"]["mcqa_multiple_answers"]["ci"]["iou"] for k, v in runs.items()}
    assert ci["a"] == ci["b"]  # bootstrap of a non-binary mean: the same seed, the same interval
    assert json.dumps(ci["a"]) != json.dumps(ci["c"])
