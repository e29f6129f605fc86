r"""benchmark=win_rate against the fake judge server: pairing, orders, every metric, outputs, errors.

The fixtures (tests/fixtures/win_rate/) pair model x (an EVE W&B export, `doc\.Question`) with model y
(the plain EVE layout) on five questions. Each answer carries a quality tag `[qN]`; the scripted judges:

- judge1 is fair: the higher tag wins, equal tags tie;
- judge2 is fair but says "A" (the answer shown first) whenever the tags are equal;
- judge3 is fair but prefers an answer marked "(j3-prefers)", and cannot answer the SAR question;
- judge_first (used alone in some tests) always says "A".

Fair verdicts, x vs y: q1 x, q2 y, q3 tie, q4 x, q5 x (judge3: q5 y, q3 invalid).
"""

from __future__ import annotations

import csv
import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, TESTS, compose, read_jsonl, run_in_process

from runner.benchmarks.base import Benchmark
from runner.benchmarks.win_rate.data import pair_outputs, read_outputs, unwrap_response
from runner.benchmarks.win_rate.metrics import pairwise_metrics
from runner.benchmarks.win_rate.task import a_shown_first
from runner.config import instantiate
from runner.errors import ConfigError, DataError

FIXTURES = TESTS / "fixtures" / "win_rate"
X, Y, Z = FIXTURES / "model_x.csv", FIXTURES / "model_y.csv", FIXTURES / "model_z_samples.jsonl"
TASK = "x_vs_y"
QUESTIONS = {  # sample id (model x's row index) -> question
    0: "What is the spatial resolution of Sentinel-2's visible bands?",
    2: "Which band ratio defines NDVI?",
    3: "What does SAR stand for?",
    4: "What is the revisit time of the Sentinel-2 constellation?",
    5: "Which instrument does Sentinel-2 carry?",
}
FAIR = {0: "x", 2: "y", 3: "tie", 4: "x", 5: "x"}
_PROMPT = re.compile(r"Question:\n(.*?)\n\n.*Answer A:\n(.*?)\n\nAnswer B:\n(.*?)\n\nHow to decide", re.S)


def _verdict(winner: str, why: str) -> str:
    return json.dumps({"explanation": why, "winner": winner})


def scripted_judge(body: dict[str, Any]) -> str:
    """The judges' behaviour, decided from the prompt like a real judge would."""
    text = body["messages"][-1]["content"]
    question, first, second = _PROMPT.search(text).groups()
    judge = body["model"]
    if judge == "judge_first":
        return _verdict("A", "the first answer is better")
    if judge == "judge3":
        if "SAR" in question:
            return "I would rather not say."
        for slot, answer in (("A", first), ("B", second)):
            if "(j3-prefers)" in answer:
                return f"```json\n{_verdict(slot, 'marked answer')}\n```"
    qa, qb = (int(re.search(r"\[q(\d)\]", s).group(1)) for s in (first, second))
    if qa == qb:
        return _verdict("A" if judge == "judge2" else "tie", "equally good")
    return "My verdict: " + _verdict("A" if qa > qb else "B", f"quality {max(qa, qb)} beats {min(qa, qb)}")


def panel(base_url: str, names: list[str]) -> str:
    entries = ",".join(f"{{name:{n},model:openai/{n},api_base:'{base_url}',api_key:test-key,concurrency:4,"
                       f"max_retries:1,timeout:5}}" for n in names)
    return f"judges.panel=[{entries}]"


def overrides(base_url: str, run_dir: Path, judges: list[str], *extra: str, a: Path = X, b: Path = Y) -> list[str]:
    return ["benchmark=win_rate", f"benchmark.model_a=[{{name:x,file:'{a}'}}]",
            f"benchmark.model_b=[{{name:y,file:'{b}'}}]", panel(base_url, judges), "tracker=none", "preflight=false",
            "cache.enabled=false", "progress=false", f"hydra.run.dir={run_dir}", *extra]


