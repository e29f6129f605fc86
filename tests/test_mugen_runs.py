"""MUGEN judging end to end against the fake server: prediction folders (the fixture and broken ones),
the rubric's edge cases, strict and lenient judging, invalid judgements and re-judging, and the MUGEN
output files. Generation is in test_mugen_generation.py."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import TESTS, read_jsonl, run_in_process, run_overrides

from runner.benchmarks.mugen.choice import read_choice
from runner.errors import DataError
from runner.run.provenance import rows_sha256

PREDICTIONS = TESTS / "fixtures" / "mugen" / "predictions"
LINES_FORMAT = "Explanation: <one or two sentences"


def _judge_prompt(body: dict[str, Any]) -> tuple[str, str, str]:
    text = body["messages"][-1]["content"]
    instruction = re.search(r"The question the model was given:\n<<<\n(.*?)\n>>>", text, re.S).group(1)
    gold = re.search(r"^Gold answer: (.*)$", text, re.M).group(1)
    reply = re.search(r"The model's reply:\n<<<\n(.*?)\n>>>", text, re.S).group(1)
    return instruction, gold, reply


def rubric_judge(body: dict[str, Any]) -> str:
    """A fake judge that applies the rubric (one clear option, equal to the gold one) and answers in
    the form the prompt asks for."""
    _, gold, reply = _judge_prompt(body)
    choice = read_choice(reply, 5)
    verdict = "correct" if choice is not None and choice == read_choice(gold, 5) else "incorrect"
    why = f"The reply picks {choice or 'no single option'}; gold is {gold}."
    if LINES_FORMAT in body["messages"][-1]["content"]:
        return f"Explanation: {why}\nJudgement: {verdict}"
    return json.dumps({"explanation": why, "judgement": verdict})


def overrides(srv, run_dir: Path, *extra: str) -> list[str]:
    return run_overrides(srv.base_url, run_dir, *extra, benchmark="mugen", data_dir=None)


def judge_requests(srv) -> list[dict[str, Any]]:
    return [b for b in srv.requests if b["model"] == "judge1"]


def model_requests(srv) -> list[dict[str, Any]]:
    return [b for b in srv.requests if b["model"] == "fake-model"]


# ----------------------------------------------------------------------------- judging a prediction folder

def test_judging_the_fixture_folder_applies_the_rubric_and_writes_mugen_files(fake_llm, tmp_path, capsys):
    fake_llm.default = rubric_judge
    run = tmp_path / "run"
    results = run_in_process(overrides(fake_llm, run, f"benchmark.prediction_dir={PREDICTIONS}"), run)

    assert results["model"] is None and set(results["tasks"]) == {"Keyword_Spotting", "Intent_Classification"}
    ks = json.loads((run / "Keyword_Spotting" / "llm_judge_results.json").read_text())
    # gold (B): "(B)", "Audio 2", "the second clip" correct; "(A) and (B)", the hedge, "" and null incorrect;
    # "b" for gold (D) and a reply naming no clip incorrect; "the third recording" for gold (C) correct.
    assert [r["Judgement"] for r in ks] == ["correct"] * 3 + ["incorrect"] * 6 + ["correct"]
    source = json.loads((PREDICTIONS / "Keyword_Spotting" / "output.json").read_text())
    assert [{k: v for k, v in r.items() if k not in ("Explanation", "Judgement")} for r in ks] == source
    assert ks[6]["Explanation"] == "The response is null: no option was chosen."  # never sent to the judge
    text = (run / "Keyword_Spotting" / "llm_judge_results.json").read_text(encoding="utf-8")
    assert text.startswith('[\n    {\n        "id": 0,')  # json.dump(indent=4), as MUGEN writes it

    assert results["tasks"]["Keyword_Spotting"]["metrics"] == {"accuracy": pytest.approx(4 / 10)}
    data = results["tasks"]["Keyword_Spotting"]["data"]  # the prediction file's records, digested
    assert data == {"source": str(PREDICTIONS / "Keyword_Spotting" / "output.json"), "revision": None, "rows": 10,
                    "sha256": rows_sha256(source)[1]}
    # Intent_Classification has no ids: the row index stands in. Audio 1, **C**, (D) for (E), Audio 2 (B).
    assert results["tasks"]["Intent_Classification"]["metrics"] == {"accuracy": pytest.approx(3 / 4)}
    # records are appended as samples finish, so their order is the completion order
    assert sorted(r["id"] for r in read_jsonl(run / "samples" / "Intent_Classification.jsonl")) == [0, 1, 2, 3]
    assert results["summary"]["accuracy"] == pytest.approx(7 / 14)  # micro: (4 + 3) / (10 + 4)
    assert results["summary"]["dimensions"] == {"Semantics & Pragmatics": pytest.approx(0.5)}

    requests = judge_requests(fake_llm)
    assert len(requests) == 13 and not model_requests(fake_llm)  # 10 + 4 records, minus the null response
    assert all(len(b["messages"]) == 1 and b["messages"][0]["role"] == "user" for b in requests)
    assert all(b["response_format"]["type"] == "json_schema" for b in requests)
    out = capsys.readouterr().out
    assert "Task: Keyword_Spotting | Accuracy: 40.00% (4/10)" in out
    assert "Overall | Accuracy: 50.00% (7/14)" in out


def _lines_judge(body: dict[str, Any]) -> str:
    """Well-formed lines, except markdown for the 'table' record and a quoted value for the 'cancel' one."""
    instruction, gold, reply = _judge_prompt(body)
    verdict = "correct" if read_choice(reply, 5) == read_choice(gold, 5) else "incorrect"
    if "book a table" in instruction:
        return f"Explanation: picks (A)\n**Judgement:** {verdict}"
    if "cancel" in instruction:
        return f'Explanation: picks (D), gold (E)\nJudgement: "{verdict}"'
    return f"Explanation: picks {gold}\nJudgement: {verdict}"


def test_strict_mode_counts_invalids_like_the_original_and_a_rerun_rejudges_only_them(fake_llm, tmp_path, capsys):
    fake_llm.default = _lines_judge
    run = tmp_path / "strict"
    args = overrides(fake_llm, run, f"benchmark.prediction_dir={PREDICTIONS}", "benchmark.strict=true",
                     "benchmark.tasks=[Intent_Classification]")
    first = run_in_process(args, run)["tasks"]["Intent_Classification"]
    # Original rule: markdown around the label and a quoted value are invalid -> ids 0 and 2, both wrong.
    assert (first["n_invalid"], first["invalid_ids"]) == (2, [0, 2])
    assert first["metrics"]["accuracy"] == pytest.approx(2 / 4)  # ids 1 and 3 judged correct
    assert all("response_format" not in b and LINES_FORMAT in b["messages"][0]["content"]
               for b in judge_requests(fake_llm))
    assert "Invalid judgements for IDs: [0, 2]" in capsys.readouterr().out
    judged = json.loads((run / "Intent_Classification" / "llm_judge_results.json").read_text())
    assert judged[2]["Judgement"] == '"incorrect"'  # the raw captured string, as the original stores it
    assert judged[0]["Judgement"] == "No extracted judgement"

    # The user fixes the judge and runs again into the same run dir: only the two invalid ones are asked.
    fake_llm.reset()
    fake_llm.default = rubric_judge
    second = run_in_process(args, run)["tasks"]["Intent_Classification"]
    asked = [_judge_prompt(b)[0] for b in judge_requests(fake_llm)]
    assert sorted(asked) == ["Which speaker wants to book a table?", "Which speaker wants to cancel an order?"]
    assert (second["n_invalid"], second["metrics"]["accuracy"]) == (0, pytest.approx(3 / 4))
    judged = json.loads((run / "Intent_Classification" / "llm_judge_results.json").read_text())
    assert [r["Judgement"] for r in judged] == ["correct", "correct", "incorrect", "correct"]

    # The same replies read leniently (the default): nothing is invalid.
    fake_llm.default = _lines_judge
    lenient = run_in_process(overrides(fake_llm, tmp_path / "lenient", f"benchmark.prediction_dir={PREDICTIONS}",
                                       "benchmark.tasks=[Intent_Classification]"), tmp_path / "lenient")
    assert lenient["tasks"]["Intent_Classification"]["n_invalid"] == 0
    assert lenient["tasks"]["Intent_Classification"]["metrics"]["accuracy"] == pytest.approx(3 / 4)


def test_a_failed_judge_call_is_an_error_and_an_edited_prediction_is_judged_again(fake_llm, tmp_path):
    preds = tmp_path / "preds"
    shutil.copytree(PREDICTIONS / "Intent_Classification", preds / "Intent_Classification")
    fake_llm.default = rubric_judge
    fake_llm.faults = ["500"] * 4  # every attempt of every distinct request fails (1 + 3 retries)
    fake_llm.fault_only_matching = "requests a song"
    run = tmp_path / "run"
    args = overrides(fake_llm, run, f"benchmark.prediction_dir={preds}", "judges.panel.0.backoff=0")
    first = run_in_process(args, run)["tasks"]["Intent_Classification"]
    # No verdict was given: an error (left out of the accuracy, asked again on resume), not an invalid one.
    assert (first["invalid_ids"], first["error_ids"]) == ([], [3])
    assert first["metrics"]["accuracy"] == pytest.approx(2 / 3)
    failed = json.loads((run / "Intent_Classification" / "llm_judge_results.json").read_text())[3]
    assert failed["Judgement"] == "error" and failed["Explanation"].startswith("not judged: ")

    records = json.loads((preds / "Intent_Classification" / "output.json").read_text())
    records[1]["response"] = "(A)"  # was "**C**" for gold (C)
    (preds / "Intent_Classification" / "output.json").write_text(json.dumps(records))
    fake_llm.reset()
    fake_llm.faults = []
    second = run_in_process(args, run)["tasks"]["Intent_Classification"]
    assert sorted(_judge_prompt(b)[2] for b in judge_requests(fake_llm)) == ["(A)", "Audio 2 (B)"]
    assert second["invalid_ids"] == [] and second["metrics"]["accuracy"] == pytest.approx(2 / 4)


def test_broken_prediction_folders_are_reported_and_the_rest_is_judged(fake_llm, tmp_path):
    preds, outside = tmp_path / "preds", tmp_path / "outside"
    shutil.copytree(PREDICTIONS / "Keyword_Spotting", preds / "Keyword_Spotting")
    (preds / "Emotion_Recognition").mkdir()
    (preds / "Emotion_Recognition" / "output.json").write_text('[{"id": 0, "instruction": "x"', encoding="utf-8")
    (preds / "Gender_Classification").mkdir()
    (preds / "Gender_Classification" / "output.json").write_text('{"id": 0}', encoding="utf-8")
    (preds / "Accent_Identification").mkdir()
    (preds / "Keyword_Spoting").mkdir()
    (preds / "README.md").write_text("notes")
    shutil.copytree(PREDICTIONS / "Intent_Classification", outside)
    (preds / "Language_Identification").symlink_to(outside, target_is_directory=True)
    good = {"id": 5, "instruction": "Which speaker orders a taxi?", "answer": "(C)", "response": "Audio 3"}
    (preds / "Intent_Classification").mkdir()
    (preds / "Intent_Classification" / "output.json").write_text(json.dumps([
        {"id": 1, "instruction": "Which speaker greets?", "answer": "(A)"},  # no response field
        "not a record",
        {"id": 2, "instruction": "Which speaker laughs?", "answer": "(B)", "response": 2},
        {"id": 3, "instruction": "Which speaker whispers?", "response": "(A)"},  # no answer
        good, {**good, "response": "(A)"},  # the second one repeats id 5: judged too, as index_5
    ]))
    fake_llm.default = rubric_judge
    run = tmp_path / "run"
    results = run_in_process(overrides(fake_llm, run, f"benchmark.prediction_dir={preds}"), run)

    assert set(results["tasks"]) == {"Keyword_Spotting", "Intent_Classification"}
    intent = results["tasks"]["Intent_Classification"]
    # id 1 has no response field: judged incorrect without asking the judge, not an error; id 5 is correct,
    # the record repeating id 5 (as index_5) incorrect: 1 of 3.
    assert (intent["n"], intent["n_errors"], intent["metrics"]["accuracy"]) == (6, 3, pytest.approx(1 / 3))
    # A record without an id (the string) is index_<its place>, MUGEN's own name for it.
    assert sorted(map(str, intent["error_ids"])) == ["2", "3", "index_1"]
    problems = "\n".join(results["summary"]["problems"])
    for expected in ("Emotion_Recognition: ", "is not valid JSON", "Gender_Classification: ", "got a dict",
                     "Accent_Identification: no output.json", "'Keyword_Spoting' is not a MUGEN task name "
                     "(did you mean Keyword_Spotting?)", "'Language_Identification' points outside",
                     "'response' must be a string or null", "'answer' is missing",
                     "expected an object"):
        assert expected in problems, expected
    assert "README" not in problems and "no 'response' field" not in problems
    judged = json.loads((run / "Intent_Classification" / "llm_judge_results.json").read_text())
    assert [r["Judgement"] for r in judged] == ["incorrect", "error", "error", "correct", "incorrect"]
    assert judged[0]["Explanation"] == "The record has no response: no option was chosen."
    assert "response" not in judged[0]  # the input record as it was, plus MUGEN's two fields


def test_a_prediction_dir_with_nothing_to_judge_stops_the_run(fake_llm, tmp_path):
    (tmp_path / "preds" / "Not_A_Task").mkdir(parents=True)
    with pytest.raises(DataError, match="nothing to judge"):
        run_in_process(overrides(fake_llm, tmp_path / "run", f"benchmark.prediction_dir={tmp_path / 'preds'}"),
                       tmp_path / "run")
    with pytest.raises(DataError, match=r"nothing to judge.*2 item\(s\) skipped"):
        run_in_process(overrides(fake_llm, tmp_path / "run", f"benchmark.prediction_dir={tmp_path / 'preds'}",
                                 "benchmark.tasks=[Music_Tagging]"), tmp_path / "run")
    with pytest.raises(DataError, match="is not a directory"):
        run_in_process(overrides(fake_llm, tmp_path / "run", f"benchmark.prediction_dir={tmp_path / 'nope'}"),
                       tmp_path / "run")
