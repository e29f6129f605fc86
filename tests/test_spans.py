"""Hallucination spans: quote mapping, Mu-SHROOM IoU and Spearman on hand-computed fixtures, end to end."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import EVE_SAMPLE, fake_model_overrides, read_jsonl, run_in_process, write_jsonl
from scipy.stats import spearmanr

from runner.benchmarks.eve.span_metrics import (
    Mapped,
    Quote,
    intervals,
    iou,
    map_quotes,
    micro_prf,
    score_sample,
    spearman,
)
from runner.benchmarks.eve.spans import gold_spans, parse_quotes

# ------------------------------------------------------------------------------------ quote mapping


def test_a_repeated_quote_marks_every_occurrence():
    answer = "It flies at 700 km; its twin also flies at 700 km."
    mapped = map_quotes(answer, [Quote("700 km", 0.8)])
    assert mapped.spans == [(12, 18, 0.8), (43, 49, 0.8)]
    assert [answer[s:e] for s, e, _ in mapped.spans] == ["700 km", "700 km"]
    assert mapped.unmatched == [] and mapped.quotes == 1


def test_overlapping_occurrences_of_one_quote_are_all_marked():
    assert map_quotes("aaa", [Quote("aa")]).spans == [(0, 2, 1.0), (1, 3, 1.0)]


def test_a_quote_absent_from_the_answer_is_kept_and_counted():
    mapped = map_quotes("The band is C-band.", [Quote("X-band", 0.9), Quote("C-band", 0.6), Quote("")])
    assert mapped.spans == [(12, 18, 0.6)]
    assert mapped.unmatched == [Quote("X-band", 0.9), Quote("")]  # an empty quote points at nothing
    assert mapped.quotes == 3


def test_matching_is_exact_and_case_sensitive_forgiving_only_surrounding_blanks_and_quote_marks():
    answer = "Sentinel-2 has 13 bands."
    mapped = map_quotes(answer, [Quote('  "13 bands" '), Quote("13 Bands"), Quote("13  bands")])
    assert mapped.spans == [(15, 23, 1.0)]
    assert [q.text for q in mapped.unmatched] == ["13 Bands", "13  bands"]


def test_overlapping_and_adjacent_quotes_merge_into_one_predicted_span():
    answer = "abcdefgh"
    mapped = map_quotes(answer, [Quote("abcd", 0.9), Quote("cdef", 0.6), Quote("gh", 0.7)])
    assert mapped.spans == [(0, 4, 0.9), (2, 6, 0.6), (6, 8, 0.7)]
    assert intervals(i for s, e, _ in mapped.spans for i in range(s, e)) == [[0, 8]]
    # Where quotes overlap, a character takes the highest confidence: c, d stay at 0.9.
    scores = score_sample(answer, [[0, 8]], [(0, 8, 1.0)], mapped)
    assert scores["span_iou"] == 1.0 and scores["chars_predicted"] == 8


# ------------------------------------------------------------------------------------ IoU


def test_iou_on_a_hand_computed_fixture():
    answer = "x" * 20
    # gold = [2, 8) ∪ [12, 15) = 6 + 3 = 9 characters; predicted = [5, 13) = 8 characters.
    # overlap = {5, 6, 7} ∪ {12} = 4; union = 9 + 8 - 4 = 13; IoU = 4 / 13.
    mapped = Mapped(spans=[(5, 13, 1.0)], quotes=1)  # one quote placed at [5, 13)
    scores = score_sample(answer, [[2, 8], [12, 15]], [], mapped)
    assert scores["span_iou"] == pytest.approx(4 / 13)
    assert (scores["chars_predicted"], scores["chars_gold"], scores["chars_overlap"]) == (8, 9, 4)


def test_iou_is_one_when_gold_and_prediction_are_both_empty_and_zero_when_only_one_is():
    answer = "Sentinel-1 carries a C-band radar."
    assert score_sample(answer, [], [], map_quotes(answer, []))["span_iou"] == 1.0
    assert score_sample(answer, [[21, 27]], [(21, 27, 0.9)], map_quotes(answer, []))["span_iou"] == 0.0
    assert score_sample(answer, [], [], map_quotes(answer, [Quote("C-band")]))["span_iou"] == 0.0
    assert iou(set(), set()) == 1.0


def test_an_absent_quote_counts_as_flagged_text_that_is_not_hallucinated():
    answer = "abc def"
    # gold = "def" = {4, 5, 6}; "def" matches it; "xyz" (absent) adds 3 positions after the answer that
    # are predicted (0.9 > 0.5) and not gold: IoU = 3 / (3 + 3) = 0.5, precision 3 / 6, recall 3 / 3.
    mapped = map_quotes(answer, [Quote("def", 0.9), Quote("xyz", 0.9)])
    scores = score_sample(answer, [[4, 7]], [(4, 7, 1.0)], mapped)
    assert scores["span_iou"] == 0.5
    assert scores["unmatched_quotes"] == 1 and scores["quotes"] == 2
    assert micro_prf([scores]) == pytest.approx({"span_precision": 0.5, "span_recall": 1.0,
                                                 "span_f1": 2 / 3})
    # gold vector [0,0,0,0,1,1,1 | 0,0,0], predicted [0,0,0,0,.9,.9,.9 | .9,.9,.9]: ranks agree only
    # partly, so rho is below 1 (dropping the quote would have given a perfect 1.0).
    assert scores["span_spearman"] == pytest.approx(spearmanr([0] * 4 + [1] * 3 + [0] * 3,
                                                              [0] * 4 + [0.9] * 6).statistic)
    assert scores["span_spearman"] < 1.0


def test_a_quote_at_or_below_one_half_is_soft_only():
    answer = "abcdef"
    scores = score_sample(answer, [[0, 3]], [(0, 3, 1.0)], map_quotes(answer, [Quote("abc", 0.5)]))
    assert scores["chars_predicted"] == 0 and scores["span_iou"] == 0.0
    assert scores["span_spearman"] == 1.0  # same ranking: [1,1,1,0,0,0] vs [.5,.5,.5,0,0,0]


# ------------------------------------------------------------------------------------ Spearman


def test_spearman_on_a_hand_computed_fixture():
    # gold [0, 0, 0.5, 1.0] -> ranks [1.5, 1.5, 3, 4] (ties share the mean rank), mean 2.5,
    #   deviations [-1, -1, 0.5, 1.5], sum of squares 4.5;
    # predicted [0, 0.9, 0.9, 0.9] -> ranks [1, 3, 3, 3], mean 2.5, deviations [-1.5, .5, .5, .5], sum sq 3;
    # covariance sum = 1.5 - 0.5 + 0.25 + 0.75 = 2; rho = 2 / sqrt(4.5 * 3) = 0.5443.
    answer = "abcd"
    scores = score_sample(answer, [[3, 4]], [(2, 3, 0.5), (3, 4, 1.0)], map_quotes(answer, [Quote("bcd", 0.9)]))
    assert scores["span_spearman"] == pytest.approx(2 / (4.5 * 3) ** 0.5)
    assert scores["span_spearman"] == pytest.approx(0.5443, abs=1e-4)
    assert spearman([0, 1, 2, 3], [0.1, 0.2, 0.3, 0.4]) == pytest.approx(1.0)
    assert spearman([0, 1, 2, 3], [0.4, 0.3, 0.2, 0.1]) == pytest.approx(-1.0)


@pytest.mark.parametrize("gold, predicted, expected", [
    ([0, 0, 0], [0, 0, 0], 1.0),        # nothing hallucinated, nothing flagged
    ([0, 0, 0], [0.9, 0.9, 0.9], 0.0),  # all of a correct answer flagged (Mu-SHROOM's scorer says 1.0)
    ([1, 1, 1], [0.7, 0.7, 0.7], 1.0),  # all hallucinated, all flagged (at any confidence)
    ([1, 1, 1], [0, 0, 0], 0.0),        # all hallucinated, nothing flagged
    ([0, 0, 0], [0, 0.9, 0], 0.0),      # only one side constant
    ([0, 1, 0], [0, 0, 0], 0.0),
    ([], [], 1.0),                      # an empty answer and no quote
])
def test_spearman_degenerate_constant_cases(gold, predicted, expected):
    assert spearman(gold, predicted) == expected


def test_character_precision_recall_f1_are_micro_averaged_over_samples():
    rows = [{"chars_predicted": 8, "chars_gold": 9, "chars_overlap": 4},
            {"chars_predicted": 2, "chars_gold": 0, "chars_overlap": 0},
            {"chars_predicted": 0, "chars_gold": 0, "chars_overlap": 0}]
    # precision = 4 / (8 + 2) = 0.4; recall = 4 / 9; F1 = 2 * 0.4 * 4/9 / (0.4 + 4/9) = 0.42105
    out = micro_prf(rows)
    assert out == pytest.approx({"span_precision": 0.4, "span_recall": 4 / 9, "span_f1": 8 / 19})
    assert micro_prf([rows[2]]) == {"span_precision": 0.0, "span_recall": 0.0, "span_f1": 0.0}


# ------------------------------------------------------------------------------------ replies and rows


@pytest.mark.parametrize("reply, expected", [
    ('{"hallucinated_spans": [{"text": "5 m", "confidence": 0.8}]}', [Quote("5 m", 0.8)]),
    ('Here:\n```json\n{"hallucinated_spans": ["5 m", "B9"]}\n```', [Quote("5 m"), Quote("B9")]),
    ('["5 m"]', [Quote("5 m")]),
    ('{"spans": [{"quote": "5 m", "prob": 7}, {"text": "B9", "confidence": "high"}]}',
     [Quote("5 m", 1.0), Quote("B9", 1.0)]),
    ('{"hallucinated_spans": []}', []),
    ("Nothing here is hallucinated.", None),
    ('{"judgement": "correct"}', None),
    ('{"hallucinated_spans": [3]}', None),
])
def test_replies_are_read_into_quotes_or_none(reply, expected):
    assert parse_quotes(reply) == expected


def test_gold_labels_are_checked_against_the_answer():
    row = {"Hard labels": "[[0, 3]]", "Soft labels": [{"start": 0, "end": 3, "prob": 0.9, "text": "abc"}]}
    assert gold_spans(row, 5) == ([[0, 3]], [(0, 3, 0.9)])
    with pytest.raises(ValueError, match="outside the answer"):
        gold_spans({**row, "Hard labels": [[2, 9]]}, 5)
    with pytest.raises(ValueError, match="prob"):
        gold_spans({**row, "Soft labels": [{"start": 0, "end": 1, "prob": 1.5}]}, 5)


# ------------------------------------------------------------------------------------ end to end


def _rows() -> list[dict[str, Any]]:
    lines = (EVE_SAMPLE / "hallucination_detection.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


PHANTOM = "eight satellites"


def span_reply(body: dict[str, Any]) -> str:
    """The fake model quotes the gold spans at their gold confidence, with a few scripted slips."""
    text = body["messages"][-1]["content"]
    index, row = next((i, r) for i, r in enumerate(_rows()) if f"Answer: {r['Answer']}\n" in text)
    if index == 3:
        return "I could not find anything wrong."  # not the JSON asked for
    spans = [{"text": row["Answer"][s["start"]:s["end"]], "confidence": s["prob"]} for s in row["Soft labels"]
             if [s["start"], s["end"]] in row["Hard labels"]]
    if index == 2:
        spans.append({"text": PHANTOM, "confidence": 0.9})  # not in the answer
    return "```json\n" + json.dumps({"hallucinated_spans": spans}) + "\n```"


def expected_metrics(rows: list[dict[str, Any]]) -> dict[str, float]:
    """The metrics computed straight from the data and the script above, without the task's code."""
    ious, cors, pred_total, gold_total, overlap_total = [], [], 0, 0, 0
    for i, r in enumerate(rows):
        n, extra = len(r["Answer"]), len(PHANTOM) if i == 2 else 0
        gold = {c for s, e in r["Hard labels"] for c in range(s, e)}
        gold_total += len(gold)
        if i == 3:
            ious.append(0.0), cors.append(0.0)
            continue
        pred = gold | set(range(n, n + extra))
        pred_total += len(pred)
        overlap_total += len(gold)
        ious.append(len(gold) / len(pred) if pred else 1.0)
        g, p = [0.0] * (n + extra), [0.0] * n + [0.9] * extra
        for s in r["Soft labels"]:
            g[s["start"]:s["end"]] = [s["prob"]] * (s["end"] - s["start"])
            if [s["start"], s["end"]] in r["Hard labels"]:
                p[s["start"]:s["end"]] = [s["prob"]] * (s["end"] - s["start"])
        cors.append(1.0 if len(set(g)) == 1 and len(set(p)) == 1 else spearmanr(g, p).statistic)
    precision, recall = overlap_total / pred_total, overlap_total / gold_total
    return {"span_iou": sum(ious) / len(ious), "span_spearman": sum(cors) / len(cors),
            "span_precision": precision, "span_recall": recall,
            "span_f1": 2 * precision * recall / (precision + recall)}