def run(fake_llm: Any, tmp_path: Path, judges: list[str], *extra: str, name: str = "run", **files: Path
        ) -> tuple[dict[str, Any], list[dict[str, Any]], Path]:
    fake_llm.default = scripted_judge
    run_dir = tmp_path / name
    results = run_in_process(overrides(fake_llm.base_url, run_dir, judges, *extra, **files), run_dir)
    task = next(iter(results["tasks"]))
    return results, read_jsonl(run_dir / "samples" / f"{task}.jsonl"), run_dir


def by_id(records: list[dict[str, Any]]) -> dict[Any, dict[str, Any]]:
    return {r["id"]: r for r in records}


def entry(record: dict[str, Any], judge: str) -> dict[str, Any]:
    return next(j for j in record["judgements"] if j["judge"] == judge)


def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


# --------------------------------------------------------------------------- both orders: every metric


def test_both_orders_every_metric_matches_hand_computed_values(fake_llm, tmp_path):
    results, records, _ = run(fake_llm, tmp_path, ["judge1", "judge2", "judge3"], "benchmark.orders=both")
    block = results["tasks"][TASK]
    assert (block["n"], block["n_invalid"], block["invalid_ids"], block["n_errors"]) == (5, 1, [3], 0)
    # judge1: x wins q1 q4 q5, y wins q2, tie q3 (5 valid); judge2: the same, but on q3 it picks whichever
    # answer came first, so its two orders disagree (a flip, counted as a tie); judge3: x q1 q4,
    # y q2 q5, q3 invalid (4 valid).
    expected = {
        "win_rate/judge1/x": 3 / 5, "win_rate/judge1/y": 1 / 5, "win_rate/judge1/tie": 1 / 5,
        "alpaca_win_rate/judge1/x": 3.5 / 5, "alpaca_win_rate/judge1/y": 1.5 / 5,
        "position_bias/judge1": 0.0, "flip_rate/judge1": 0.0,
        "win_rate/judge2/x": 3 / 5, "win_rate/judge2/y": 1 / 5, "win_rate/judge2/tie": 1 / 5,
        "alpaca_win_rate/judge2/x": 3.5 / 5, "alpaca_win_rate/judge2/y": 1.5 / 5,
        # x shown first: x wins q1 q3 q4 q5 (4/5); shown second: q1 q4 q5 (3/5)
        "position_bias/judge2": abs(4 / 5 - 3 / 5), "flip_rate/judge2": 1 / 5,
        "win_rate/judge3/x": 2 / 4, "win_rate/judge3/y": 2 / 4, "win_rate/judge3/tie": 0.0,
        "alpaca_win_rate/judge3/x": 2 / 4, "alpaca_win_rate/judge3/y": 2 / 4,
        "position_bias/judge3": 0.0, "flip_rate/judge3": 0.0,
        # pooled over the 14 valid judgements: x wins 8, y wins 4, 2 ties
        "aggregate/x_win_rate": 8 / 14, "aggregate/y_win_rate": 4 / 14,
        "aggregate/x_alpaca_win_rate": 9 / 14, "aggregate/y_alpaca_win_rate": 5 / 14,
        "aggregate/avg_x_win_rate": (3 / 5 + 3 / 5 + 2 / 4) / 3,
        "aggregate/avg_y_win_rate": (1 / 5 + 1 / 5 + 2 / 4) / 3,
        "aggregate/avg_x_alpaca_win_rate": (3.5 / 5 + 3.5 / 5 + 2 / 4) / 3,
        "aggregate/avg_y_alpaca_win_rate": (1.5 / 5 + 1.5 / 5 + 2 / 4) / 3,
        # all three valid on q1 q2 q4 q5; they agree on all but q5 (judge3 picks y)
        "judge_agreement": 3 / 4,
    }
    assert block["metrics"] == pytest.approx(expected)
    assert set(block["metrics"]) == set(expected)
    assert all(0.0 <= v <= 1.0 for v in block["metrics"].values())
    assert results["judges"] == ["judge1", "judge2", "judge3"] and results["model"] is None

    recs = by_id(records)
    assert sorted(recs) == sorted(QUESTIONS)
    for sid, question in QUESTIONS.items():
        assert recs[sid]["prompt"] == question
        for judge in ("judge1", "judge2"):
            calls = entry(recs[sid], judge)["calls"]
            assert [c["shown_first"] for c in calls] == ["x", "y"], "both orders, x first then y first"
    q3 = entry(recs[3], "judge2")
    assert [c["slot_verdict"] for c in q3["calls"]] == ["A", "A"]
    assert [c["verdict"] for c in q3["calls"]] == ["x", "y"]
    assert (q3["status"], q3["verdict"]) == ("ok", "tie"), "disagreeing orders count as a tie"
    assert entry(recs[2], "judge1")["verdict"] == "y"
    # 5 questions × 3 judges × 2 orders
    assert fake_llm.count == 30


