"""MUGEN edge cases of issue 10 ("Numbers you can trust"): a record with no response is incorrect (not an
error, not a crash, not a lost task), and a figure over nothing is null. MUGEN's own judge lost a whole
task's results on one `"response": null` (its prompt filling raised TypeError)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import read_jsonl, run_in_process
from test_mugen_runs import _judge_prompt, judge_requests, overrides, rubric_judge


def _write(folder: Path, task: str, rows: list[dict]) -> None:
    (folder / task).mkdir(parents=True, exist_ok=True)
    (folder / task / "output.json").write_text(json.dumps(rows), encoding="utf-8")


def test_a_null_or_absent_response_is_incorrect_and_the_rest_of_the_task_is_judged(fake_llm, tmp_path, capsys):
    preds = tmp_path / "preds"
    _write(preds, "Emotion_Recognition", [
        {"id": "e1", "instruction": "Which speaker sounds angry?", "answer": "(A)", "response": "(A)"},
        {"id": "e2", "instruction": "Which speaker sounds sad?", "answer": "(B)", "response": None},
        {"id": "e3", "instruction": "Which speaker sounds happy?", "answer": "(C)"},  # no response field
        {"id": "e4", "instruction": "Which speaker sounds calm?", "answer": "(D)", "response": "Audio 4"},
    ])
    fake_llm.default = rubric_judge
    run = tmp_path / "run"
    results = run_in_process(overrides(fake_llm, run, f"benchmark.prediction_dir={preds}"), run)

    task = results["tasks"]["Emotion_Recognition"]
    assert (task["n"], task["n_errors"], task["n_invalid"]) == (4, 0, 0)
    assert task["metrics"] == {"accuracy": pytest.approx(2 / 4)}  # e1, e4 correct; e2, e3 incorrect
    assert results["summary"]["dimensions"] == {"Affective & Paralinguistic State": pytest.approx(0.5)}
    got = {r["id"]: r for r in read_jsonl(run / "samples" / "Emotion_Recognition.jsonl")}
    for rid in ("e2", "e3"):
        assert (got[rid]["status"], got[rid]["scores"], got[rid]["judgements"]) == ("ok", {"accuracy": 0.0}, [])
        assert got[rid]["response"] is None and got[rid]["answer"] is None
    # Only the two real replies went to the judge.
    assert sorted(_judge_prompt(b)[0] for b in judge_requests(fake_llm)) == \
        ["Which speaker sounds angry?", "Which speaker sounds calm?"]
    judged = json.loads((run / "Emotion_Recognition" / "llm_judge_results.json").read_text())
    assert [r["Judgement"] for r in judged] == ["correct", "incorrect", "incorrect", "correct"]
    assert judged[1]["response"] is None and "response" not in judged[2]
    assert "Task: Emotion_Recognition | Accuracy: 50.00% (2/4)" in capsys.readouterr().out

    # Resuming asks nothing: the null and absent responses are finished, not errors waiting to be retried.
    fake_llm.reset()
    again = run_in_process(overrides(fake_llm, run, f"benchmark.prediction_dir={preds}"), run)
    assert fake_llm.count == 0 and again["tasks"] == results["tasks"]


def test_a_task_with_nothing_judged_reports_null_not_zero(fake_llm, tmp_path, capsys):
    # Every record of Key_Detection is unusable (no answer), so nothing is judged there: its accuracy, its
    # dimension's and (with no other task) the overall one are over nothing.
    preds = tmp_path / "preds"
    _write(preds, "Key_Detection", [{"id": 1, "instruction": "Which clip is in D minor?", "response": "(A)"},
                                    {"id": 2, "instruction": "Which clip is in C major?", "response": "(B)"}])
    fake_llm.default = rubric_judge
    run = tmp_path / "run"
    results = run_in_process(overrides(fake_llm, run, f"benchmark.prediction_dir={preds}"), run)

    task = results["tasks"]["Key_Detection"]
    assert (task["n"], task["n_errors"], task["metrics"]) == (2, 2, {"accuracy": None})
    summary = results["summary"]
    assert (summary["accuracy"], summary["dimensions"]) == (None, {"Music Analysis": None})
    assert summary["ci"] == {"accuracy": None, "dimensions": {"Music Analysis": None}}
    assert (summary["n_correct"], summary["n_judged"]) == (0, 0)
    assert summary["dimension_counts"] == {"Music Analysis": {"correct": 0, "n": 0}}
    out = capsys.readouterr().out
    assert "Task: Key_Detection | Accuracy: n/a (0/0)" in out and "Overall | Accuracy: n/a (0/0)" in out
    assert fake_llm.count == 0


def test_a_task_with_nothing_judged_leaves_the_other_tasks_figures_alone(fake_llm, tmp_path):
    preds = tmp_path / "preds"
    _write(preds, "Key_Detection", [{"id": 1, "instruction": "Which clip is in D minor?", "response": "(A)"}])
    _write(preds, "Genre_Classification", [
        {"id": 1, "instruction": "Which clip is jazz?", "answer": "(B)", "response": "(B)"},
        {"id": 2, "instruction": "Which clip is rock?", "answer": "(A)", "response": None}])
    fake_llm.default = rubric_judge
    run = tmp_path / "run"
    results = run_in_process(overrides(fake_llm, run, f"benchmark.prediction_dir={preds}"), run)
    assert results["tasks"]["Key_Detection"]["metrics"] == {"accuracy": None}
    assert results["tasks"]["Genre_Classification"]["metrics"] == {"accuracy": 0.5}
    # The micro averages are over the judged samples: Key_Detection's error adds nothing to either.
    assert results["summary"]["accuracy"] == 0.5
    assert results["summary"]["dimensions"] == {"Music Analysis": 0.5}
    assert results["summary"]["macro_avg"] == 0.5  # the null headline is skipped, not counted as 0
