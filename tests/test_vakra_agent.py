"""`benchmark=vakra benchmark.mode=agent` end to end: the model under test (the fake server, whose replies to
requests offering tools are scripted per query) drives the bundled MCP servers, real stdio subprocesses;
its predictions are written in VAKRA's submission format and scored by the replay evaluator, whose judges
are the scripted strict grader of test_vakra_run."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from conftest import cli, one_line_error, read_jsonl, run_in_process
from test_vakra_run import BUNDLED, DATA, overrides, records, scripted_judge

from runner.benchmarks.vakra.agent import conversation
from runner.benchmarks.vakra.mcp_env import Tool
from runner.benchmarks.vakra.shortlist import bm25_scores, shortlist
from runner.errors import ConfigError
from runner.metrics.reference import embedding_available

AGENT = ["benchmark.mode=agent"]


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def tools_step(*calls: dict[str, Any]) -> dict[str, Any]:
    return {"tool_calls": list(calls)}


def answer(text: str) -> dict[str, Any]:
    return {"content": text}


# One script per library dialogue (capability_dashboard_apis), each exercising one part of the loop.
LIBRARY = [
    # one call, then the answer
    ("Mara Ellison write", [tools_step(call("get_books_by_author", author_name="Mara Ellison")),
                            answer("Mara Ellison wrote The Salt Archive and Winter Ledger.")]),
    # two calls in one turn, executed in the order given
    ("mystery books", [tools_step(call("count_books_by_genre", genre="fantasy"),
                                  call("count_books_by_genre", genre="mystery")),
                       answer("There are 4 mystery books.")]),
    # a call that needs the previous call's result
    ("author of Winter Ledger", [tools_step(call("get_author_of_book", title="Winter Ledger")),
                                 tools_step(call("get_author_country", author_name="Mara Ellison")),
                                 answer("Canada.")]),
    # an unknown tool first, then the right one with a number written as a string (coerced)
    ("published after 2015", [tools_step(call("find_books", year=2015)),
                              tools_step(call("get_books_published_after", year="2015", limit=3)),
                              answer("Orbit of Small Things (2016), Night Ferry to Aarhus (2017) and "
                                     "The Last Almanac (2018).")]),
    # a tool error (wrong parameter name) the model gives up on
    ("J. Okonkwo", [tools_step(call("count_loans_by_member", member="J. Okonkwo")),
                    answer("I could not find that member's loans.")]),
    # never answers: the same call again and again until max_steps
    ("fantasy books", [tools_step(call("get_average_pages_by_genre", genre="horror"))]),
    # malformed JSON arguments, then a good call
    ("Paper Lanterns", [tools_step({"name": "get_book_details", "arguments": '{"title": "Paper Lan'}),
                        tools_step(call("get_book_details", title="Paper Lanterns")),
                        answer("Paper Lanterns is poetry.")]),
]


WEATHER = [
    ("highest temperature recorded at Harbor Point", [
        tools_step(call("get_max_temperature_by_station", station_name="Harbor Point")), answer("24.5 degrees.")]),
    ("rain fell in Eastbrook", [
        tools_step(call("get_total_rain_by_city_and_month", city="Eastbrook", month="2024-03")), answer("37.2 mm.")]),
    ("higher than 500 metres", [
        tools_step(call("get_stations_above_elevation", min_elevation="500")),
        answer("Signal Hill, Mill Ridge and High Tarn.")]),
    # answers without looking anything up, and wrongly
    ("warmer than 20 degrees", [answer("About 12.")]),
]


def model_requests(fake_llm: Any) -> list[dict[str, Any]]:
    return [b for b in fake_llm.requests if b.get("tools")]


def first_request(fake_llm: Any, query: str) -> dict[str, Any]:
    """The model's first request for the dialogue whose last query holds `query`."""
    def last_query(body: dict[str, Any]) -> str:
        return next(str(m["content"]) for m in reversed(body["messages"]) if m["role"] == "user")
    return next(b for b in model_requests(fake_llm) if query in last_query(b))


def predictions(run_dir: Path, capability: str, domain: str) -> dict[str, dict[str, Any]]:
    rows = json.loads((run_dir / "predictions" / capability / f"{domain}.json").read_text(encoding="utf-8"))
    return {r["uuid"]: r for r in rows}


