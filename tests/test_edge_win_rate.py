r"""Win-rate edge cases of issue 10 ("Numbers you can trust"): every spelling of EVE's question column is
read (`doc\.Question` is how a W&B export of an evalkit samples table names it), and a rate over nothing
(no valid judgement) is null, never 0."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from conftest import read_jsonl, run_in_process
from test_win_rate import QUESTIONS, overrides, run, scripted_judge

from runner.benchmarks.win_rate.data import pair_outputs, read_outputs

ROWS = [("What does SAR stand for?", "Synthetic Aperture Radar.", "[q2] Synthetic Aperture Radar."),
        ("Which band ratio defines NDVI?", "NDVI = (NIR - Red) / (NIR + Red).", "['[q1] Red over blue.']")]


def _csv(path: Path, question_column: str, rows: list[tuple[str, str, str]]) -> Path:
    with open(path, "w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow([question_column, "target", "filtered_resps"])
        writer.writerows(rows)
    return path


@pytest.mark.parametrize("column", ["doc\\.Question", "Question", "doc.Question", "doc\\\\.Question"])
def test_every_spelling_of_evals_question_column_is_read(tmp_path, column):
    # `doc\.Question` (one backslash) is what EVE's docs and W&B exports show; `doc\\.Question` (two) is the
    # literal EVE's script compares column names with; `doc.Question` is the unescaped W&B name.
    outputs = read_outputs(_csv(tmp_path / "m.csv", column, ROWS))
    assert [(r.id, r.question, r.reference, r.text) for r in outputs.rows] == [
        (0, ROWS[0][0], ROWS[0][1], ROWS[0][2]), (1, ROWS[1][0], ROWS[1][1], "[q1] Red over blue.")]
    assert outputs.unusable == []
    other = read_outputs(_csv(tmp_path / "plain.csv", "Question", [(q.upper(), t, a) for q, t, a in ROWS[::-1]]
                              + [(ROWS[0][0], ROWS[0][1], "[q1] Side-looking radar.")]))
    assert [p.question for p in pair_outputs(outputs, other).pairs] == [ROWS[0][0]]


def test_a_w_and_b_export_with_doc_dot_question_pairs_with_a_plain_csv_end_to_end(fake_llm, tmp_path):
    a = _csv(tmp_path / "a.csv", "doc\\.Question", ROWS)
    b = _csv(tmp_path / "b.csv", "Question", [(ROWS[1][0], ROWS[1][1], "[q2] (NIR - Red) / (NIR + Red)."),
                                              (ROWS[0][0], ROWS[0][1], "[q1] Side-looking radar.")])
    results, records, _ = run(fake_llm, tmp_path, ["judge1"], a=a, b=b)
    block = results["tasks"]["x_vs_y"]
    assert (block["n"], block["n_errors"], block["n_invalid"]) == (2, 0, 0)
    assert {r["id"]: r["prompt"] for r in records} == {0: ROWS[0][0], 1: ROWS[1][0]}
    assert block["metrics"]["win_rate/judge1/x"] == 0.5 and block["metrics"]["win_rate/judge1/y"] == 0.5
    assert results["summary"]["pairs"]["x_vs_y"]["paired"] == 2


def test_when_no_judgement_is_valid_every_rate_is_null_and_the_files_are_still_written(fake_llm, tmp_path):
    fake_llm.default = "I prefer not to choose."  # never a parseable verdict
    run_dir = tmp_path / "run"
    results = run_in_process(overrides(fake_llm.base_url, run_dir, ["judge1", "judge2"], "benchmark.orders=both"),
                             run_dir)
    block = results["tasks"]["x_vs_y"]
    assert (block["n"], block["n_invalid"], block["n_errors"]) == (5, 5, 0)
    assert block["metrics"] and all(v is None for v in block["metrics"].values()), block["metrics"]
    assert "flip_rate/judge1" in block["metrics"]  # both orders ran, even though nothing was valid
    assert results["summary"]["headline"] == {"x_vs_y": None}
    records = read_jsonl(run_dir / "samples" / "x_vs_y.jsonl")
    assert sorted(r["id"] for r in records) == sorted(QUESTIONS) and {r["status"] for r in records} == {"invalid"}
    out = run_dir / "win_rate"
    assert (out / "comparison_x_vs_y.png").stat().st_size > 0
    with open(out / "summary_x_vs_y.csv", encoding="utf-8", newline="") as fh:
        summary = list(csv.DictReader(fh))
    assert [(r["judge"], r["valid"], r["invalid"], r["x_win_rate"], r["position_bias"]) for r in summary] == \
        [("judge1", "0", "5", "", ""), ("judge2", "0", "5", "", "")]


def test_a_judge_with_no_valid_judgement_is_null_while_the_pool_uses_the_others(fake_llm, tmp_path):
    def judge(body):
        return "no idea" if body["model"] == "judge2" else scripted_judge(body)

    fake_llm.default = judge
    run_dir = tmp_path / "run"
    results = run_in_process(overrides(fake_llm.base_url, run_dir, ["judge1", "judge2"]), run_dir)
    m = results["tasks"]["x_vs_y"]["metrics"]
    assert m["win_rate/judge2/x"] is None and m["alpaca_win_rate/judge2/y"] is None
    assert m["position_bias/judge2"] is None
    # judge1 is fair: x wins 3, y 1, one tie; the pool and the average over judges with a verdict agree.
    assert m["win_rate/judge1/x"] == pytest.approx(3 / 5)
    assert m["aggregate/x_win_rate"] == m["aggregate/avg_x_win_rate"] == pytest.approx(3 / 5)
    assert m["judge_agreement"] is None  # no sample has a valid verdict from every judge
