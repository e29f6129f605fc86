"""`report/pairs.csv` and `.md`: paired model comparisons of a real sweep against the fake server, checked
against `paired_difference` on per-sample scores picked by hand; the report on judge-only runs (VAKRA, win
rate) never crashes."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import EVE_SAMPLE, cli, fake_model_overrides, run_in_process

from runner.metrics.paired import paired_difference

SINGLE = [json.loads(line) for line in (EVE_SAMPLE / "mcqa_single_answer.jsonl").read_text().splitlines()]
MULTI = [json.loads(line) for line in (EVE_SAMPLE / "mcqa_multiple_answers.jsonl").read_text().splitlines()]
SHOTS = 2  # both tasks' default few-shot count: rows 0 and 1 are shots, never scored
MA_WRONG = {2}  # row indices of mcqa_single_answer each model gets wrong
MB_WRONG = {3, 4, 5, 6}
N_BOOT, SEED = 300, 7


def _wrong(letter: str) -> str:
    return "A" if letter != "A" else "B"


def answers(body: dict[str, Any]) -> str:
    """ma: right on every question but row 2 of mcqa_single_answer, and every set exactly; mb: wrong on rows
    3-6 of mcqa_single_answer, and always just "A" on mcqa_multiple_answers."""
    text = next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")
    model = body["model"]
    for i, row in enumerate(SINGLE):
        if row["Question"] in text:
            wrong = MA_WRONG if model == "ma" else MB_WRONG
            return f"Answer: {_wrong(row['Answer']) if i in wrong else row['Answer']}"
    for row in MULTI:
        if row["Question"] in text:
            return "Answer: " + (", ".join(row["Answers"]) if model == "ma" else "A")
    return "Answer: Z"


def model_configs(tmp_path: Path, url: str) -> Path:
    conf = tmp_path / "userconf"
    (conf / "model").mkdir(parents=True)
    for name in ("ma", "mb"):
        (conf / "model" / f"{name}.yaml").write_text(
            f"name: {name}\nmodel: openai/{name}\napi_base: {url}\napi_key: k\nconcurrency: 4\n"
            "max_retries: 1\nbackoff: 0.01\ntimeout: 5\nparams: {temperature: 0.0}\n")
    return conf


def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def own_interval(block: dict, metric: str) -> list[float] | None:
    """A metric's interval in results.json; the panel's Fleiss' kappa has its own in judge_stats."""
    if metric == "fleiss_kappa":
        return block["judge_stats"]["fleiss_kappa_ci"]
    return block["ci"][metric]


def _num(cell: str) -> float | None:
    return None if cell == "" else float(cell)