def sequence(row: dict[str, Any]) -> list[tuple[str, Any]]:
    (turn,) = row["output"]
    return [(c["name"], c["arguments"]) for c in turn["sequence"]["tool_call"]]


@pytest.fixture
def library_run(fake_llm: Any, tmp_path: Path) -> tuple[Any, Path, dict[str, Any]]:
    fake_llm.default = scripted_judge
    fake_llm.tool_scripts = LIBRARY + WEATHER
    run_dir = tmp_path / "run"
    results = run_in_process(overrides(fake_llm.base_url, run_dir, *AGENT, "benchmark.max_steps=3"), run_dir)
    return fake_llm, run_dir, results


def test_the_model_drives_the_tools_and_its_predictions_are_written_and_scored(library_run) -> None:
    fake_llm, run_dir, results = library_run
    pred = predictions(run_dir, "capability_dashboard_apis", "library")
    assert list(pred) == [f"lib-00{i}" for i in range(1, 8)]  # ground-truth order
    assert sequence(pred["lib-001"]) == [("get_books_by_author", {"author_name": "Mara Ellison"})]
    assert sequence(pred["lib-002"]) == [("count_books_by_genre", {"genre": "fantasy"}),
                                         ("count_books_by_genre", {"genre": "mystery"})]
    assert sequence(pred["lib-003"]) == [("get_author_of_book", {"title": "Winter Ledger"}),
                                         ("get_author_country", {"author_name": "Mara Ellison"})]
    assert sequence(pred["lib-004"]) == [("find_books", {"year": 2015}),
                                         ("get_books_published_after", {"year": "2015", "limit": 3})]
    assert sequence(pred["lib-006"]) == [("get_average_pages_by_genre", {"genre": "horror"})] * 3
    assert sequence(pred["lib-007"]) == [("get_book_details", '{"title": "Paper Lan'),
                                         ("get_book_details", {"title": "Paper Lanterns"})]
    assert all(r["status"] == "success" and r["output"][0]["turn_id"] == 0 for u, r in pred.items() if u != "lib-006")
    assert pred["lib-006"]["status"] == "success" and pred["lib-006"]["output"][0]["answer"] == ""
    assert "max_steps" in pred["lib-006"]["error"]
    assert pred["lib-003"]["output"][0]["answer"] == "Canada."
    # By hand: 001-004 and 007 answer right from a ground-truth response (exact match, grounded); 005 gave
    # up (the correctness judge finds no 3); 006 never answered. 5 of 7.
    lib = results["tasks"]["library"]
    assert lib["metrics"] == {"mean_dialogue_score": 5 / 7, "num_correct": 5.0, "num_samples": 7}
    assert lib["n_errors"] == 0
    scores = {i: r["scores"]["dialogue_score"] for i, r in records(run_dir, "library").items()}
    assert scores == {"lib-001": 1.0, "lib-002": 1.0, "lib-003": 1.0, "lib-004": 1.0, "lib-005": 0.0,
                      "lib-006": 0.0, "lib-007": 1.0}
    weather = predictions(run_dir, "capability_dashboard_apis", "weather")
    assert {u: sequence(r) for u, r in weather.items()} == {
        "wx-001": [("get_max_temperature_by_station", {"station_name": "Harbor Point"})],
        "wx-002": [("get_total_rain_by_city_and_month", {"city": "Eastbrook", "month": "2024-03"})],
        "wx-003": [("get_stations_above_elevation", {"min_elevation": "500"})], "wx-004": []}
    # wx-001..003 right from the tools; wx-004 answered 12 without a call (5 is right).
    assert results["tasks"]["weather"]["metrics"] == {"mean_dialogue_score": 0.75, "num_correct": 3.0,
                                                      "num_samples": 4}
    assert results["summary"]["n_correct"] == 8.0 and results["summary"]["mean_dialogue_score"] == 8 / 11
    report = json.loads((run_dir / "vakra_results.json").read_text(encoding="utf-8"))
    assert report["prediction_dir"] == str(run_dir / "predictions" / "capability_dashboard_apis")
    assert report["summary"]["n_correct"] == 8.0
    # One model call per step: library 2 + 2 + 3 + 3 + 2 + 3 (max_steps) + 3, weather 2 + 2 + 2 + 1.
    assert len(model_requests(fake_llm)) == 25
    assert results["usage"]["fake-model"]["requests"] == 25


