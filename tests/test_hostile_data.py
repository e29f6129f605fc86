"""Issue 29 (faults and hostile input change no number) and issue 31 item 6: repeated sample ids, MUGEN
records without ids, VAKRA MCP servers that crash or hang mid-replay, and `runner.rescore` reading exactly
what results.json describes. Real data files, the fake OpenAI-compatible server, real stdio MCP servers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import cli, fake_model_overrides, one_line_error, read_jsonl, run_in_process, write_jsonl

from runner.errors import DataError

QUESTIONS = ["Which band does Sentinel-1's SAR use?", "How many MSI bands?", "Who operates Landsat 8?",
             "What does NDVI compare?", "Which satellite carries TROPOMI?"]


def mcq_rows(n: int, ids: list[Any] | None = None) -> list[dict[str, Any]]:
    """EVE mcqa_single_answer rows (the public dataset's columns), gold `A` on every row but each fifth."""
    rows = []
    for i in range(n):
        row: dict[str, Any] = {"Question": f"{QUESTIONS[i % 5]} (variant {i})", "Choices": ["one", "two", "three"],
                               "Answer": "B" if i % 5 == 4 else "A"}
        if ids is not None:
            row["id"] = ids[i]
        rows.append(row)
    return rows


def eve_args(fake_llm: Any, data: Path, run_dir: Path, *extra: str) -> list[str]:
    return fake_model_overrides(fake_llm.base_url) + [
        "benchmark=eve", f"benchmark.data_dir={data}", "benchmark.tasks=[mcqa_single_answer]",
        "benchmark.num_fewshot=0", "tracker=none", "progress=false", "cache.enabled=false",
        f"hydra.run.dir={run_dir}", *extra]


# ---------------------------------------------------------------- repeated ids


def test_twenty_rows_sharing_ten_ids_stop_the_run_before_any_request(fake_llm, tmp_path):
    data = tmp_path / "data"
    write_jsonl(data / "mcqa_single_answer.jsonl", mcq_rows(20, [f"q{i % 10}" for i in range(20)]))
    run_dir = tmp_path / "run"
    with pytest.raises(DataError) as info:
        run_in_process(eve_args(fake_llm, data, run_dir), run_dir)
    message = str(info.value)
    assert "\n" not in message and "mcqa_single_answer.jsonl" in message
    assert "10 sample id(s) repeated" in message
    assert "id q0 at rows 0, 10; id q1 at rows 1, 11; id q2 at rows 2, 12; and 7 more" in message
    assert fake_llm.count == 0 and not (run_dir / "samples" / "mcqa_single_answer.jsonl").exists()


def test_ids_compare_as_text_and_a_row_index_may_collide_with_an_explicit_id(fake_llm, tmp_path):
    data = tmp_path / "data"
    rows = mcq_rows(4, ["7", 7, None, "2"])  # "7" and 7 are one id; the third row has none: it is row 2
    for row in rows:
        if row["id"] is None:
            del row["id"]
    write_jsonl(data / "mcqa_single_answer.jsonl", rows)
    with pytest.raises(DataError, match=r"2 sample id\(s\) repeated \(id 7 at rows 0, 1; id 2 at rows 2, 3;"):
        run_in_process(eve_args(fake_llm, data, tmp_path / "run"), tmp_path / "run")
    assert fake_llm.count == 0


def test_unique_ids_run_and_n_is_the_rows_asked(fake_llm, tmp_path):
    data = tmp_path / "data"
    write_jsonl(data / "mcqa_single_answer.jsonl", mcq_rows(20, [f"q{i}" for i in range(20)]))
    fake_llm.default = "A"
    run_dir = tmp_path / "run"
    task = run_in_process(eve_args(fake_llm, data, run_dir), run_dir)["tasks"]["mcqa_single_answer"]
    # Gold is A on 16 of the 20 rows (every fifth is B): 16/20 = 0.8, over the 20 rows asked.
    assert (task["n"], task["metrics"]["accuracy"], fake_llm.count) == (20, 0.8, 20)


def test_a_repeated_id_past_the_limit_is_not_asked_and_not_an_error(fake_llm, tmp_path):
    data = tmp_path / "data"
    write_jsonl(data / "mcqa_single_answer.jsonl", mcq_rows(6, ["a", "b", "c", "d", "e", "a"]))
    fake_llm.default = "A"
    run_dir = tmp_path / "run"
    task = run_in_process(eve_args(fake_llm, data, run_dir, "benchmark.limit=5"), run_dir)["tasks"]
    # The first five rows: gold A, A, A, A, B; every reply A: 4/5.
    assert (task["mcqa_single_answer"]["n"], task["mcqa_single_answer"]["metrics"]["accuracy"]) == (5, 0.8)


def test_the_cli_says_so_in_one_line_with_exit_2(tmp_path):
    data = tmp_path / "data"
    write_jsonl(data / "mcqa_single_answer.jsonl", mcq_rows(4, [1, 2, 1, 3]))
    proc = cli(["benchmark=eve", f"benchmark.data_dir={data}", "benchmark.tasks=[mcqa_single_answer]",
                "benchmark.num_fewshot=0",
                "model=openai-compatible", "model.api_base=http://127.0.0.1:9/v1", "model.api_key=x",
                "judges=none", "tracker=none", "progress=false", f"hydra.run.dir={tmp_path / 'run'}"])
    assert proc.returncode == 2, proc.stderr
    line = one_line_error(proc)
    assert "mcqa_single_answer.jsonl" in line and "id 1 at rows 0, 2" in line


# ---------------------------------------------------------------- MUGEN ids


def test_every_mugen_prediction_record_is_judged_under_an_id_no_other_record_has(fake_llm, tmp_path):
    from test_mugen_runs import overrides as mugen_overrides
    from test_mugen_runs import rubric_judge

    preds = tmp_path / "preds" / "Intent_Classification"
    preds.mkdir(parents=True)
    records = [
        {"id": 1, "instruction": "Which speaker greets?", "answer": "(A)", "response": "(A)"},
        # No id: its row index (1) is record 0's id, and index_1 is record 4's: judged as index_1_.
        {"instruction": "Which speaker laughs?", "answer": "(B)", "response": "Audio 2"},
        {"id": "2", "instruction": "Which speaker whispers?", "answer": "(C)", "response": "(A)"},
        {"id": 2, "instruction": "Which speaker sings?", "answer": "(C)", "response": "(C)"},  # "2" again
        {"id": "index_1", "instruction": "Which speaker coughs?", "answer": "(D)", "response": "(D)"},
    ]
    (preds / "output.json").write_text(json.dumps(records), encoding="utf-8")
    fake_llm.default = rubric_judge
    run_dir = tmp_path / "run"
    results = run_in_process(mugen_overrides(fake_llm, run_dir, f"benchmark.prediction_dir={tmp_path / 'preds'}"),
                             run_dir)
    task = results["tasks"]["Intent_Classification"]
    # All five judged (one judge call each), as llm_judge.py judges every record: 4 right of 5.
    assert (task["n"], task["n_errors"], task["metrics"]["accuracy"], fake_llm.count) == (5, 0, 0.8, 5)
    got = {r["id"]: r["scores"]["accuracy"] for r in read_jsonl(run_dir / "samples" / "Intent_Classification.jsonl")}
    assert got == {1: 1.0, "index_1_": 1.0, "2": 0.0, "index_3": 1.0, "index_1": 1.0}
    judged = json.loads((run_dir / "Intent_Classification" / "llm_judge_results.json").read_text())
    # MUGEN's file: every input record as it was (its own id, or none), in file order, plus the verdict.
    assert [{k: v for k, v in r.items() if k not in ("Explanation", "Judgement")} for r in judged] == records
    assert [r["Judgement"] for r in judged] == ["correct", "correct", "incorrect", "correct", "correct"]


def test_a_repeated_id_in_mugen_data_rows_stops_the_run_before_any_request(fake_llm, tmp_path):
    from test_mugen_runs import overrides as mugen_overrides

    rows = [{"id": i % 2, "instruction": f"Which clip says {w}?", "answer": "(A)", "audio1": "a.wav"}
            for i, w in enumerate(["yes", "no", "stop"])]
    write_jsonl(tmp_path / "data" / "Keyword_Spotting.jsonl", rows)
    with pytest.raises(DataError, match=r"Keyword_Spotting: 1 sample id\(s\) repeated \(id 0 at rows 0, 2;"):
        run_in_process(mugen_overrides(fake_llm, tmp_path / "run", f"benchmark.data_dir={tmp_path / 'data'}",
                                       "benchmark.tasks=[Keyword_Spotting]"), tmp_path / "run")
    assert fake_llm.count == 0


@pytest.mark.parametrize(("records", "ids"), [
    ([{}, {}, {}], [0, 1, 2]),  # no ids at all: the row index, as the contract says
    ([{"id": 1}, {}, {"id": 0}], [1, "index_1", 0]),  # 1 is record 0's own id
    ([{"qid": "a"}, {"id": "a"}, {"id": "index_1"}, "not a record"], ["a", "index_1_", "index_1", 3]),
    ([{"id": 2}, {"id": "2"}, {"id": 2.0}], [2, "index_1", 2.0]),  # 2 and "2" are one id; 2.0 is "2.0"
])
def test_mugen_prediction_ids_follow_the_documented_rule(records, ids):
    from runner.benchmarks.mugen.predictions import prediction_ids

    got, notes = prediction_ids(records)
    assert got == ids and len({str(i) for i in got}) == len(got)
    assert len(notes) == sum(1 for r, i in zip(records, got, strict=True)
                             if isinstance(r, dict) and (r.get("id", r.get("qid")) not in (None, i)))