def test_a_judge_that_always_picks_the_first_answer_flips_every_time_in_both_orders(fake_llm, tmp_path):
    results, records, _ = run(fake_llm, tmp_path, ["judge_first"], "benchmark.orders=both")
    m = results["tasks"][TASK]["metrics"]
    assert m["flip_rate/judge_first"] == 1.0
    assert m["position_bias/judge_first"] == 1.0
    assert m["win_rate/judge_first/tie"] == 1.0 and m["win_rate/judge_first/x"] == 0.0
    assert m["alpaca_win_rate/judge_first/x"] == 0.5 == m["alpaca_win_rate/judge_first/y"]
    assert m["judge_agreement"] == 1.0  # one judge always agrees with itself


# --------------------------------------------------------------------------- one order: seeded and per judge


def test_one_order_is_drawn_per_judge_from_seed_and_question_and_is_the_same_on_every_rerun(fake_llm, tmp_path):
    judges = ["judge1", "judge_first"]
    results, records, _ = run(fake_llm, tmp_path, judges, "seed=7")
    again, records_again, _ = run(fake_llm, tmp_path, judges, "seed=7", name="again")

    def orders(recs: list[dict[str, Any]]) -> dict[tuple[Any, str], str]:
        return {(r["id"], j["judge"]): j["shown_first"] for r in recs for j in r["judgements"]}

    seen = orders(records)
    assert seen == orders(records_again)
    assert again["tasks"] == results["tasks"]
    assert seen == {(sid, j): "x" if a_shown_first(7, j, q) else "y" for sid, q in QUESTIONS.items() for j in judges}
    # the draw differs between judges, and both positions occur: a shared position column would be wrong here
    assert any(seen[(sid, "judge1")] != seen[(sid, "judge_first")] for sid in QUESTIONS)
    assert {seen[(sid, "judge_first")] for sid in QUESTIONS} == {"x", "y"}
    assert all(len(entry(r, j)["calls"]) == 1 for r in records for j in judges)
    assert fake_llm.count == 2 * 5 * 2

    m = results["tasks"][TASK]["metrics"]
    assert "flip_rate/judge1" not in m
    # the fair judge's verdicts do not depend on the order
    assert (m["win_rate/judge1/x"], m["win_rate/judge1/y"], m["win_rate/judge1/tie"]) == pytest.approx((0.6, 0.2, 0.2))
    # judge_first gives the win to whoever it saw first: x won exactly where x was shown first
    x_first = sum(seen[(sid, "judge_first")] == "x" for sid in QUESTIONS)
    assert m["win_rate/judge_first/x"] == pytest.approx(x_first / 5)
    assert m["win_rate/judge_first/tie"] == 0.0
    assert m["position_bias/judge_first"] == 1.0, "computed from judge_first's own positions"
    # judge1's bias from its own positions, by hand
    first = [FAIR[s] == "x" for s in QUESTIONS if seen[(s, "judge1")] == "x"]
    second = [FAIR[s] == "x" for s in QUESTIONS if seen[(s, "judge1")] == "y"]
    assert m["position_bias/judge1"] == pytest.approx(abs(sum(first) / len(first) - sum(second) / len(second)))
    agree = [FAIR[s] == ("x" if seen[(s, "judge_first")] == "x" else "y") for s in QUESTIONS]
    assert m["judge_agreement"] == pytest.approx(sum(agree) / 5)