def test_each_tool_result_goes_back_to_the_model_in_order(library_run) -> None:
    fake_llm, run_dir, _ = library_run
    first = first_request(fake_llm, "mystery books")
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert {t["function"]["name"] for t in first["tools"]} == {
        "get_books_by_author", "count_books_by_genre", "get_author_of_book", "get_author_country",
        "get_authors_by_country", "get_book_details", "get_books_published_after", "get_average_pages_by_genre",
        "count_loans_by_member"}
    second = next(b for b in model_requests(fake_llm) if "mystery books" in json.dumps(b["messages"])
                  and len(b["messages"]) > 2)
    assistant, *tool_messages = second["messages"][2:]
    ids = [c["id"] for c in assistant["tool_calls"]]
    assert [m["tool_call_id"] for m in tool_messages] == ids
    assert [json.loads(m["content"]) for m in tool_messages] == [{"count": 3}, {"count": 4}]
    agent = records(run_dir, "library")["lib-002"]["extra"]["agent"]
    assert [c["response"] for c in agent["calls"]] == [m["content"] for m in tool_messages]
    assert agent["steps"] == 2 and agent["answer"] == "There are 4 mystery books."


def test_unknown_tools_tool_errors_and_bad_arguments_go_back_to_the_model(library_run) -> None:
    _, run_dir, _ = library_run
    recs = records(run_dir, "library")
    unknown = recs["lib-004"]["extra"]["agent"]["calls"]
    assert unknown[0]["error"] and unknown[0]["response"] == "Error: the MCP server offers no tool named 'find_books'"
    assert not unknown[1]["error"] and "Orbit of Small Things" in unknown[1]["response"]
    failed = recs["lib-005"]["extra"]["agent"]["calls"]
    assert failed[0]["error"] and failed[0]["response"].startswith("Error:") and "member_name" in failed[0]["response"]
    malformed = recs["lib-007"]["extra"]["agent"]["calls"]
    assert malformed[0]["error"] and "not valid JSON" in malformed[0]["response"]
    assert recs["lib-005"]["status"] == "ok" and recs["lib-005"]["scores"]["dialogue_score"] == 0.0


def test_max_steps_ends_the_loop_and_is_recorded(library_run) -> None:
    fake_llm, run_dir, _ = library_run
    agent = records(run_dir, "library")["lib-006"]["extra"]["agent"]
    assert agent["max_steps_reached"] is True and agent["steps"] == 3 and agent["answer"] == ""
    assert len([b for b in model_requests(fake_llm) if "fantasy books" in json.dumps(b["messages"])]) == 3
    finished = records(run_dir, "library")["lib-001"]["extra"]["agent"]
    assert finished["max_steps_reached"] is False and finished["steps"] == 2


def test_a_resumed_run_asks_nothing_again_and_keeps_the_predictions(library_run) -> None:
    fake_llm, run_dir, results = library_run
    before = (run_dir / "predictions" / "capability_dashboard_apis" / "library.json").read_text(encoding="utf-8")
    fake_llm.reset()
    again = run_in_process(overrides(fake_llm.base_url, run_dir, *AGENT, "benchmark.max_steps=3"), run_dir)
    assert fake_llm.requests == []
    assert again["tasks"]["library"]["metrics"] == results["tasks"]["library"]["metrics"]
    assert (run_dir / "predictions" / "capability_dashboard_apis" / "library.json").read_text("utf-8") == before


def test_earlier_turns_are_the_conversation_and_the_policy_a_system_message(fake_llm, tmp_path) -> None:
    fake_llm.default = scripted_judge
    fake_llm.tool_scripts = [("that station automated", [
        tools_step(call("query_weather", question="When was Harbor Point station automated?", n_results=1)),
        answer("It was automated in 2009.")])]
    run_dir = tmp_path / "run"
    results = run_in_process(overrides(fake_llm.base_url, run_dir, *AGENT, "benchmark.capability=capability_multiturn",
                                       "benchmark.domains=[weather]"), run_dir)
    first = first_request(fake_llm, "that station automated")
    assert [(m["role"], m["content"]) for m in first["messages"][1:]] == [
        ("system", "Tool usage constraint: Use the document search for questions about station history."),
        ("user", "Which city is Harbor Point in?"), ("assistant", "Eastbrook"),
        ("user", "When was that station automated?")]
    assert "query_weather" in {t["function"]["name"] for t in first["tools"]}
    row = predictions(run_dir, "capability_multiturn", "weather")["mt-weather-001"]
    assert row["output"][0]["turn_id"] == 1  # the last turn, the one scored
    assert results["tasks"]["weather"]["metrics"]["mean_dialogue_score"] == 1.0