def test_pairs_of_a_sweep_equal_paired_difference_on_the_hand_picked_scores(fake_llm, tmp_path):
    fake_llm.default = answers
    sweep = tmp_path / "sweep"
    proc = cli(["-m", "model=ma,mb", f"hydra.searchpath=[file://{model_configs(tmp_path, fake_llm.base_url)}]",
                f"benchmark.data_dir={EVE_SAMPLE}", "benchmark.tasks=[mcqa_single_answer,mcqa_multiple_answers]",
                "benchmark.limit=null", "cache.enabled=false", "tracker=none", f"seed={SEED}", f"stats.n_boot={N_BOOT}",
                f"hydra.sweep.dir={sweep}"], timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = sweep / "report"
    with open(report / "pairs.csv", newline="") as fh:
        assert next(csv.reader(fh)) == ["task", "metric", "model_a", "model_b", "n", "diff", "ci_low", "ci_high",
                                        "p_value", "test", "ci_method", "reliable", "note"]
    rows = {r["task"]: r for r in read_csv(report / "pairs.csv")}
    assert set(rows) == {"mcqa_single_answer", "mcqa_multiple_answers"}

    scored = range(SHOTS, len(SINGLE))
    a = [0.0 if i in MA_WRONG else 1.0 for i in scored]
    b = [0.0 if i in MB_WRONG else 1.0 for i in scored]
    single = rows["mcqa_single_answer"]
    assert (single["metric"], single["model_a"], single["model_b"], single["test"]) == \
        ("accuracy", "ma", "mb", "mcnemar_exact")
    assert int(single["n"]) == len(scored) == 13
    assert float(single["diff"]) == pytest.approx(3 / 13)  # 12 right against 9
    # 5 discordant pairs, 1 won by mb: two-sided exact binomial 2 * P(X <= 1 | 5, 1/2) = 2 * 6/32.
    assert float(single["p_value"]) == pytest.approx(0.375)
    expected = paired_difference(a, b, n_boot=N_BOOT, seed=SEED)
    assert (float(single["ci_low"]), float(single["ci_high"])) == \
        pytest.approx((expected["ci_low"], expected["ci_high"]))
    # One family (issue 31): McNemar's p >= 0.05 and its matching interval holds 0.
    assert single["ci_method"] == "mcnemar_exact" and float(single["ci_low"]) <= 0 <= float(single["ci_high"])

    multi = rows["mcqa_multiple_answers"]
    ious_b = [(1 / len(r["Answers"])) if "A" in r["Answers"] else 0.0 for r in MULTI[SHOTS:]]
    expected = paired_difference([1.0] * len(ious_b), ious_b, n_boot=N_BOOT, seed=SEED)
    assert (multi["metric"], multi["test"], int(multi["n"])) == ("iou", "paired_bootstrap", len(ious_b))
    for key in ("diff", "ci_low", "ci_high", "p_value"):
        assert float(multi[key]) == pytest.approx(expected[key]), key
    assert float(multi["diff"]) == pytest.approx(1 - sum(ious_b) / len(ious_b))

    md = (report / "pairs.md").read_text()
    assert "| mcqa_single_answer | accuracy | ma | mb | 13 | +0.231 |" in md
    assert "too few" not in md  # 13 paired samples each
    assert (report / "pairs.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "![" in md and "pairs.png" in md

    # comparison.csv's intervals are the runs' own `ci`
    results = {json.loads(p.read_text())["model"]: json.loads(p.read_text()) for p in sweep.glob("*/results.json")}
    for row in read_csv(report / "comparison.csv"):
        interval = own_interval(results[row["model"]]["tasks"][row["task"]], row["metric"])
        assert [_num(row["ci_low"]), _num(row["ci_high"])] == pytest.approx(interval)


def test_two_run_dirs_are_paired_by_sample_id_over_the_samples_both_have(fake_llm, tmp_path):
    fake_llm.default = answers
    runs = tmp_path / "runs"
    for model, limit in (("ma", 11), ("mb", 6)):
        args = [a for a in fake_model_overrides(fake_llm.base_url) if not a.startswith(("model.name=", "model.model="))]
        run_in_process(args + [f"model.name={model}", f"model.model=openai/{model}", "benchmark=eve",
                               f"benchmark.data_dir={EVE_SAMPLE}", "benchmark.tasks=[mcqa_single_answer]",
                               f"benchmark.limit={limit}", "tracker=none", "progress=false", "cache.enabled=false",
                               f"hydra.run.dir={runs / model}"], runs / model)
    from runner.outputs.sweep_report import write_report

    report = write_report(runs)
    (row,) = report["pairs"]
    common = range(SHOTS, SHOTS + 6)  # mb's six samples, which ma has too
    a = [0.0 if i in MA_WRONG else 1.0 for i in common]
    b = [0.0 if i in MB_WRONG else 1.0 for i in common]
    expected = paired_difference(a, b, n_boot=1000, seed=0)  # the config's defaults
    assert (row["model_a"], row["model_b"], row["n"]) == ("ma", "mb", 6)
    assert row["diff"] == pytest.approx(3 / 6)  # ma: 5 of 6 right, mb: 2 of 6
    assert row == {"task": "mcqa_single_answer", "metric": "accuracy", "model_a": "ma", "model_b": "mb",
                   **expected}
    md = (runs / "report" / "pairs.md").read_text()
    assert "| 6 (too few) |" in md and "n = 6 paired samples (< 10) is too few" in md


def test_report_on_vakra_and_win_rate_runs_notes_what_it_cannot_pair_and_never_crashes(fake_llm, tmp_path):
    from test_vakra_run import overrides as vakra_overrides
    from test_vakra_run import scripted_judge as vakra_judge
    from test_win_rate import run as win_rate_run

    runs = tmp_path / "runs"
    fake_llm.default = vakra_judge
    for name in ("vakra_a", "vakra_b"):
        run_in_process(vakra_overrides(fake_llm.base_url, runs / name, "benchmark.domains=[weather]"), runs / name)
    win_rate_run(fake_llm, runs, ["judge1", "judge2"], name="win_rate")

    proc = cli([str(runs)], module="runner.report", timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    report = runs / "report"
    comparison = read_csv(report / "comparison.csv")
    # judge-only benchmarks have no model under test: each job is named by its run dir
    assert {r["model"] for r in comparison} == {"vakra_a", "vakra_b", "win_rate"}
    for row in comparison:  # every interval is the run's own
        res = json.loads((runs / row["model"] / "results.json").read_text())
        assert res["model"] is None
        interval = own_interval(res["tasks"][row["task"]], row["metric"])
        assert [_num(row["ci_low"]), _num(row["ci_high"])] == (interval or [None, None])

    # VAKRA's headline is the mean over paired dialogues: each paired dialogue's score is its value (a dialogue
    # without a prediction has none, issue 41), so the two runs pair on the dialogues both scored; the same
    # predictions and judge give the same scores: a difference of 0. The win-rate task ran once: nothing to pair.
    pairs = read_csv(report / "pairs.csv")
    paired = json.loads((runs / "vakra_a" / "results.json").read_text())["tasks"]["weather"]["n_paired"]
    assert [(r["task"], r["metric"], r["model_a"], r["model_b"], int(r["n"]), float(r["diff"])) for r in pairs] == [
        ("weather", "mean_dialogue_score", "vakra_a", "vakra_b", paired, 0.0)]
    md = (report / "pairs.md").read_text()
    assert "has no per-sample value" not in md and "x_vs_y" not in md


def test_report_of_runs_without_config_or_samples_notes_them(tmp_path):
    runs = tmp_path / "runs"
    for name, model, value, ci in (("a", "x", 0.75, [0.5, 0.9]), ("b", None, 0.25, [0.1, 0.4]),
                                   ("c", "z", None, None)):
        (runs / name).mkdir(parents=True)
        (runs / name / "results.json").write_text(json.dumps({
            "benchmark": "eve", "model": model, "tasks": {"mcqa_single_answer": {
                "n": 4, "metrics": {"accuracy": value}, "ci": {"accuracy": ci}}}}))
    (runs / "d").mkdir()
    (runs / "d" / "results.json").write_text("{not json")
    from runner.outputs.sweep_report import main

    assert main([str(runs)]) == 0
    rows = read_csv(runs / "report" / "comparison.csv")
    assert [(r["model"], _num(r["ci_low"]), _num(r["ci_high"])) for r in rows] == \
        [("x", 0.5, 0.9), ("b", 0.1, 0.4), ("z", None, None)]
    assert read_csv(runs / "report" / "pairs.csv") == []
    md = (runs / "report" / "pairs.md").read_text()
    assert "per-sample scores of x" in md and "per-sample scores of b" in md and "unreadable" in md
    assert "`mcqa_single_answer`: z has no scored sample (`accuracy`)" in md