def test_order_draw_is_stable_across_processes_and_follows_the_seed():
    # Python's hash() is salted per process; the draw must not use it.
    code = ("from runner.benchmarks.win_rate.task import a_shown_first; "
            "print([a_shown_first(3, 'j', f'question {i}') for i in range(40)])")
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT,
                           env={"PYTHONHASHSEED": seed, "PATH": ""}).stdout for seed in ("1", "2")}
    assert len(outs) == 1
    draws = [a_shown_first(3, "j", f"question {i}") for i in range(40)]
    assert str(draws) == outs.pop().strip()
    assert 10 < sum(draws) < 30, "about half the draws show model A first"
    assert draws != [a_shown_first(4, "j", f"question {i}") for i in range(40)]
    assert a_shown_first(3, "j", "a  question\n") == a_shown_first(3, "j", "a question")


# --------------------------------------------------------------------------- invalid and failed judgements


def test_invalid_judge_replies_are_listed_and_left_out_of_denominators_never_ties(fake_llm, tmp_path):
    results, records, run_dir = run(fake_llm, tmp_path, ["judge3"])
    block = results["tasks"][TASK]
    assert (block["n_invalid"], block["invalid_ids"]) == (1, [3])
    m = block["metrics"]
    assert (m["win_rate/judge3/x"], m["win_rate/judge3/y"], m["win_rate/judge3/tie"]) == (0.5, 0.5, 0.0)
    q3 = by_id(records)[3]
    assert q3["status"] == "invalid"
    j = entry(q3, "judge3")
    assert (j["status"], j["verdict"], j["raw"]) == ("invalid", None, "I would rather not say.")
    # No credit from a reply that did not parse: null (missing, explicitly), never 0, never an absent key.
    assert q3["scores"]["alpaca_win_rate/judge3/x"] is None and q3["scores"]["aggregate/x_alpaca_win_rate"] is None
    summary = read_csv(run_dir / "win_rate" / f"summary_{TASK}.csv")
    assert (summary[0]["valid"], summary[0]["invalid"], summary[0]["ties"]) == ("4", "1", "0")


def test_a_judge_call_that_keeps_failing_makes_the_sample_an_error_asked_again_on_resume(fake_llm, tmp_path):
    fake_llm.faults = ["500", "500", "500"]
    fake_llm.fault_only_matching = "NDVI"
    results, records, run_dir = run(fake_llm, tmp_path, ["judge1"])
    block = results["tasks"][TASK]
    # No verdict is no judgement: the sample is an error, not an invalid reply.
    assert (block["n_invalid"], block["invalid_ids"], block["n_errors"], block["error_ids"]) == (0, [], 1, [2])
    q2 = by_id(records)[2]
    assert q2["status"] == "error" and q2["judgements"] == [] and "500" in q2["error"]
    # q2 (y's only win) is out: x wins 3 of the 4 valid judgements, one tie
    assert block["metrics"]["win_rate/judge1/x"] == pytest.approx(3 / 4)
    assert block["metrics"]["win_rate/judge1/y"] == 0.0
    # The endpoint recovers: a re-run into the same run dir asks only for q2.
    fake_llm.reset()
    fake_llm.faults = []
    again = run_in_process(overrides(fake_llm.base_url, run_dir, ["judge1"]), run_dir)["tasks"][TASK]
    assert fake_llm.count == 1 and "NDVI" in fake_llm.requests[0]["messages"][-1]["content"]
    assert (again["n_errors"], again["n_invalid"]) == (0, 0)
    assert again["metrics"]["win_rate/judge1/y"] == pytest.approx(1 / 5)


# --------------------------------------------------------------------------- pairing and inputs


