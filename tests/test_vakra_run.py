"""`benchmark=vakra` end to end: the bundled MCP server as real stdio subprocesses, the judges on the fake
OpenAI-compatible server on 127.0.0.1 (a scripted judge that reads the prompt like a strict grader)."""

from __future__ import annotations

import json
import logging
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, compose, fake_model_overrides, read_jsonl, run_in_process

from runner.config import instantiate
from runner.errors import ConfigError, EndpointError

BUNDLED = ROOT / "runner" / "benchmarks" / "vakra" / "bundled"
DATA = BUNDLED / "data"
SERVER = BUNDLED / "server.py"
_NAMES_NOT_CHECKED = {"The", "A", "An", "It", "In", "There", "This", "That", "About", "And"}


def _section(text: str, tag: str) -> str:
    match = re.search(rf"<{tag}>\n?(.*?)\n?</{tag}>", text, re.S)
    return match.group(1).strip() if match else ""


def _numbers(text: str) -> set[str]:
    return set(re.findall(r"\d+(?:\.\d+)?", text))


def scripted_judge(body: dict[str, Any]) -> str:
    """Correct: every ground-truth item is in the prediction (numbers compared as numbers). Grounded: every
    number and every capitalised name of the answer occurs in the query or the tool outputs."""
    text = next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")
    if "<ground_truth>" in text:
        prediction = _section(text, "prediction").lower()
        items = [i.strip().lower() for i in re.split(r"[;,]", _section(text, "ground_truth")) if i.strip()]
        ok = all(_numbers(i) <= _numbers(prediction) if _numbers(i) else i in prediction for i in items)
        return json.dumps({"explanation": "compared with the reference", "judgement": "correct" if ok else "incorrect"})
    if "<tool_outputs>" in text:
        evidence = f"{_section(text, 'query')} {_section(text, 'tool_outputs')}".lower()
        answer = _section(text, "answer")
        names = [w for w in re.findall(r"\b[A-Z][a-z]+\b", answer) if w not in _NAMES_NOT_CHECKED]
        ok = _numbers(answer) <= _numbers(evidence) and all(n.lower() in evidence for n in names)
        return json.dumps({"explanation": "checked against the outputs", "grounded": "yes" if ok else "no"})
    return "not a judge prompt"


def overrides(base_url: str, run_dir: Path, *extra: str) -> list[str]:
    return fake_model_overrides(base_url) + ["benchmark=vakra", "tracker=none", "progress=false",
                                             "cache.enabled=false", f"hydra.run.dir={run_dir}", *extra]


def records(run_dir: Path, domain: str) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in read_jsonl(run_dir / "samples" / f"{domain}.jsonl")}


def user_texts(fake_llm: Any) -> list[str]:
    return [m["content"] for body in fake_llm.requests for m in body["messages"] if m["role"] == "user"]


def copy_data(capability: str, tmp_path: Path) -> tuple[Path, Path]:
    gt, pred = tmp_path / "gt", tmp_path / "pred"
    shutil.copytree(DATA / capability / "groundtruth", gt)
    shutil.copytree(DATA / capability / "prediction", pred)
    return gt, pred


