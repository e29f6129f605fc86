"""Metric arithmetic, checked against numbers worked out by hand (the arithmetic is in the comments)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from conftest import compose

from runner.config import instantiate
from runner.metrics.core import binary_classification, iou, judge_panel_metrics, majority_vote, mean, stderr, unanimous
from runner.metrics.results import task_result
from runner.tasks.base import BaseTask
from runner.types import Judgement, SampleRecord

approx = pytest.approx


def eve_task(name: str) -> BaseTask:
    """An EVE task as its YAML builds it (conf/task/eve/<name>.yaml)."""
    benchmark = instantiate(compose(["benchmark=eve", f"benchmark.tasks=[{name}]"]).benchmark, "benchmark")
    task: BaseTask = benchmark.build_tasks()[0]
    return task

# --------------------------------------------------------------------------- mean / stderr


def test_mean_of_values() -> None:
    # (1 + 0 + 1 + 1) / 4 = 0.75
    assert mean([1.0, 0.0, 1.0, 1.0]) == approx(0.75)


def test_mean_accepts_a_generator() -> None:
    # (2 + 4 + 9) / 3 = 5
    assert mean(x for x in (2.0, 4.0, 9.0)) == approx(5.0)


def test_mean_of_nothing_is_zero() -> None:
    assert mean([]) == 0.0


def test_stderr_is_sample_sd_over_sqrt_n() -> None:
    # values 1,0,1,1: mean 0.75; squared deviations 0.0625+0.5625+0.0625+0.0625 = 0.75;
    # sample variance 0.75/3 = 0.25; stderr = sqrt(0.25/4) = sqrt(0.0625) = 0.25
    assert stderr([1.0, 0.0, 1.0, 1.0]) == approx(0.25)


def test_stderr_of_a_second_hand_example() -> None:
    # 2,4,4,4,5,5,7,9: mean 5; squared deviations 9+1+1+1+0+0+4+16 = 32; variance 32/7;
    # stderr = sqrt(32/7/8) = sqrt(4/7) = 0.755928946...
    assert stderr([2, 4, 4, 4, 5, 5, 7, 9]) == approx((4 / 7) ** 0.5)


def test_stderr_of_constant_values_is_zero() -> None:
    assert stderr([3.0, 3.0, 3.0]) == 0.0


@pytest.mark.parametrize("values", [[], [0.7]], ids=["empty", "single"])
def test_stderr_below_two_values_is_undefined(values: list[float]) -> None:
    # One value says nothing about the spread (issue 44, point 4): null, as statistics.stdev refuses it.
    assert stderr(values) is None


# --------------------------------------------------------------------------- iou


@pytest.mark.parametrize(("predicted", "gold", "expected"), [
    (["A", "B"], ["A", "B"], 1.0),              # 2/2
    (["B", "A"], ["A", "B"], 1.0),              # order does not matter: 2/2
    (["A", "B"], ["B", "C"], 1 / 3),            # ∩ {B} = 1, ∪ {A,B,C} = 3
    (["A"], ["A", "C"], 0.5),                   # ∩ {A} = 1, ∪ {A,C} = 2
    (["A", "B", "D"], ["A", "B", "C"], 0.5),    # ∩ {A,B} = 2, ∪ {A,B,C,D} = 4
    (["A", "A", "B"], ["A", "B"], 1.0),         # duplicates collapse: {A,B} vs {A,B}
    (["D"], ["A", "B"], 0.0),                   # disjoint: 0/3
    ([], ["A"], 0.0),                           # nothing predicted: 0/1
    ([], [], 0.0),                              # empty union: defined as 0
], ids=["exact", "reordered", "one_of_three", "half", "two_of_four", "duplicates", "disjoint",
        "nothing_predicted", "both_empty"])
def test_iou_is_jaccard_overlap(predicted: list[str], gold: list[str], expected: float) -> None:
    assert iou(predicted, gold) == approx(expected)


# --------------------------------------------------------------------------- binary classification


def test_binary_classification_counts_none_as_wrong_and_as_false_negative() -> None:
    # (gold, pred): TP, TP, FN, FN (None, gold positive), FP, TN, wrong-but-not-FP (None, gold negative)
    pairs = [(True, True), (True, True), (True, False), (True, None), (False, True), (False, False),
             (False, None)]
    # correct = 2 TP + 1 TN = 3 of 7; tp=2 fp=1 fn=2
    # precision 2/3, recall 2/4 = 1/2, f1 = 2*(2/3)*(1/2) / (2/3+1/2) = (2/3)/(7/6) = 4/7
    assert binary_classification(pairs) == approx(
        {"accuracy": 3 / 7, "precision": 2 / 3, "recall": 1 / 2, "f1": 4 / 7})


def test_none_prediction_on_negative_gold_is_not_a_false_positive() -> None:
    # (False, None): wrong -> accuracy 0/1; tp=fp=0 and fn=0 -> precision and recall have zero denominators
    assert binary_classification([(False, None)]) == {"accuracy": 0.0, "precision": 0.0, "recall": 0.0,
                                                      "f1": 0.0}


def test_none_predictions_on_positive_gold_lower_recall() -> None:
    # (T,T) TP, (T,None) FN, (T,None) FN: accuracy 1/3, precision 1/1, recall 1/3,
    # f1 = 2*1*(1/3) / (1+1/3) = (2/3)/(4/3) = 1/2
    assert binary_classification([(True, True), (True, None), (True, None)]) == approx(
        {"accuracy": 1 / 3, "precision": 1.0, "recall": 1 / 3, "f1": 0.5})


def test_binary_classification_zero_denominators_give_zero_not_error() -> None:
    # no positive gold and no positive prediction: tp=fp=fn=0; accuracy 2/2
    assert binary_classification([(False, False), (False, False)]) == {
        "accuracy": 1.0, "precision": 0.0, "recall": 0.0, "f1": 0.0}


def test_binary_classification_no_positive_predictions() -> None:
    # (T,F) FN, (F,F) TN: accuracy 1/2; precision 0/0 -> 0; recall 0/1 = 0; f1 0
    assert binary_classification([(True, False), (False, False)]) == {
        "accuracy": 0.5, "precision": 0.0, "recall": 0.0, "f1": 0.0}


def test_binary_classification_of_nothing_is_all_zero() -> None:
    assert binary_classification([]) == {"accuracy": 0.0, "precision": 0.0, "recall": 0.0, "f1": 0.0}


# --------------------------------------------------------------------------- majority vote / unanimity


@pytest.mark.parametrize(("scores", "expected"), [
    ([1.0], 1.0),                        # 1 judge: threshold ⌊1/2⌋+1 = 1
    ([0.0], 0.0),
    ([1.0, 1.0], 1.0),                   # 2 judges: threshold 2
    ([1.0, 0.0], 0.0),                   # EVE: 1-vs-0 with two judges fails
    ([0.0, 1.0], 0.0),                   # ... whichever judge passes
    ([0.0, 0.0], 0.0),
    ([1.0, 1.0, 0.0], 1.0),              # 3 judges: threshold 2
    ([0.0, 1.0, 1.0], 1.0),
    ([1.0, 0.0, 0.0], 0.0),
    ([1.0, 1.0, 1.0], 1.0),
    ([1.0, 1.0, 0.0, 0.0], 0.0),         # 4 judges: threshold 3; a 2-2 tie fails
    ([0.0, 0.0, 1.0, 1.0], 0.0),
    ([1.0, 1.0, 1.0, 0.0], 1.0),
    ([0.0, 1.0, 1.0, 1.0], 1.0),
    ([1.0, 1.0, 1.0, 0.0, 0.0], 1.0),    # 5 judges: threshold 3
    ([0.0, 0.0, 1.0, 1.0, 1.0], 1.0),
    ([1.0, 1.0, 0.0, 0.0, 0.0], 0.0),
], ids=["1j_pass", "1j_fail", "2j_both", "2j_1v0", "2j_0v1", "2j_none", "3j_2v1", "3j_1v2_late", "3j_1v2",
        "3j_all", "4j_tie", "4j_tie_reversed", "4j_3v1", "4j_1v3", "5j_3v2", "5j_3v2_late", "5j_2v3"])
def test_majority_vote_needs_floor_half_plus_one(scores: list[float], expected: float) -> None:
    assert majority_vote(scores) == expected


def test_majority_vote_of_no_judges_is_zero() -> None:
    assert majority_vote([]) == 0.0


@pytest.mark.parametrize(("scores", "expected"), [
    ([1.0, 1.0, 1.0], 1.0),
    ([0.0, 0.0, 0.0], 1.0),   # all judges agreeing on a fail is still agreement
    ([1.0, 0.0, 1.0], 0.0),
    ([1.0], 1.0),
    ([], 0.0),
], ids=["all_pass", "all_fail", "split", "single", "empty"])
def test_unanimous_when_every_judge_gives_the_same_score(scores: list[float], expected: float) -> None:
    assert unanimous(scores) == expected


# --------------------------------------------------------------------------- judge panel metrics

PANEL = ["j1", "j2", "j3"]
# 3 judges x 5 samples                         per-sample mean  vote  unanimous
TABLE = [
    {"j1": 1.0, "j2": 1.0, "j3": 1.0},       # 3/3              1     1
    {"j1": 1.0, "j2": 1.0, "j3": 0.0},       # 2/3              1     0
    {"j1": 1.0, "j2": 0.0, "j3": 0.0},       # 1/3              0     0
    {"j1": 0.0, "j2": 0.0, "j3": 0.0},       # 0                0     1
    {"j1": 0.0, "j2": 1.0, "j3": 1.0},       # 2/3              1     0
]


def test_judge_panel_metrics_on_a_hand_made_table() -> None:
    out = judge_panel_metrics(TABLE, PANEL)
    assert set(out) == {"llm_as_judge_j1", "llm_as_judge_j2", "llm_as_judge_j3", "llm_as_judge_avg",
                        "judge_voting", "judge_agreement"}
    # j1: 1+1+1+0+0 = 3/5; j2: 1+1+0+0+1 = 3/5; j3: 1+0+0+0+1 = 2/5
    assert out["llm_as_judge_j1"] == approx(0.6)
    assert out["llm_as_judge_j2"] == approx(0.6)
    assert out["llm_as_judge_j3"] == approx(0.4)
    # avg: (1 + 2/3 + 1/3 + 0 + 2/3) / 5 = (8/3)/5 = 8/15 (= mean of per-judge (0.6+0.6+0.4)/3)
    assert out["llm_as_judge_avg"] == approx(8 / 15)
    # voting: (1+1+0+0+1)/5 = 3/5
    assert out["judge_voting"] == approx(0.6)
    # agreement: samples 1 and 4 are unanimous -> 2/5 (EVE always reported 0.0 here)
    assert out["judge_agreement"] == approx(0.4)


def test_judge_panel_metrics_count_a_missing_judge_score_as_fail() -> None:
    # sample 2 has no j2 score -> 0: j2 = (1+0)/2 = 0.5; votes: [1,1] -> 1, [1,0] -> 0 -> 0.5;
    # agreement: 1, 0 -> 0.5; avg: (1 + 1/2)/2 = 0.75
    out = judge_panel_metrics([{"j1": 1.0, "j2": 1.0}, {"j1": 1.0}], ["j1", "j2"])
    assert out == approx({"llm_as_judge_j1": 1.0, "llm_as_judge_j2": 0.5, "llm_as_judge_avg": 0.75,
                          "judge_voting": 0.5, "judge_agreement": 0.5})


def test_judge_panel_metrics_of_no_samples_are_zero() -> None:
    assert judge_panel_metrics([], ["j1"]) == {"llm_as_judge_j1": 0.0, "llm_as_judge_avg": 0.0,
                                               "judge_voting": 0.0, "judge_agreement": 0.0}


# --------------------------------------------------------------------------- task_result


def accuracy_of(records: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    return {"accuracy": mean(r["scores"]["accuracy"] for r in records)}


def test_task_result_leaves_errors_out_of_metrics_but_counts_them() -> None:
    records = [
        {"id": "q1", "status": "ok", "scores": {"accuracy": 1.0}},
        {"id": "q2", "status": "ok", "scores": {"accuracy": 0.0}},
        {"id": "q3", "status": "invalid", "scores": {"accuracy": 0.0}},
        {"id": "q4", "status": "error", "scores": {}},
        {"id": "q5", "status": "ok", "scores": {"accuracy": 1.0}},
    ]
    seen: list[Any] = []

    def metrics(ok: Sequence[Mapping[str, Any]]) -> dict[str, float]:
        seen.extend(r["id"] for r in ok)
        return accuracy_of(ok)

    result = task_result(records, metrics, zero={"accuracy": 0.0})
    assert seen == ["q1", "q2", "q3", "q5"]
    # scored: q1, q2, q3, q5 -> (1+0+0+1)/4 = 0.5
    assert result.metrics == approx({"accuracy": 0.5})
    assert (result.n, result.n_errors, result.error_ids) == (5, 1, ["q4"])
    assert (result.n_invalid, result.invalid_ids) == (1, ["q3"])


def test_task_result_with_only_errors_reports_null_metrics() -> None:
    zero = {"accuracy": 0.0}
    result = task_result([{"id": 0, "status": "error"}, {"id": 1, "status": "error"}], accuracy_of, zero)
    assert result.metrics == {"accuracy": None}  # a metric over no scored sample is absent, not 0
    assert (result.n, result.n_errors, result.error_ids, result.n_invalid) == (2, 2, [0, 1], 0)


def test_task_result_of_no_records() -> None:
    result = task_result([], accuracy_of, {"accuracy": 0.0})
    assert (result.n, result.n_invalid, result.invalid_ids, result.n_errors, result.metrics) == \
           (0, 0, [], 0, {"accuracy": None})


# --------------------------------------------------------------------------- tasks' aggregate


def record(task: str, sid: Any, reference: Any, answer: Any = None, scores: dict[str, float] | None = None,
           status: str = "ok", judgements: list[Judgement] | None = None) -> dict[str, Any]:
    """A samples-file line (the dict form of SampleRecord), as the pipeline writes it."""
    error = "model call failed: HTTP 500" if status == "error" else None
    return SampleRecord(id=sid, task=task, prompt=[{"role": "user", "content": "q"}], reference=reference,
                        response=None if status == "error" else "reply", answer=answer,
                        judgements=[j.to_dict() for j in judgements or []], scores=scores or {},
                        status=status, error=error).to_dict()  # type: ignore[arg-type]


def test_mcqa_single_aggregate_is_accuracy_over_non_error_records() -> None:
    task = eve_task("mcqa_single_answer")
    records = [
        record(task.name, 0, "A", "A", {"accuracy": 1.0}),
        record(task.name, 1, "B", "C", {"accuracy": 0.0}),
        record(task.name, 2, "C", None, {"accuracy": 0.0}),   # named no option: simply wrong
        record(task.name, 3, "D", "D", {"accuracy": 1.0}),
        record(task.name, 4, "A", status="error"),             # no reply: left out
    ]
    result = task.aggregate(records)
    # (1 + 0 + 0 + 1) / 4 = 0.5
    assert result.metrics == approx({"accuracy": 0.5})
    assert (result.n, result.n_errors, result.error_ids, result.n_invalid) == (5, 1, [4], 0)


def test_mcqa_multiple_aggregate_is_mean_iou_and_exact_match() -> None:
    task = eve_task("mcqa_multiple_answers")
    records = [
        record(task.name, 0, ["A", "B"], ["A", "B"], {"iou": 1.0, "accuracy": 1.0}),           # 2/2
        record(task.name, 1, ["A", "C"], ["A"], {"iou": 0.5, "accuracy": 0.0}),                # 1/2
        record(task.name, 2, ["B"], ["A", "C"], {"iou": 0.0, "accuracy": 0.0}),                # 0/3
        record(task.name, 3, ["A", "B", "C"], ["A", "B", "D"], {"iou": 0.5, "accuracy": 0.0}),  # 2/4
        record(task.name, 4, ["A"], status="error"),
    ]
    result = task.aggregate(records)
    # iou: (1 + 0.5 + 0 + 0.5) / 4 = 0.5; exact match: 1/4 = 0.25
    assert result.metrics == approx({"iou": 0.5, "accuracy": 0.25})
    assert (result.n, result.n_errors) == (5, 1)


def test_hallucination_aggregate_from_reference_and_answer_letters() -> None:
    task = eve_task("hallucination_detection")
    records = [
        record(task.name, "h1", "A", "A"),      # TP, correct
        record(task.name, "h2", "A", "B"),      # FN
        record(task.name, "h3", "A", None),     # FN, wrong (named no option)
        record(task.name, "h4", "B", "A"),      # FP
        record(task.name, "h5", "B", "B"),      # TN, correct
        record(task.name, "h6", "B", None),     # wrong, but not a positive prediction
        record(task.name, "h7", "A", status="error"),  # left out
    ]
    result = task.aggregate(records)
    # accuracy 2/6 = 1/3; tp=1 fp=1 fn=2: precision 1/2, recall 1/3,
    # f1 = 2*(1/2)*(1/3) / (1/2+1/3) = (1/3)/(5/6) = 2/5
    assert result.metrics == approx({"accuracy": 1 / 3, "precision": 0.5, "recall": 1 / 3, "f1": 0.4})
    assert (result.n, result.n_errors, result.error_ids, result.n_invalid) == (7, 1, ["h7"], 0)


def ok(judge: str, passed: bool) -> Judgement:
    return Judgement(judge=judge, status="ok", verdict="correct" if passed else "incorrect",
                     score=1.0 if passed else 0.0, explanation="", raw="{}")


def test_judged_task_aggregate_counts_invalid_judgements_as_fails() -> None:
    task = eve_task("open_ended")
    invalid_j2 = Judgement(judge="j2", status="invalid", raw="The answer is correct.")
    # A record written before a failed judge call made the sample an error: still a fail.
    failed_j1 = Judgement(judge="j1", status="error", raw="judge call failed after 3 retries: HTTP 503")
    records = [
        record(task.name, "s1", "ref", judgements=[ok("j1", True), ok("j2", True), ok("j3", True)]),
        record(task.name, "s2", "ref", judgements=[ok("j1", True), invalid_j2, ok("j3", True)],
               status="invalid"),
        record(task.name, "s3", "ref", judgements=[failed_j1, ok("j2", False), ok("j3", False)],
               status="invalid"),
        record(task.name, "s4", "ref", judgements=[ok("j1", False), ok("j2", True), ok("j3", True)]),
        record(task.name, "s5", "ref", status="error"),   # the model call failed: no judgements, left out
    ]
    result = task.aggregate(records)
    # rows (j1,j2,j3): s1 1,1,1  s2 1,0,1  s3 0,0,0  s4 0,1,1
    # j1 = (1+1+0+0)/4 = 0.5; j2 = (1+0+0+1)/4 = 0.5; j3 = (1+1+0+1)/4 = 0.75
    # avg = (1 + 2/3 + 0 + 2/3)/4 = (7/3)/4 = 7/12; voting = (1+1+0+1)/4 = 0.75;
    # agreement: s1 and s3 unanimous -> 2/4 = 0.5
    assert result.metrics == approx({"llm_as_judge_j1": 0.5, "llm_as_judge_j2": 0.5, "llm_as_judge_j3": 0.75,
                                     "llm_as_judge_avg": 7 / 12, "judge_voting": 0.75,
                                     "judge_agreement": 0.5})
    assert (result.n, result.n_invalid, result.invalid_ids) == (5, 2, ["s2", "s3"])
    assert (result.n_errors, result.error_ids) == (1, ["s5"])


def test_judged_task_ignores_a_score_left_on_an_invalid_judgement() -> None:
    task = eve_task("refusal")
    # An invalid judgement must never pass, whatever score it carries.
    stray = Judgement(judge="j1", status="invalid", verdict=None, score=1.0, raw="looks fine")
    result = task.aggregate([record(task.name, 0, "", judgements=[stray], status="invalid")])
    # one judge, one sample, judged as a fail: everything 0; agreement over no parsed verdict is undefined
    # (null, never 1: issue 31)
    assert result.metrics == {"llm_as_judge_j1": 0.0, "llm_as_judge_avg": 0.0, "judge_voting": 0.0,
                              "judge_agreement": None}
    assert result.invalid_ids == [0]


def test_judged_task_with_only_error_records_reports_null_contract_metrics() -> None:
    task = eve_task("open_ended")
    result = task.aggregate([record(task.name, 0, "ref", status="error")])
    # no judge ever answered: no per-judge metric, the panel metrics are null (over nothing)
    assert result.metrics == {"llm_as_judge_avg": None, "judge_voting": None, "judge_agreement": None}
    assert (result.n, result.n_errors) == (1, 1)


def test_task_result_reports_the_standard_error_of_per_sample_metrics() -> None:
    recs = [{"id": i, "status": "ok", "scores": {"accuracy": v}} for i, v in enumerate([1.0, 0.0, 1.0, 1.0])]
    recs.append({"id": 9, "status": "error", "scores": {}})
    result = eve_task("mcqa_single_answer").aggregate(recs)
    # mean 0.75; sample variance ((0.25^2)*3 + 0.75^2) / 3 = 0.25; stderr sqrt(0.25 / 4) = 0.25
    assert result.metrics == {"accuracy": 0.75}
    assert result.stderr == {"accuracy": pytest.approx(0.25)}