def test_pairing_reports_dropped_rows_and_duplicate_questions(fake_llm, tmp_path, caplog):
    with caplog.at_level(logging.INFO, logger="runner"):
        results, records, run_dir = run(fake_llm, tmp_path, ["judge1"])
    pairs = results["summary"]["pairs"][TASK]
    assert pairs == {"model_a": "x", "model_b": "y", "rows_a": 6, "rows_b": 8, "paired": 5, "unmatched_a": 1,
                     "unmatched_b": 1, "duplicates_a": 0, "duplicates_b": 1, "unusable_a": 0, "unusable_b": 1,
                     "reference_mismatch": 0}
    line = next(r.getMessage() for r in caplog.records if "paired 5 questions" in r.getMessage())
    assert "dropped 1 of x's 6 rows" in line and "dropped 3 of y's 8 rows" in line and "1 repeated questions" in line
    dropped = read_csv(run_dir / "win_rate" / f"dropped_{TASK}.csv")
    reasons = sorted((d["model"], d["reason"].split(" (")[0]) for d in dropped)
    assert reasons == [("x", "question not in B's file"), ("y", "duplicate question"), ("y", "no question"),
                       ("y", "question not in A's file")]
    assert next(d for d in dropped if d["model"] == "x")["question"] == "What does a LiDAR instrument measure?"
    # a duplicate keeps its first row: y's first SAR answer ties with x's (the second would lose)
    assert entry(by_id(records)[3], "judge1")["verdict"] == "tie"


def test_a_samples_file_of_an_earlier_run_pairs_with_a_csv(fake_llm, tmp_path):
    results, records, _ = run(fake_llm, tmp_path, ["judge1"], b=Z)
    pairs = results["summary"]["pairs"][TASK]
    # z: q1, q2 (errored, then resumed: the last line counts), q7, q4 (an error: no response)
    assert (pairs["rows_b"], pairs["paired"], pairs["unusable_b"], pairs["unmatched_b"]) == (4, 2, 1, 1)
    assert sorted(r["id"] for r in records) == [0, 2]
    m = results["tasks"][TASK]["metrics"]
    assert (m["win_rate/judge1/x"], m["win_rate/judge1/y"]) == (0.5, 0.5)  # q1: x 2 > 1; q2: z 2 > 1


def test_readers_accept_eve_exports_and_samples_files():
    x = read_outputs(X)
    assert [r.id for r in x.rows] == [0, 1, 2, 3, 4, 5]
    assert x.rows[0].text == "[q2] The visible bands have a 10 m resolution."  # ['...'] unwrapped
    assert x.rows[3].text == "[q2] Synthetic Aperture Radar."
    z = read_outputs(Z)
    assert {r.id: r.question for r in z.rows} == {0: QUESTIONS[0], 1: QUESTIONS[2], 2: "What is surface albedo?"}
    assert z.unusable == [(3, "no response (the earlier run recorded an error)")]
    assert unwrap_response('["first", "second"]') == "first"
    assert unwrap_response("[1, 2]") == "[1, 2]"
    assert unwrap_response("[see above]") == "[see above]"
    pairing = pair_outputs(x, read_outputs(Y))
    assert [p.id_a for p in pairing.pairs] == [0, 2, 3, 4, 5]
    assert [p.id_b for p in pairing.pairs] == [2, 6, 1, 7, 0]