def test_the_default_run_scores_the_bundled_dialogues_as_computed_by_hand(fake_llm, tmp_path) -> None:
    fake_llm.default = scripted_judge
    run_dir = tmp_path / "run"
    results = run_in_process(overrides(fake_llm.base_url, run_dir), run_dir)
    lib, wx = results["tasks"]["library"], results["tasks"]["weather"]
    # library: 7 GT dialogues, lib-006 has no prediction; the 6 paired score 1,0,1,1,0,0 -> 3/6.
    assert lib["metrics"] == {"mean_dialogue_score": 0.5, "num_correct": 3.0, "num_samples": 7}
    # weather: 4 GT dialogues, all paired; they score 1,0,1,1 -> 3/4.
    assert wx["metrics"] == {"mean_dialogue_score": 0.75, "num_correct": 3.0, "num_samples": 4}
    assert (lib["n_paired"], lib["missing_prediction_uuids"], lib["extra_prediction_uuids"]) == \
        (6, ["lib-006"], ["lib-099"])
    assert lib["duplicate_uuids"] == {"groundtruth": [], "prediction": ["lib-001"]}
    assert lib["n_errors"] == lib["n_invalid"] == 0
    # Overall: n_correct 3+3 = 6 over n_samples 7+4 = 11 (the missing prediction counts as 0).
    assert results["summary"] == {"n_domains": 2, "n_paired_dialogues": 10, "n_missing_predictions": 1,
                                  "n_extra_predictions": 1, "n_samples": 11, "n_correct": 6.0,
                                  "mean_dialogue_score": pytest.approx(6 / 11), "n_errors": 0, "n_invalid": 0}

    got = records(run_dir, "library")
    steps = {u: {k: v for k, v in r["scores"].items() if k != "turn_score"} for u, r in got.items()}
    assert steps["lib-001"] == {"dialogue_score": 1.0, "exact_match": 1.0, "groundedness": 1.0}
    assert got["lib-001"]["response"].endswith("The Salt Archive and Winter Ledger.")  # the last duplicate won
    # exact match passed, the groundedness judge alone decided (7 is not in the tool output {"count": 4}).
    assert steps["lib-002"] == {"dialogue_score": 0.0, "exact_match": 1.0, "groundedness": 0.0}
    # another route to the right answer: exact match fails, correct and grounded.
    assert steps["lib-003"] == {"dialogue_score": 1.0, "exact_match": 0.0, "correctness": 1.0, "groundedness": 1.0}
    # JSON-string arguments with numbers as strings were coerced, so the responses matched exactly.
    assert got["lib-004"]["extra"]["tool_calls"]["prediction"][0]["arguments"] == {"year": 2015, "limit": 3}
    assert steps["lib-004"] == {"dialogue_score": 1.0, "exact_match": 1.0, "groundedness": 1.0}
    # a tool the server lacks is an error response, and the dialogue is still scored (wrong answer).
    (missing_tool,) = got["lib-005"]["extra"]["tool_calls"]["prediction"]
    assert missing_tool["error"] and "offers no tool named 'get_member_loans'" in missing_tool["response"]
    assert steps["lib-005"] == {"dialogue_score": 0.0, "exact_match": 0.0, "correctness": 0.0}
    # 21 predicted calls: the matching response is the first, outside the last 20; the judge sees only 20.
    assert len(got["lib-007"]["extra"]["tool_calls"]["prediction"]) == 21
    assert steps["lib-007"] == {"dialogue_score": 0.0, "exact_match": 0.0, "correctness": 1.0, "groundedness": 0.0}
    # A missing prediction is not an error: scored 0, out of the domain mean, in the summary's as 0.
    assert got["lib-006"]["status"] == "ok" and got["lib-006"]["extra"]["missing_prediction"]
    assert got["lib-006"]["scores"] == {"dialogue_score": 0.0} and got["lib-006"]["error"] is None

    texts = user_texts(fake_llm)
    # correctness for the 4 exact-match failures; groundedness for the 6 exact-match passes and the 2 correct.
    correctness = [t for t in texts if "<ground_truth>" in t]
    groundedness = [t for t in texts if "<tool_outputs>" in t]
    assert (len(texts), len(correctness), len(groundedness)) == (12, 4, 8)
    assert not any("grounded" in t for t in correctness)
    assert all("grounded" in t and "ground truth" not in t for t in groundedness)
    (paper,) = [t for t in groundedness if "Paper Lanterns" in t]
    assert "[20] " in paper and "[21] " not in paper and "2009" not in paper.split("<answer>")[0]
    assert all(body["response_format"]["type"] == "json_schema" for body in fake_llm.requests)

    report = json.loads((run_dir / "vakra_results.json").read_text())
    assert report["capability_name"] == "capability_dashboard_apis"
    assert list(report["domains"]) == ["library", "weather"]
    assert {k: report["summary"][k] for k in ("n_samples", "n_correct", "n_paired_dialogues")} == \
        {"n_samples": 11, "n_correct": 6.0, "n_paired_dialogues": 10}
    (entry,) = [d for d in report["domains"]["library"]["dialogues"] if d["uuid"] == "lib-007"]
    turn = entry["details"]["per_turn"][0]["metadata"]
    assert (turn["exactmatch_score"], turn["answer_score"], turn["groundedness_score"]) == (0.0, 1.0, 0.0)
    assert (turn["gt_steps"], turn["pred_steps"], turn["extra_steps"]) == (1, 21, 20)
    assert "last 20 of 21" in turn["score_explanation"]["exactmatch"]