def test_capability_1_loads_the_dialogue_data_before_the_model_starts(fake_llm, tmp_path) -> None:
    fake_llm.default = scripted_judge
    fake_llm.tool_scripts = [("published after 2010", [
        answer("never sent: the runner's get_data turn is the conversation's first assistant turn"),
        tools_step(call("filter_data", data_label="retrieved_data_1", key_name="year", operator="greater_than",
                        value="2010")),
        tools_step(call("aggregate_data", data_label="filtered_data_1", key_name="pages", operation="mean")),
        answer("The average is 294.8889 pages.")])]
    run_dir = tmp_path / "run"
    results = run_in_process(overrides(fake_llm.base_url, run_dir, *AGENT, "benchmark.capability=capability_bi_apis",
                                       "benchmark.limit=1"), run_dir)
    first = first_request(fake_llm, "published after 2010")
    assert [m["role"] for m in first["messages"]] == ["system", "user", "assistant", "tool"]
    setup, result = first["messages"][2], first["messages"][3]
    assert setup["tool_calls"][0]["function"] == {"name": "get_data",
                                                  "arguments": json.dumps({"tool_universe_id": "bi-library-001"})}
    assert json.loads(result["content"])["handle"] == "retrieved_data_1"
    row = predictions(run_dir, "capability_bi_apis", "library")["bi-library-001"]
    assert [name for name, _ in sequence(row)] == ["filter_data", "aggregate_data"]  # get_data is the runner's
    assert results["tasks"]["library"]["metrics"]["mean_dialogue_score"] == 1.0


def test_past_max_tools_the_query_decides_which_tools_are_offered(fake_llm, tmp_path) -> None:
    fake_llm.default = scripted_judge
    fake_llm.tool_scripts = LIBRARY[:1]
    run_dir = tmp_path / "run"
    run_in_process(overrides(fake_llm.base_url, run_dir, *AGENT, "benchmark.limit=1", "benchmark.domains=[library]",
                             "benchmark.max_tools=3", "benchmark.shortlist=bm25"), run_dir)
    offered = [t["function"]["name"] for t in first_request(fake_llm, "Mara Ellison")["tools"]]
    assert len(offered) == 3 and "get_books_by_author" in offered
    agent = records(run_dir, "library")["lib-001"]["extra"]["agent"]
    assert agent["offered_tools"] == offered and agent["shortlist"] == {"method": "bm25", "kept": 3, "of": 9}


def test_bm25_scores_match_the_formula_by_hand() -> None:
    # Three documents; query "red fox". N=3; "red" in docs 0 and 1 (df=2), "fox" in doc 0 only (df=1).
    # idf(red) = ln(1 + (3-2+0.5)/(2+0.5)) = ln(1.6); idf(fox) = ln(1 + 2.5/1.5) = ln(8/3).
    # Lengths 2, 4, 3: avgdl = 3. tf part = tf*(k1+1) / (tf + k1*(1 - b + b*len/avgdl)), k1=1.5, b=0.75.
    docs = ["red fox", "red red blue green", "blue green sky"]
    def part(tf: int, length: int) -> float:
        return tf * 2.5 / (tf + 1.5 * (0.25 + 0.75 * length / 3))
    expected = [math.log(1.6) * part(1, 2) + math.log(8 / 3) * part(1, 2), math.log(1.6) * part(2, 4), 0.0]
    assert bm25_scores("Red fox?", docs) == pytest.approx(expected)


@pytest.mark.skipif(not embedding_available(), reason="the metrics extra (sentence-transformers and its "
                    "bundled model) is not installed: bash scripts/install.sh metrics")
