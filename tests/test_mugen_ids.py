"""MUGEN prediction ids (runner/benchmarks/mugen/README.md, "Ids"), judged end to end on the fake server: every
record of a prediction file is judged, as MUGEN's llm_judge.py judges every record, whatever its id. Records
without an id beside explicit ids, "2" beside 2 (one id as text: the later record is judged under a name of
its own), and explicit ids shaped like the fallback names, each judged once, under an id no other record of
the file has, stable across a resume."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import cli, read_jsonl, run_in_process
from test_mugen_runs import judge_requests, overrides, rubric_judge

from runner.benchmarks.mugen.predictions import prediction_ids

TASK = "Keyword_Spotting"


def record(gold: str, response: str, **key: Any) -> dict[str, Any]:
    return {**key, "instruction": f"Which clip says the word? (gold {gold})", "answer": gold, "response": response}


# place: record (gold, reply) -> the sample id it is judged under, and the rubric's verdict
RECORDS = [
    record("(A)", "(A)", id=1),              # 0: its own id                               1         correct
    record("(B)", "(B)"),                    # 1: no id; 1 is record 0's own id             index_1   correct
    record("(C)", "(A)", id="2"),            # 2: its own id                               "2"       incorrect
    record("(D)", "(D)", id=2),              # 3: 2 is "2" as text, which record 2 has      index_3   correct
    record("(A)", "Audio 1"),                # 4: no id; no record claims 4                 4         correct
    record("(E)", "(B)", id=0),              # 5: its own id                               0         incorrect
    record("(C)", "the third clip"),         # 6: no id; 6 and index_6 are claimed below   index_6_  correct
    record("(B)", "(A) and (B)", id="index_6"),  # 7: its own id                           index_6   incorrect
    record("(E)", "(E)", qid=6),             # 8: its own id (qid when no id)              6         correct
]
IDS = [1, "index_1", "2", "index_3", 4, 0, "index_6_", "index_6", 6]
CORRECT = [True, True, False, True, True, False, True, False, True]


def folder(tmp_path: Path) -> Path:
    preds = tmp_path / "preds"
    (preds / TASK).mkdir(parents=True, exist_ok=True)
    (preds / TASK / "output.json").write_text(json.dumps(RECORDS), encoding="utf-8")
    return preds


def test_the_ids_follow_the_documented_rule():
    ids, notes = prediction_ids(RECORDS)
    assert ids == IDS
    assert notes == ["record 3 repeats id 2: judged as index_3"]
    assert len({str(i) for i in ids}) == len(RECORDS), "no two records share an id, as text"


def test_every_record_is_judged_as_llm_judge_judges_it_and_the_run_exits_0(fake_llm, tmp_path):
    fake_llm.default = rubric_judge
    run = tmp_path / "run"
    proc = cli(overrides(fake_llm, run, f"benchmark.prediction_dir={folder(tmp_path)}"), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "record 3 repeats id 2: judged as index_3" in proc.stdout + proc.stderr

    # llm_judge.py: one judge call per record, accuracy = correct / every record (6 of 9).
    assert len(judge_requests(fake_llm)) == len(RECORDS)
    results = json.loads((run / "results.json").read_text(encoding="utf-8"))
    block = results["tasks"][TASK]
    assert (block["n"], block["n_errors"], block["n_invalid"]) == (9, 0, 0)
    assert block["metrics"]["accuracy"] == pytest.approx(sum(CORRECT) / len(RECORDS))
    assert f"Task: {TASK} | Accuracy: 66.67% (6/9)" in proc.stdout

    records = {str(r["id"]): r for r in read_jsonl(run / "samples" / f"{TASK}.jsonl")}
    assert sorted(records) == sorted(str(i) for i in IDS)
    assert [records[str(i)]["scores"]["accuracy"] for i in IDS] == [float(c) for c in CORRECT]
    # MUGEN's file: every input record as it was (its own id, or none), in file order, plus the verdict.
    judged = json.loads((run / TASK / "llm_judge_results.json").read_text(encoding="utf-8"))
    assert [{k: v for k, v in r.items() if k not in ("Explanation", "Judgement")} for r in judged] == RECORDS
    assert [r["Judgement"] for r in judged] == ["correct" if c else "incorrect" for c in CORRECT]

    # The ids are the same on a resume: every record is kept, none is asked again.
    fake_llm.reset()
    again = run_in_process(overrides(fake_llm, run, f"benchmark.prediction_dir={folder(tmp_path)}"), run)
    assert fake_llm.count == 0 and again["tasks"][TASK]["metrics"] == block["metrics"]


def test_an_invalid_judgement_names_the_sample_id_of_its_record(fake_llm, tmp_path):
    """invalid_ids name the records by the ids above: the record without an id at place 1 is index_1, as
    llm_judge.py names it; the one repeating 2 is index_3 (llm_judge.py would print 2 again)."""
    def unreadable_for_two(body: dict[str, Any]) -> str:
        text = body["messages"][-1]["content"]
        return "no verdict here" if "gold (B)" in text or "gold (D)" in text else rubric_judge(body)

    fake_llm.default = unreadable_for_two
    run = tmp_path / "run"
    results = run_in_process(overrides(fake_llm, run, f"benchmark.prediction_dir={folder(tmp_path)}"), run)
    block = results["tasks"][TASK]
    # gold (B): records 1 and 7; gold (D): record 3. Invalid counts as wrong: 6 correct minus records 1 and 3.
    assert sorted(map(str, block["invalid_ids"])) == ["index_1", "index_3", "index_6"]
    assert block["metrics"]["accuracy"] == pytest.approx(4 / 9)