def test_an_unparseable_judgement_is_a_listed_fail_and_a_failed_judge_call_an_error(fake_llm, tmp_path) -> None:
    fake_llm.default = scripted_judge
    fake_llm.rules = [(r"<tool_outputs>.*24\.5", "Looks grounded to me.")]  # wx-001: no JSON at all
    fake_llm.faults = ["500", "500"]
    fake_llm.fault_only_matching = "Signal Hill, Mill Ridge and High Tarn"  # wx-003: the judge call fails
    run_dir = tmp_path / "run"
    panel = (f"judges.panel=[{{name:judge1,model:openai/judge1,api_base:'{fake_llm.base_url}',api_key:k,"
             "max_retries:1,backoff:0.01,timeout:5}]")
    results = run_in_process(overrides(fake_llm.base_url, run_dir, panel, "benchmark.domains=[weather]"), run_dir)
    wx = results["tasks"]["weather"]
    # wx-001 invalid (0), wx-002 incorrect (0), wx-004 correct (1): 1/3 over the scored pairs. wx-003's judge
    # call failed after its retries: no verdict, so an error (out of the domain mean, 0 in the summary's).
    assert wx["metrics"] == {"mean_dialogue_score": pytest.approx(1 / 3), "num_correct": 1.0, "num_samples": 4}
    assert (wx["n_invalid"], wx["invalid_ids"]) == (1, ["wx-001"])
    assert (wx["n_errors"], wx["error_ids"], wx["n_paired"]) == (1, ["wx-003"], 3)
    got = records(run_dir, "weather")
    assert got["wx-001"]["status"] == "invalid"
    assert got["wx-001"]["judgements"][0]["status"] == "invalid"
    assert got["wx-001"]["judgements"][0]["raw"] == "Looks grounded to me."
    assert got["wx-003"]["status"] == "error" and "500" in got["wx-003"]["error"]
    assert results["summary"]["n_invalid"] == 1 and results["summary"]["n_errors"] == 1
    assert results["summary"]["mean_dialogue_score"] == pytest.approx(1 / 4)


JUDGE_CALLS = {"lib-001": 1, "lib-002": 1, "lib-003": 2, "lib-004": 1, "lib-005": 1, "lib-007": 2, "lib-006": 0}