def test_embedding_shortlist_puts_the_tool_that_answers_first() -> None:
    specs = json.loads((BUNDLED / "domains" / "library.tools.json").read_text(encoding="utf-8"))
    tools = [Tool(t["name"], t["description"], {"type": "object", "properties": t["params"]})
             for t in specs]
    picked = shortlist("How many loans has the member J. Okonkwo taken out?", tools, 2, "embedding")
    assert picked.method == "embedding" and picked.offered_of == 9 and len(picked.tools) == 2
    assert picked.tools[0].name == "count_loans_by_member"


def test_a_crashed_server_fails_its_dialogue_and_is_restarted_for_the_next(fake_llm, tmp_path) -> None:
    config = tmp_path / "mcp.yaml"
    config.write_text(f"tasks:\n  2:\n    command: python\n    args: [{BUNDLED / 'server.py'}]\n"
                      "    env: {CAPABILITY_ID: '2', VAKRA_BUNDLED_TEST_HOOKS: '1'}\n", encoding="utf-8")
    fake_llm.default = scripted_judge
    crash = ("Mara Ellison write", [tools_step(call("crash_server")), answer("unreachable")])
    fake_llm.tool_scripts = [crash, *LIBRARY[1:3]]
    run_dir = tmp_path / "run"
    args = [*AGENT, "benchmark.domains=[library]", "benchmark.limit=3", f"benchmark.mcp_config={config}",
            "benchmark.agent_concurrency=1"]  # one dialogue at a time: the crash hits only its own
    results = run_in_process(overrides(fake_llm.base_url, run_dir, *args), run_dir)
    lib = results["tasks"]["library"]
    assert lib["error_ids"] == ["lib-001"] and lib["metrics"]["mean_dialogue_score"] == 1.0
    failed = records(run_dir, "library")["lib-001"]
    assert "MCP server stopped during the dialogue" in failed["error"]
    assert failed["extra"]["agent"]["calls"] == [] or failed["extra"]["agent"]["calls"][0]["name"] == "crash_server"
    assert predictions(run_dir, "capability_dashboard_apis", "library")["lib-001"]["status"] == "error"
    # The resumed run asks the failed dialogue again, and only it.
    fake_llm.tool_scripts = LIBRARY[:3]
    fake_llm.reset()
    again = run_in_process(overrides(fake_llm.base_url, run_dir, *args), run_dir)
    assert {json.dumps(b["messages"]).count("Mara Ellison write") > 0 for b in model_requests(fake_llm)} == {True}
    assert again["tasks"]["library"]["n_errors"] == 0
    assert again["tasks"]["library"]["metrics"]["num_correct"] == 3.0
    assert read_jsonl(run_dir / "samples" / "library.jsonl")[-1]["id"] == "lib-001"


def test_a_dialogue_without_an_agent_input_is_a_missing_prediction(fake_llm, tmp_path) -> None:
    inputs = tmp_path / "input"
    inputs.mkdir()
    items = json.loads((DATA / "capability_dashboard_apis" / "input" / "weather.json").read_text(encoding="utf-8"))
    (inputs / "weather.json").write_text(json.dumps(items[1:]), encoding="utf-8")
    fake_llm.default = scripted_judge
    run_dir = tmp_path / "run"
    results = run_in_process(overrides(fake_llm.base_url, run_dir, *AGENT, "benchmark.domains=[weather]",
                                       f"benchmark.input_root={inputs}"), run_dir)
    rec = records(run_dir, "weather")["wx-001"]
    assert rec["extra"]["missing_prediction"] and "no agent input for uuid wx-001" in rec["extra"]["note"]
    assert results["tasks"]["weather"]["missing_prediction_uuids"] == ["wx-001"]


def test_conversation_of_an_input_item() -> None:
    item = {"uuid": "u", "dialogue": {"turns": [{"turn_id": 0, "query": "q0", "answer": [["a0"]]},
                                                {"turn_id": 1, "query": "q1", "answer": ""},
                                                {"turn_id": 2, "query": "q2"}]},
            "additional_instructions": "  "}
    assert conversation(item, "sys") == [{"role": "system", "content": "sys"}, {"role": "user", "content": "q0"},
                                         {"role": "assistant", "content": '[["a0"]]'},
                                         {"role": "user", "content": "q1"}, {"role": "user", "content": "q2"}]