def spans_overrides(url: str, run_dir: Path, data_dir: Path = EVE_SAMPLE) -> list[str]:
    return fake_model_overrides(url) + [
        "benchmark=eve", f"benchmark.data_dir={data_dir}", "benchmark.tasks=[hallucination_spans]",
        "tracker=none", "progress=false", "cache.enabled=false", f"hydra.run.dir={run_dir}"]


def test_hallucination_spans_end_to_end_matches_metrics_computed_from_the_data(fake_llm, tmp_path):
    fake_llm.default = span_reply
    results = run_in_process(spans_overrides(fake_llm.base_url, tmp_path / "run"), tmp_path / "run")
    block = results["tasks"]["hallucination_spans"]
    assert set(results["tasks"]) == {"hallucination_spans"}
    assert block["n"] == 16 and block["n_errors"] == 0
    assert block["metrics"] == pytest.approx(expected_metrics(_rows()))
    assert block["counts"] == {"span_unmatched_quotes": 1, "span_unparsed": 1}  # one phantom quote, one bad reply
    assert results["summary"]["headline"] == {"hallucination_spans": block["metrics"]["span_iou"]}

    # The model was asked for structured output, no judge was called.
    bodies = fake_llm.requests
    assert len(bodies) == 16 and {b["model"] for b in bodies} == {"fake-model"}
    schema = bodies[0]["response_format"]["json_schema"]["schema"]
    assert schema["required"] == ["hallucinated_spans"]
    assert schema["properties"]["hallucinated_spans"]["items"]["required"] == ["text", "confidence"]

    records = {r["id"]: r for r in read_jsonl(tmp_path / "run" / "samples" / "hallucination_spans.jsonl")}
    assert records[2]["answer"]["unmatched_quotes"] == [{"text": PHANTOM, "confidence": 0.9}]
    assert records[0]["answer"]["spans"] == [[24, 41]] and records[3]["answer"] is None
    assert records[0]["reference"] == {"hard_labels": [[24, 41]],
                                       "soft_labels": [{"start": 24, "end": 41, "prob": 0.95}]}

    from runner.run.rescore import rescore

    assert rescore(tmp_path / "run") == results["tasks"]


def test_a_row_with_bad_labels_is_an_error_and_the_rest_is_scored(fake_llm, tmp_path):
    rows = _rows()[:4]
    rows[1]["Hard labels"] = [[100, 900]]
    data = write_jsonl(tmp_path / "data" / "hallucination_spans.jsonl", rows)
    fake_llm.default = span_reply
    run_dir = tmp_path / "run"
    results = run_in_process(spans_overrides(fake_llm.base_url, run_dir, data.parent), run_dir)
    block = results["tasks"]["hallucination_spans"]
    assert block["n"] == 4 and block["error_ids"] == [1]
    rec = next(r for r in read_jsonl(run_dir / "samples" / "hallucination_spans.jsonl") if r["id"] == 1)
    assert "outside the answer" in rec["error"]
    # Samples 0, 2 ("4 days" plus the 16-character absent quote) and 3 (unparsed): IoU 1, 6 / 22, 0.
    assert block["metrics"]["span_iou"] == pytest.approx((1 + 6 / (6 + len(PHANTOM)) + 0) / 3)