def test_a_resumed_run_redoes_only_unfinished_dialogues_and_finds_new_predictions(fake_llm, tmp_path) -> None:
    fake_llm.default = scripted_judge
    gt, pred = copy_data("capability_dashboard_apis", tmp_path)
    run_dir = tmp_path / "run"
    args = overrides(fake_llm.base_url, run_dir, f"benchmark.gt_root={gt}", f"benchmark.pred_root={pred}",
                     "benchmark.domains=[library]")
    first = run_in_process(args, run_dir)
    assert fake_llm.count == 8 and first["tasks"]["library"]["missing_prediction_uuids"] == ["lib-006"]

    samples = run_dir / "samples" / "library.jsonl"
    lines = samples.read_text().splitlines(keepends=True)
    dropped = json.loads(lines[-1])["id"]  # as if the run had been killed before this dialogue finished
    samples.write_text("".join(lines[:-1]))
    rows = json.loads((pred / "library.json").read_text())
    rows.append({"uuid": "lib-006", "output": [{"turn_id": 0, "answer": "472.0 pages on average.", "sequence": {
        "tool_call": [{"name": "get_average_pages_by_genre", "arguments": {"genre": "fantasy"}}]}}]})
    (pred / "library.json").write_text(json.dumps(rows))
    fake_llm.reset()
    second = run_in_process(args, run_dir)
    assert fake_llm.count == JUDGE_CALLS[dropped] + 1  # the dropped dialogue, and lib-006 (exact match)
    lib = second["tasks"]["library"]
    # lib-006 now scores 1 (472.0 is in its tool output): 4 correct of 7 paired.
    assert lib["metrics"] == {"mean_dialogue_score": pytest.approx(4 / 7), "num_correct": 4.0, "num_samples": 7}
    assert (lib["n_paired"], lib["missing_prediction_uuids"]) == (7, [])
    assert second["summary"]["n_missing_predictions"] == 0


def _weather_pred(uuid: str, turns: list[dict[str, Any]]) -> dict[str, Any]:
    return {"uuid": uuid, "output": turns}


def test_bad_input_fails_only_the_dialogue_or_domain_it_is_in(fake_llm, tmp_path, caplog) -> None:
    fake_llm.default = scripted_judge
    gt, pred = copy_data("capability_dashboard_apis", tmp_path)
    shutil.copy(gt / "weather.json", gt / "atlantis.json")  # a domain the server does not serve
    shutil.copy(pred / "weather.json", pred / "atlantis.json")
    (gt / "broken.json").write_text("not json")
    (pred / "library.json").write_text('[{"uuid": "lib-001", "output": [')
    good = {p["uuid"]: p for p in json.loads((pred / "weather.json").read_text())}
    turn = good["wx-002"]["output"][0]
    (pred / "weather.json").write_text(json.dumps([
        _weather_pred("wx-001", []), _weather_pred("wx-002", [turn, turn]),
        _weather_pred("wx-003", [{**turn, "turn_id": 5}]), good["wx-004"]]))
    truth = json.loads((gt / "weather.json").read_text())
    truth[3]["output"][0]["sequence"]["tool_call"][0]["name"] = "count_readings_v1_weather_get"  # a stale name
    (gt / "weather.json").write_text(json.dumps(truth))
    run_dir = tmp_path / "run"
    with caplog.at_level(logging.WARNING, logger="runner"):
        results = run_in_process(overrides(fake_llm.base_url, run_dir, f"benchmark.gt_root={gt}",
                                           f"benchmark.pred_root={pred}"), run_dir)
    tasks = results["tasks"]
    assert list(tasks) == ["atlantis", "broken", "library", "weather"]
    # No library dialogue could be scored: its mean over paired dialogues is over nothing (null).
    assert tasks["library"]["metrics"] == {"mean_dialogue_score": None, "num_correct": 0.0, "num_samples": 7}
    assert tasks["library"]["n_errors"] == 7
    # weather: 3 bad predictions are errors; wx-004 is scored (exact match fails on the stale ground-truth
    # tool, but the answer is correct and grounded: 1): domain mean 1/1.
    assert tasks["weather"]["metrics"] == {"mean_dialogue_score": 1.0, "num_correct": 1.0, "num_samples": 4}
    assert tasks["weather"]["error_ids"] == ["wx-001", "wx-002", "wx-003"]
    assert tasks["atlantis"]["n_errors"] == 4 and tasks["atlantis"]["metrics"]["num_samples"] == 4
    assert tasks["broken"]["error_ids"] == ["file:broken.json"] and tasks["broken"]["metrics"]["num_samples"] == 0
    # Overall: 1 correct over 7+4+4 GT dialogues; 7+3+4+1 errors.
    assert {k: results["summary"][k] for k in ("n_samples", "n_correct", "n_paired_dialogues", "n_errors")} == \
        {"n_samples": 15, "n_correct": 1.0, "n_paired_dialogues": 1, "n_errors": 15}
    assert results["summary"]["mean_dialogue_score"] == pytest.approx(1 / 15)

    errors = {(d, r["id"]): r["error"] for d in ("weather", "library", "atlantis", "broken")
              for r in records(run_dir, d).values() if r["status"] == "error"}
    assert all("\n" not in e for e in errors.values())
    weather = {uuid: e for (d, uuid), e in errors.items() if d == "weather"}
    assert "has no turns" in weather["wx-001"] and str(pred / "weather.json") in weather["wx-001"]
    assert "has 2 turns" in weather["wx-002"]
    assert "turn_id 5 matches no ground-truth turn" in weather["wx-003"]
    library = errors[("library", "lib-001")]
    assert "not valid JSON (line 1" in library and str(pred / "library.json") in library
    assert "not valid JSON" in errors[("broken", "file:broken.json")]
    atlantis = [e for (d, _), e in errors.items() if d == "atlantis"]
    assert len(atlantis) == 4 and all("unknown MCP_DOMAIN 'atlantis'" in e for e in atlantis)
    warnings = [r.getMessage() for r in caplog.records if "atlantis" in r.getMessage()]
    assert len(warnings) == 1  # one line for the domain, not one per dialogue
    assert any("1 ground-truth call(s) of wx-004 failed on replay (first: count_readings_v1_weather_get" in
               r.getMessage() for r in caplog.records)
    assert records(run_dir, "weather")["wx-004"]["extra"]["ground_truth_errors"] == 1
    report = json.loads((run_dir / "vakra_results.json").read_text())
    assert set(report["domains"]["weather"]["errors"]) == {"wx-001", "wx-002", "wx-003"}