def test_a_missing_or_unreadable_file_stops_the_run_with_one_clear_error(tmp_path):
    with pytest.raises(DataError, match="does not exist"):
        read_outputs(tmp_path / "nope.csv")
    bad = tmp_path / "bad.csv"
    bad.write_text("prompt,answer\nq,a\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"no question column .*Question.*columns present: prompt, answer"):
        read_outputs(bad)
    with pytest.raises(DataError, match="expected an EVE-style .csv"):
        (tmp_path / "x.txt").write_text("x", encoding="utf-8")
        read_outputs(tmp_path / "x.txt")


# --------------------------------------------------------------------------- outputs


def test_outputs_results_summary_metrics_csvs_and_chart(fake_llm, tmp_path):
    results, records, run_dir = run(fake_llm, tmp_path, ["judge1", "judge3"], "benchmark.orders=both")
    out = run_dir / "win_rate"
    chart = out / f"comparison_{TASK}.png"
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and chart.stat().st_size > 10_000
    rows = read_csv(out / f"results_{TASK}.csv")
    assert [r["id"] for r in rows] == [str(r["id"]) for r in records]
    q3 = next(r for r in rows if r["id"] == "3")
    assert (q3["judge_judge1_decision"], q3["judge_judge3_decision"]) == ("tie", "invalid")
    assert (q3["judge_judge1_decision_x_first"], q3["judge_judge1_decision_y_first"]) == ("tie", "tie")
    assert q3["question"] == QUESTIONS[3] and q3["answer_x"] == "[q2] Synthetic Aperture Radar."
    summary = {r["judge"]: r for r in read_csv(out / f"summary_{TASK}.csv")}
    assert float(summary["judge1"]["x_win_rate"]) == pytest.approx(0.6)
    assert (summary["judge1"]["x_shown_first"], summary["judge1"]["x_shown_second"]) == ("5", "5")
    assert float(summary["judge3"]["flip_rate"]) == 0.0
    long = read_csv(out / f"metrics_{TASK}.csv")
    assert set(long[0]) == {"model_name", "task", "subtask", "opponent", "metric", "value"}
    value = {(r["model_name"], r["metric"]): float(r["value"]) for r in long}
    m = results["tasks"][TASK]["metrics"]
    assert value[("x", "win_rate")] == pytest.approx(m["aggregate/x_win_rate"])
    assert value[("y", "win_rate_difference_vs_opponent")] == pytest.approx(
        m["aggregate/y_win_rate"] - m["aggregate/x_win_rate"])
    assert value[("x", "win_rate_difference_vs_opponent")] == -value[("y", "win_rate_difference_vs_opponent")]
    assert value[("y", "win_rate_judge_judge3")] == pytest.approx(0.5)


def test_records_show_each_judges_order_verdict_and_explanation_in_the_samples_table(fake_llm, tmp_path):
    from runner.outputs.tracking.wandb_tracker import table_columns_and_rows

    _, records, _ = run(fake_llm, tmp_path, ["judge1"])
    rec = by_id(records)[0]
    j = entry(rec, "judge1")
    assert {"judge", "status", "verdict", "explanation", "raw", "shown_first", "calls"} <= set(j)
    assert (j["verdict"], j["explanation"]) == ("x", "quality 2 beats 1")
    assert rec["extra"]["response_a"].startswith("[q2]") and rec["reference"].startswith("10 m")
    columns, rows = table_columns_and_rows(records)
    assert {"judge1/verdict", "judge1/explanation"} <= set(columns)
    row = dict(zip(columns, rows[0], strict=True))
    assert (row["judge1/verdict"], row["judge1/explanation"]) == ("x", "quality 2 beats 1")


def test_judges_get_the_reference_only_when_asked_and_a_json_schema_for_the_winner(fake_llm, tmp_path):
    run(fake_llm, tmp_path, ["judge1"], name="plain")
    assert not any("Reference answer" in b["messages"][-1]["content"] for b in fake_llm.requests)
    schema = fake_llm.requests[0]["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["winner"]["enum"] == ["A", "B", "tie"]
    fake_llm.reset()
    results, records, run_dir = run(fake_llm, tmp_path, ["judge1"], "benchmark.with_reference=true")
    prompts = [b["messages"][-1]["content"] for b in fake_llm.requests]
    assert all("Reference answer" in p for p in prompts)
    assert any("NDVI = (NIR - Red) / (NIR + Red)." in p for p in prompts)
    assert results["tasks"][TASK]["metrics"]["win_rate/judge1/x"] == pytest.approx(0.6)

    cfg = compose(overrides(fake_llm.base_url, run_dir, ["judge1"]))
    benchmark: Benchmark = instantiate(cfg.benchmark, "benchmark")
    (task,) = benchmark.build_tasks()
    (reporter,) = benchmark.reporters
    extras = reporter.report([task], {TASK: records}, {TASK: task.aggregate(records)}, run_dir)
    assert extras is not None  # what a tracker's log_extra takes
    assert extras["images"] == {f"charts/{TASK}": run_dir / "win_rate" / f"comparison_{TASK}.png"}
    assert extras["images"][f"charts/{TASK}"].is_file()
    columns, rows = extras["tables"][f"rationales/{TASK}"]
    assert {"judge_judge1_decision", "judge_judge1_shown_first", "judge_judge1_rationale"} <= set(columns)
    assert len(rows) == 5


def test_every_metric_is_recomputed_from_the_samples_and_a_rerun_asks_nothing(fake_llm, tmp_path):
    from runner.run.rescore import rescore

    results, _, run_dir = run(fake_llm, tmp_path, ["judge1", "judge2"], "benchmark.orders=both")
    assert rescore(run_dir) == results["tasks"]
    fake_llm.reset()
    again = run_in_process(overrides(fake_llm.base_url, run_dir, ["judge1", "judge2"], "benchmark.orders=both"),
                           run_dir)
    assert fake_llm.count == 0
    assert again["tasks"] == results["tasks"]


def test_every_a_b_pair_is_its_own_task_and_limit_applies_per_pair(fake_llm, tmp_path):
    fake_llm.default = scripted_judge
    run_dir = tmp_path / "run"
    args = overrides(fake_llm.base_url, run_dir, ["judge1"], "benchmark.limit=2")
    args[1] = f"benchmark.model_a=[{{name:x,file:'{X}'}},{{name:z,file:'{Z}'}}]"
    results = run_in_process(args, run_dir)
    assert list(results["tasks"]) == ["x_vs_y", "z_vs_y"]
    assert results["tasks"]["x_vs_y"]["n"] == 2 and results["tasks"]["z_vs_y"]["n"] == 2
    assert "aggregate/z_win_rate" in results["tasks"]["z_vs_y"]["metrics"]
    assert results["summary"]["headline"] == {
        t: results["tasks"][t]["metrics"][f"aggregate/{t.split('_vs_')[0]}_alpaca_win_rate"] for t in results["tasks"]}


# --------------------------------------------------------------------------- metrics and config, no server


def _record(rid: int, *judgements: tuple[str, str, str | None, list[tuple[str, str | None]]]) -> dict[str, Any]:
    return {"id": rid, "status": "ok" if all(j[1] == "ok" for j in judgements) else "invalid",
            "judgements": [{"judge": name, "status": status, "verdict": verdict,
                            "calls": [{"shown_first": f, "verdict": v} for f, v in calls]}
                           for name, status, verdict, calls in judgements]}


def test_pairwise_metrics_by_hand():
    records = [
        _record(0, ("j1", "ok", "a", [("a", "a")]), ("j2", "ok", "a", [("b", "a")])),
        _record(1, ("j1", "ok", "tie", [("b", "tie")]), ("j2", "invalid", None, [("a", None)])),
        _record(2, ("j1", "ok", "b", [("a", "b")]), ("j2", "ok", "b", [("a", "b")])),
        _record(3, ("j1", "invalid", None, [("b", None)]), ("j2", "ok", "a", [("a", "a")])),
    ]
    m = pairwise_metrics(records, ["j1", "j2"], "a", "b")
    assert m == pytest.approx({
        "win_rate/j1/a": 1 / 3, "win_rate/j1/b": 1 / 3, "win_rate/j1/tie": 1 / 3,
        "alpaca_win_rate/j1/a": 0.5, "alpaca_win_rate/j1/b": 0.5,
        "position_bias/j1": abs(1 / 2 - 0 / 1),  # a first: won 1 of 2; a second: 0 of 1 (a tie)
        "win_rate/j2/a": 2 / 3, "win_rate/j2/b": 1 / 3, "win_rate/j2/tie": 0.0,
        "alpaca_win_rate/j2/a": 2 / 3, "alpaca_win_rate/j2/b": 1 / 3,
        "position_bias/j2": abs(1 / 2 - 1 / 1),  # a first: 1 of 2; a second: 1 of 1
        "aggregate/a_win_rate": 3 / 6, "aggregate/b_win_rate": 2 / 6,
        "aggregate/a_alpaca_win_rate": 3.5 / 6, "aggregate/b_alpaca_win_rate": 2.5 / 6,
        "aggregate/avg_a_win_rate": (1 / 3 + 2 / 3) / 2, "aggregate/avg_b_win_rate": (1 / 3 + 1 / 3) / 2,
        "aggregate/avg_a_alpaca_win_rate": (0.5 + 2 / 3) / 2, "aggregate/avg_b_alpaca_win_rate": (0.5 + 1 / 3) / 2,
        "judge_agreement": 2 / 2,  # both valid on 0 and 2 only, agreeing on both
    })
    # Figures over nothing are null, never 0: no records at all, or a judge with no valid judgement.
    assert pairwise_metrics([], [], "a", "b")["aggregate/a_win_rate"] is None
    assert pairwise_metrics([], [], "a", "b")["judge_agreement"] is None
    only_invalid = pairwise_metrics([_record(0, ("j1", "invalid", None, [("a", None)]))], ["j1"], "a", "b")
    assert set(only_invalid.values()) == {None}


@pytest.mark.parametrize(("override", "message"), [
    ("benchmark.orders=bothh", "did you mean 'both'"),
    ("benchmark.model_a=[{name:'my model',file:f.csv}]", "cannot name a model"),
    ("benchmark.model_a=[{name:tie,file:f.csv}]", "not 'tie'"),
    ("benchmark.model_a=[{name:x}]", "needs a name and a file"),
    ("benchmark.model_a=[{name:y,file:other.csv}]", "given two files"),
    ("benchmark.tasks=[x_vs_q]", "did you mean 'x_vs_y'"),
])
def test_bad_win_rate_config_is_one_clear_error(override, message):
    cfg = compose(["benchmark=win_rate", f"benchmark.model_a=[{{name:x,file:'{X}'}}]",
                   f"benchmark.model_b=[{{name:y,file:'{Y}'}}]", override])
    with pytest.raises(ConfigError, match=message):
        instantiate(cfg.benchmark, "benchmark").build_tasks()


def test_win_rate_without_models_fails_before_any_request(fake_llm, tmp_path):
    args = ["benchmark=win_rate", panel(fake_llm.base_url, ["judge1"]), "tracker=none", "progress=false",
            f"hydra.run.dir={tmp_path / 'run'}"]
    with pytest.raises(ConfigError, match=r"benchmark.model_a=\[\{name: X"):
        run_in_process(args, tmp_path / "run")
    assert fake_llm.count == 0


def test_cli_compares_two_files_with_the_contract_override_syntax(fake_llm, tmp_path):
    fake_llm.default = scripted_judge
    run_dir = tmp_path / "cli"
    args = overrides(fake_llm.base_url, run_dir, ["judge1", "judge_first"], "seed=7")
    proc = subprocess.run([sys.executable, "-m", "runner", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONHASHSEED": "123"})
    assert proc.returncode == 0, proc.stderr
    results = json.loads((run_dir / "results.json").read_text())
    assert results["tasks"][TASK]["n"] == 5
    assert (run_dir / "win_rate" / f"comparison_{TASK}.png").is_file()
    seen = {(r["id"], j["judge"]): j["shown_first"] for r in read_jsonl(run_dir / "samples" / f"{TASK}.jsonl")
            for j in r["judgements"]}
    assert seen == {(sid, j): "x" if a_shown_first(7, j, q) else "y"
                    for sid, q in QUESTIONS.items() for j in ("judge1", "judge_first")}


def test_wandb_run_gets_the_chart_and_the_rationale_table(fake_llm, tmp_path, monkeypatch):
    from test_wandb_tracker import read_offline_run

    monkeypatch.setenv("WANDB_MODE", "offline")
    _, _, run_dir = run(fake_llm, tmp_path, ["judge1"], "tracker=wandb")
    (sync,) = run_dir.glob("wandb/offline-run-*")
    logged = read_offline_run(sync)
    assert f"rationales/{TASK}" in logged["tables"]
    assert any(f"charts/{TASK}" in key for row in logged["history"] for key in row)
    assert logged["run"].display_name == f"win_rate-{TASK}"