@pytest.mark.parametrize(("extra", "message"), [
    (["benchmark.replay=false"], "agent mode runs the model on live MCP servers"),
    (["benchmark.input_root=/nonexistent/inputs"], "benchmark.input_root=/nonexistent/inputs: no such directory"),
    (["benchmark.max_steps=0"], "benchmark.max_steps: must be a positive whole number"),
    (["benchmark.shortlist=bm52"], "did you mean 'bm25'"),
])
def test_bad_agent_settings_stop_the_run_with_one_line(fake_llm, tmp_path, extra, message) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        run_in_process(overrides(fake_llm.base_url, tmp_path / "run", *AGENT, *extra), tmp_path / "run")
    with pytest.raises(ConfigError, match="did you mean 'agent'"):
        run_in_process(overrides(fake_llm.base_url, tmp_path / "run", "benchmark.mode=agnet"), tmp_path / "run")


def test_wandb_gets_each_dialogue_s_trajectory(fake_llm, tmp_path, monkeypatch) -> None:
    from test_wandb_tracker import read_offline_run

    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    fake_llm.default = scripted_judge
    fake_llm.tool_scripts = LIBRARY[:2]
    run_dir = tmp_path / "run"
    run_in_process([*overrides(fake_llm.base_url, run_dir, *AGENT, "benchmark.domains=[library]", "benchmark.limit=2"),
                    "tracker=wandb"], run_dir)
    (sync,) = run_dir.glob("wandb/offline-run-*")
    table = read_offline_run(sync)["tables"]["vakra/library/trajectories"]
    rows = {r[0]: dict(zip(table["columns"], r, strict=True)) for r in table["data"]}
    assert set(rows) == {"lib-001", "lib-002"}
    assert json.loads(rows["lib-002"]["tool_calls"]) == [
        {"name": "count_books_by_genre", "arguments": {"genre": "fantasy"}, "response": '{\n  "count": 3\n}'},
        {"name": "count_books_by_genre", "arguments": {"genre": "mystery"}, "response": '{\n  "count": 4\n}'}]
    assert rows["lib-002"]["steps"] == 2 and rows["lib-002"]["dialogue_score"] == 1.0
    assert [m["role"] for m in json.loads(rows["lib-001"]["messages"])] == ["system", "user", "assistant", "tool",
                                                                              "assistant"]


def test_rejudging_an_agent_run_is_refused_with_the_replay_command(fake_llm, tmp_path) -> None:
    fake_llm.default = scripted_judge
    fake_llm.tool_scripts = LIBRARY[:1]
    run_dir = tmp_path / "run"
    first = cli(overrides(fake_llm.base_url, run_dir, *AGENT, "benchmark.domains=[library]", "benchmark.limit=1"))
    assert first.returncode == 0, first.stderr
    # The first run's inline panel held a key, which runs never save: the rejudge names its panel again.
    panel = next(o for o in overrides(fake_llm.base_url, run_dir) if o.startswith("judges.panel="))
    proc = cli([str(run_dir), panel, f"hydra.run.dir={tmp_path / 'again'}"], module="runner.rejudge", timeout=120)
    assert "override of model.api_key held a secret" in proc.stderr  # the model is not asked: no matter
    assert proc.returncode == 2
    assert f"benchmark.mode=replay benchmark.pred_root={run_dir}/predictions/<capability>" in one_line_error(proc)


def test_a_model_call_that_keeps_failing_records_the_dialogue_as_an_error_with_its_trajectory(fake_llm,
                                                                                               tmp_path) -> None:
    fake_llm.default = scripted_judge
    fake_llm.tool_scripts = LIBRARY[:2]
    fake_llm.faults = ["500"] * 4  # every attempt (1 + max_retries=3) of each distinct request
    fake_llm.fault_only_matching = "mystery books"
    run_dir = tmp_path / "run"
    results = run_in_process(overrides(fake_llm.base_url, run_dir, *AGENT, "benchmark.domains=[library]",
                                       "benchmark.limit=2", "benchmark.agent_concurrency=1", "model.backoff=0.01"),
                             run_dir)
    assert results["tasks"]["library"]["error_ids"] == ["lib-002"]
    failed = records(run_dir, "library")["lib-002"]
    assert failed["error"].startswith("model call failed after 4 attempt(s)")
    assert [m["role"] for m in failed["extra"]["agent"]["messages"]] == ["system", "user"]
    row = predictions(run_dir, "capability_dashboard_apis", "library")["lib-002"]
    assert row["status"] == "error" and row["error"] == failed["error"]