def test_a_server_command_that_does_not_exist_stops_the_run_before_any_request(fake_llm, tmp_path) -> None:
    config = tmp_path / "mcp.yaml"
    config.write_text("tasks:\n  2: {command: /nonexistent/vakra-server}\n")
    run_dir = tmp_path / "run"
    with pytest.raises(EndpointError) as info:
        run_in_process(overrides(fake_llm.base_url, run_dir, f"benchmark.mcp_config={config}",
                                 "benchmark.domains=[weather]"), run_dir)
    message = str(info.value)
    assert info.value.exit_code == 3 and "\n" not in message
    assert "command '/nonexistent/vakra-server' not found" in message and "fix the command" in message
    assert fake_llm.count == 0 and not (run_dir / "samples").exists()


def test_when_no_domains_server_can_start_the_run_stops_with_exit_3(fake_llm, tmp_path) -> None:
    # The command exists, but the bundled server refuses every domain it is started for (it knows none of
    # them): no MCP server is able to start, so nothing could be scored. One broken domain among working
    # ones only fails its own dialogues (test_bad_input_fails_only_the_dialogue_or_domain_it_is_in).
    gt, pred = copy_data("capability_dashboard_apis", tmp_path)
    for root in (gt, pred):
        shutil.copy(root / "weather.json", root / "atlantis.json")
        shutil.copy(root / "weather.json", root / "lemuria.json")
    run_dir = tmp_path / "run"
    with pytest.raises(EndpointError) as info:
        run_in_process(overrides(fake_llm.base_url, run_dir, f"benchmark.gt_root={gt}", f"benchmark.pred_root={pred}",
                                 "benchmark.domains=[atlantis,lemuria]"), run_dir)
    message = str(info.value)
    assert info.value.exit_code == 3 and "\n" not in message
    assert "no MCP server was able to start (2 domain(s) tried)" in message
    assert "unknown MCP_DOMAIN" in message and "re-run with the same hydra.run.dir" in message
    assert fake_llm.count == 0


