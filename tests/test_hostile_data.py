"""Issue 29 (faults and hostile input change no number) and issue 31 item 6: repeated sample ids, MUGEN
records without ids, VAKRA MCP servers that crash or hang mid-replay, and `runner.rescore` reading exactly
what results.json describes. Real data files, the fake OpenAI-compatible server, real stdio MCP servers."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    TESTS,
    cli,
    one_line_error,
    read_jsonl,
    run_in_process,
    run_overrides,
    write_jsonl,
)

from runner.benchmarks.vakra.mcp_env import MCPSession, ServerSpec
from runner.errors import DataError

FLAKY = TESTS / "fixtures" / "flaky_mcp_server.py"

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
    return run_overrides(fake_llm.base_url, run_dir, "benchmark.num_fewshot=0", *extra, data_dir=data,
                         tasks=["mcqa_single_answer"])


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
    proc = cli(run_overrides("http://127.0.0.1:9/v1", tmp_path / "run", "benchmark.num_fewshot=0", judges=0,
                             data_dir=data, tasks=["mcqa_single_answer"]))  # refused before any request
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


# ---------------------------------------------------------------- VAKRA: a failed environment is no score


def flaky(**env: str) -> ServerSpec:
    return ServerSpec(command=sys.executable, args=(str(FLAKY),), env={"MCP_DOMAIN": "weather", **env},
                      label="flaky server")


def test_a_tool_s_error_answer_is_data_and_a_call_without_answer_is_a_fault() -> None:
    async def scenario() -> None:
        async with MCPSession(flaky(FAULT="hang", FAULT_ON="get_station_city"), start_timeout=20) as session:
            tool = await session.call_tool("tool_error", {})
            refused = await session.call_tool("protocol_error", {})
            good = await session.call_tool("get_stations_in_city", {"city": "Eastbrook"}, timeout=5)
            assert (tool.is_error, tool.text, tool.error, tool.fault) == (True, "Error: no such record", None, False)
            assert refused.error is not None and "-32602" in refused.error and not refused.fault
            assert not good.is_error and not good.fault and "Mill Ridge" in good.text and session.alive
            hung = await session.call_tool("get_station_city", {"station_name": "Mill Ridge"}, timeout=1)
            assert hung.fault and "no reply from flaky server within 1s" in str(hung.error)
            later = await session.call_tool("get_stations_in_city", {"city": "Eastbrook"}, timeout=5)
            assert session.alive and later.text == good.text  # a slow call does not cost the others their server
        env = {"FAULT": "exit", "FAULT_ON": "get_station_city", "FAULT_AFTER": "1"}
        async with MCPSession(flaky(**env), start_timeout=20) as session:
            first = await session.call_tool("get_station_city", {"station_name": "Mill Ridge"}, timeout=5)
            crashed = await session.call_tool("get_station_city", {"station_name": "Mill Ridge"}, timeout=5)
            after = await session.call_tool("get_stations_in_city", {"city": "Eastbrook"}, timeout=5)
            assert not first.fault and "Eastbrook" in first.text
            assert crashed.fault and "exited during the call" in str(crashed.error)
            assert "flaky server: exit on call 2" in str(crashed.error)  # its last stderr line
            assert after.fault and "is not running" in str(after.error)

    asyncio.run(scenario())


def flaky_config(tmp_path: Path, **env: str) -> Path:
    config = tmp_path / "mcp.yaml"
    config.write_text(json.dumps({"tasks": {2: {"command": "python", "args": [str(FLAKY)], "env": env}}}))
    return config


@pytest.mark.parametrize(("fault", "on", "after", "failed", "where"), [
    # The prediction's call answers; the server dies on the ground truth's: the case.
    ("exit", "count_readings_above_temperature", "1", "wx-004", "ground-truth call 1 of 1 (turn 1)"),
    ("hang", "get_stations_above_elevation", "0", "wx-003", "predicted call 1 of 1"),
])
def test_a_server_that_crashes_or_hangs_mid_replay_makes_an_error_and_a_healthy_rerun_the_healthy_score(
        fake_llm, tmp_path, fault, on, after, failed, where) -> None:
    from test_vakra_run import overrides as vakra_overrides
    from test_vakra_run import records, scripted_judge

    marker = tmp_path / "broken"
    marker.write_text("the server fails while this file exists")
    config = flaky_config(tmp_path, FAULT=fault, FAULT_ON=on, FAULT_AFTER=after, FAULT_MARKER=str(marker))
    fake_llm.default = scripted_judge
    run_dir = tmp_path / "run"
    args = vakra_overrides(fake_llm.base_url, run_dir, f"benchmark.mcp_config={config}", "benchmark.domains=[weather]",
                           "benchmark.tool_timeout=1", "benchmark.replay_concurrency=1")
    weather = run_in_process(args, run_dir)["tasks"]["weather"]
    # Healthy, the four dialogues score 1, 0, 1, 1; the failed one is an error, not a 0: 2 of the other 3.
    assert (weather["n"], weather["n_errors"], weather["error_ids"]) == (4, 1, [failed])
    assert weather["metrics"] == {"mean_dialogue_score": pytest.approx(2 / 3), "num_correct": 2.0, "num_samples": 4}
    record = records(run_dir, "weather")[failed]
    assert record["status"] == "error" and record["scores"] == {} and f"({where}: {on})" in record["error"]
    assert ("exited during the call" if fault == "exit" else "no reply from") in record["error"]

    marker.unlink()  # the server is healthy again: the re-run asks the failed dialogue, and only it
    fake_llm.reset()
    weather = run_in_process(args, run_dir)["tasks"]["weather"]
    assert (weather["n"], weather["n_errors"]) == (4, 0)
    assert weather["metrics"] == {"mean_dialogue_score": 0.75, "num_correct": 3.0, "num_samples": 4}
    assert fake_llm.count == 1  # its exact match passes: the groundedness judge alone
    assert records(run_dir, "weather")[failed]["scores"]["dialogue_score"] == 1.0


def test_in_agent_mode_a_hung_tool_is_never_the_model_s_answer_but_an_error(fake_llm, tmp_path) -> None:
    from test_vakra_agent import AGENT, WEATHER
    from test_vakra_run import overrides as vakra_overrides
    from test_vakra_run import records, scripted_judge

    marker = tmp_path / "broken"
    marker.write_text("")
    config = flaky_config(tmp_path, FAULT="hang", FAULT_ON="get_stations_above_elevation", FAULT_MARKER=str(marker))
    fake_llm.default = scripted_judge
    fake_llm.tool_scripts = WEATHER
    run_dir = tmp_path / "run"
    args = vakra_overrides(fake_llm.base_url, run_dir, *AGENT, f"benchmark.mcp_config={config}",
                           "benchmark.domains=[weather]", "benchmark.tool_timeout=1")
    weather = run_in_process(args, run_dir)["tasks"]["weather"]
    assert (weather["n_errors"], weather["error_ids"]) == (1, ["wx-003"])
    error = records(run_dir, "weather")["wx-003"]["error"]
    assert "MCP server stopped during the dialogue" in error and "within 1s" in error
    assert not any("no reply from" in json.dumps(b["messages"]) for b in fake_llm.requests)

    marker.unlink()
    weather = run_in_process(args, run_dir)["tasks"]["weather"]
    assert weather["n_errors"] == 0 and records(run_dir, "weather")["wx-003"]["scores"]["dialogue_score"] == 1.0


# ---------------------------------------------------------------- rescore reads what results.json describes


def test_rescore_scores_only_the_run_s_selection_after_a_rerun_with_a_lower_limit_and_fewer_tasks(fake_llm, tmp_path):
    from runner.run.rescore import rescored

    data = tmp_path / "data"
    write_jsonl(data / "mcqa_single_answer.jsonl", mcq_rows(20, [f"q{i}" for i in range(20)]))
    write_jsonl(data / "hallucination_detection.jsonl", [
        {"id": f"h{i}", "Question": QUESTIONS[i], "Answer": "ESA.", "label": i % 2 == 0} for i in range(4)])
    fake_llm.default = "A"
    run_dir = tmp_path / "run"
    first = run_in_process(eve_args(fake_llm, data, run_dir, "benchmark.tasks=[mcqa_single_answer,"
                                                             "hallucination_detection]"), run_dir)
    assert first["tasks"]["mcqa_single_answer"]["n"] == 20
    again = run_in_process(eve_args(fake_llm, data, run_dir, "benchmark.limit=5"), run_dir)
    # The first five rows: gold A, A, A, A, B; every reply A: 4/5 over n=5, as results.json says.
    assert (again["tasks"]["mcqa_single_answer"]["n"], again["tasks"]["mcqa_single_answer"]["metrics"]) == \
        (5, {"accuracy": 0.8})
    tasks, summary, left_out = rescored(run_dir)
    assert tasks == again["tasks"] and summary["headline"] == {"mcqa_single_answer": 0.8}
    assert left_out == {"mcqa_single_answer": {"other_configuration": 0, "not_selected": 15},
                        "hallucination_detection": {"other_configuration": 0, "not_selected": 4}}


def test_rescore_after_an_interrupted_refresh_scores_only_the_current_configuration(fake_llm, tmp_path):
    data = tmp_path / "data"
    write_jsonl(data / "mcqa_single_answer.jsonl", mcq_rows(20, [f"q{i}" for i in range(20)]))
    # The model answers A at temperature 0.7 (the refreshed configuration) and B at 0 (the first one).
    fake_llm.default = lambda body: "A" if body.get("temperature") == 0.7 else "B"
    run_dir = tmp_path / "run"
    first = run_in_process(eve_args(fake_llm, data, run_dir, "model.params.temperature=0"), run_dir)
    assert first["tasks"]["mcqa_single_answer"]["metrics"] == {"accuracy": 0.2}  # gold B on 4 of 20
    refreshed = cli(eve_args(fake_llm, data, run_dir, "model.params.temperature=0.7", "resume=refresh"))
    assert refreshed.returncode == 0, refreshed.stderr
    samples = run_dir / "samples" / "mcqa_single_answer.jsonl"
    lines = samples.read_text(encoding="utf-8").splitlines(keepends=True)
    # What a refresh killed after ten samples leaves: the first configuration's 20 records, then the new
    # configuration's records of q0..q9 (.hydra/config.yaml is the new configuration's, saved when it started).
    samples.write_text("".join(lines[:20] + [ln for ln in lines[20:] if json.loads(ln)["id"] in
                                             {f"q{i}" for i in range(10)}]), encoding="utf-8")
    proc = cli([str(run_dir), "--write"], module="runner.rescore")
    assert proc.returncode == 0, proc.stderr
    # q0..q9 answered A: gold A on 8 of them (q4, q9 are B): 8/10, over n=10. Mixing in q10..q19's stale B
    # replies (right on q14, q19) made it 10/20 = 0.5.
    block = json.loads(proc.stdout)["mcqa_single_answer"]
    assert (block["n"], block["metrics"]) == (10, {"accuracy": 0.8})
    assert "left out 10 record(s)" in proc.stderr and "10 made with another configuration" in proc.stderr
    results = json.loads((run_dir / "results.json").read_text())
    assert results["tasks"]["mcqa_single_answer"]["n"] == 10
    assert results["rescore"] == {"left_out": {"mcqa_single_answer": {"other_configuration": 10,
                                                                      "not_selected": 0}}}


def test_win_rate_samples_are_the_paired_table_s_places_when_model_a_s_ids_repeat(fake_llm, tmp_path):
    import csv

    from test_win_rate import run

    def write(path: Path, rows: list[tuple[Any, str, str]]) -> Path:
        with open(path, "w", encoding="utf-8", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(["id", "Question", "target", "filtered_resps"])
            writer.writerows([(i, q, "ESA.", a) for i, q, a in rows])
        return path

    # Model A's file gives two different questions the id 7 ("7" and 7 alike): its ids cannot name samples.
    a = write(tmp_path / "a.csv", [("7", QUESTIONS[0], "[q2] ESA."), (7, QUESTIONS[1], "[q2] ESA."),
                                   ("9", QUESTIONS[2], "[q1] NASA.")])
    b = write(tmp_path / "b.csv", [(1, q, "[q1] JAXA.") for q in QUESTIONS[:3]])
    results, records, _ = run(fake_llm, tmp_path, ["judge1"], a=a, b=b)
    assert results["tasks"]["x_vs_y"]["n"] == 3 and fake_llm.count == 3  # every pair asked once, and counted
    assert sorted(r["id"] for r in records) == [0, 1, 2]