def test_a_server_crash_or_a_slow_tool_mid_domain_makes_that_dialogue_an_error_and_scoring_goes_on(
        fake_llm, tmp_path) -> None:
    fake_llm.default = scripted_judge
    gt, pred = copy_data("capability_dashboard_apis", tmp_path)
    rows = {p["uuid"]: p for p in json.loads((pred / "weather.json").read_text())}
    rows["wx-002"]["output"][0].update(answer="37.2 mm of rain fell in Eastbrook in March 2024.", sequence={
        "tool_call": [
            {"name": "get_total_rain_by_city_and_month", "arguments": {"city": "Eastbrook", "month": "2024-03"}},
            {"name": "crash_server", "arguments": {}},
            {"name": "get_station_city", "arguments": {"station_name": "Harbor Point"}}]})
    rows["wx-003"]["output"][0]["sequence"]["tool_call"].insert(
        0, {"name": "sleep_seconds", "arguments": {"seconds": 4}})
    (pred / "weather.json").write_text(json.dumps(list(rows.values())))
    config = tmp_path / "mcp.yaml"
    config.write_text(f"tasks:\n  2:\n    command: python\n    args: ['{SERVER}']\n"
                      "    env: {CAPABILITY_ID: '2', VAKRA_BUNDLED_TEST_HOOKS: '1'}\n")
    run_dir = tmp_path / "run"
    results = run_in_process(overrides(fake_llm.base_url, run_dir, f"benchmark.gt_root={gt}",
                                       f"benchmark.pred_root={pred}", f"benchmark.mcp_config={config}",
                                       "benchmark.domains=[weather]", "benchmark.replay_concurrency=1",
                                       "benchmark.tool_timeout=1"), run_dir)
    # A crash or a timeout gives no response to score: wx-002 and wx-003 are errors (asked again on re-run),
    # the other two are scored 1; the next replay after the crash got a new server.
    weather = results["tasks"]["weather"]
    assert (weather["error_ids"], weather["metrics"]) == (
        ["wx-002", "wx-003"], {"mean_dialogue_score": 1.0, "num_correct": 2.0, "num_samples": 4})
    got = records(run_dir, "weather")
    assert "exited during the call" in got["wx-002"]["error"] and "predicted call 2 of 3: crash_server" in \
        got["wx-002"]["error"]
    assert "within 1s" in got["wx-003"]["error"] and "predicted call 1 of 2: sleep_seconds" in got["wx-003"]["error"]
    assert got["wx-004"]["status"] == "ok" and got["wx-004"]["scores"]["exact_match"] == 1.0


def test_capability_1_starts_from_get_data_on_fresh_servers(fake_llm, tmp_path) -> None:
    fake_llm.default = scripted_judge
    run_dir = tmp_path / "run"
    results = run_in_process(overrides(fake_llm.base_url, run_dir, "benchmark.capability=capability_bi_apis"),
                             run_dir)
    # bi-library-001 and -002 replay the ground-truth route (1 each), -003 answers wrongly (0): 2/3.
    assert results["tasks"]["library"]["metrics"] == {"mean_dialogue_score": pytest.approx(2 / 3),
                                                      "num_correct": 2.0, "num_samples": 3}
    got = records(run_dir, "library")["bi-library-001"]["extra"]["tool_calls"]
    predicted, (truth,) = got["prediction"], got["ground_truth"]
    assert [c["name"] for c in truth] == ["get_data", "filter_data", "aggregate_data"]  # setup call dropped
    assert [c["response"] for c in predicted] == [c["response"] for c in truth]
    assert json.loads(truth[0]["response"])["handle"] == "retrieved_data_1"


def test_multi_turn_replays_every_turn_compares_chunk_texts_and_applies_the_policy_judge(fake_llm, tmp_path) -> None:
    fake_llm.default = scripted_judge
    run_dir = tmp_path / "run"
    results = run_in_process(overrides(fake_llm.base_url, run_dir, "benchmark.capability=capability_multiturn",
                                       f"benchmark.policy_judge={BUNDLED / 'policy_example.py'}"), run_dir)
    # library follows its policy and matches the stored retrieval (1); weather skipped the document search (0).
    assert results["tasks"]["library"]["metrics"]["num_correct"] == 1.0
    assert results["tasks"]["weather"]["metrics"]["num_correct"] == 0.0
    assert fake_llm.count == 1  # only library's groundedness: a failed policy needs no judge
    lib = records(run_dir, "library")["mt-library-001"]
    truth = lib["extra"]["tool_calls"]["ground_truth"]
    assert [[c["name"] for c in turn] for turn in truth] == [["count_books_by_genre"], ["query_library"]]
    assert truth[1][0]["source"] == "stored"
    assert json.loads(lib["extra"]["tool_calls"]["prediction"][0]["response"])[0].startswith("Members may borrow")
    assert lib["scores"]["policy"] == 1.0 and lib["scores"]["exact_match"] == 1.0
    weather = records(run_dir, "weather")["mt-weather-001"]
    assert weather["scores"] == {"dialogue_score": 0.0, "turn_score": 0.0, "policy": 0.0}
    assert "without the document search" in weather["extra"]["per_turn"][0]["metadata"]["score_explanation"]["policy"]


def test_without_replay_the_stored_tool_responses_are_scored(fake_llm, tmp_path) -> None:
    fake_llm.default = scripted_judge
    gt, pred = tmp_path / "gt", tmp_path / "pred"
    gt.mkdir()
    pred.mkdir()
    stored = {"sequence": {"tool_call": [{"name": "get_station_city", "arguments": {"station_name": "Mill Ridge"}}],
                           "tool_response": ['{\n  "city": "Eastbrook"\n}']}}
    (gt / "weather.json").write_text(json.dumps([{"uuid": "s1", "output": [
        {"turn_id": 0, "query": "Where is Mill Ridge?", "answer": [["Eastbrook"]], **stored}]}]))
    (pred / "weather.json").write_text(json.dumps([{"uuid": "s1", "output": [
        {"turn_id": 0, "answer": "Mill Ridge is in Eastbrook.", **stored}]}]))
    run_dir = tmp_path / "run"
    results = run_in_process(overrides(fake_llm.base_url, run_dir, f"benchmark.gt_root={gt}",
                                       f"benchmark.pred_root={pred}", "benchmark.replay=false"), run_dir)
    assert results["tasks"]["weather"]["metrics"]["num_correct"] == 1.0
    record = records(run_dir, "weather")["s1"]
    assert record["scores"]["exact_match"] == 1.0
    assert record["extra"]["tool_calls"]["prediction"][0]["source"] == "stored"
    assert not (run_dir / "mcp_logs").exists()


def test_config_keys_select_domains_and_reject_unknown_values() -> None:
    benchmark = instantiate(compose(["benchmark=vakra", "benchmark.tasks=[weather]", "benchmark.aggregate=min"])
                            .benchmark, "benchmark")
    assert [t.name for t in benchmark.build_tasks()] == ["weather"]
    with pytest.raises(ConfigError, match="did you mean 'capability_multiturn'"):
        instantiate(compose(["benchmark=vakra", "benchmark.capability=capability_multi"]).benchmark, "benchmark")
    with pytest.raises(ConfigError, match="benchmark.aggregate"):
        instantiate(compose(["benchmark=vakra", "benchmark.aggregate=max"]).benchmark, "benchmark")


def test_the_cli_reports_an_unknown_capability_in_one_line(tmp_path) -> None:
    proc = subprocess.run([sys.executable, "-m", "runner", "benchmark=vakra", "benchmark.capability=capability_x",
                           "tracker=none", f"hydra.run.dir={tmp_path / 'run'}"], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert proc.returncode == 2
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert lines[-1].startswith("error: benchmark.capability: unknown value 'capability_x'")
    assert "Traceback" not in proc.stderr
