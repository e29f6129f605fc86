"""VAKRA's pure parts: argument coercion, exact match and its last-20 window, pairing by uuid, dialogue
checks, the MCP connection config, the summary arithmetic, the policy plug-in and the judges' prompts."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from runner.benchmarks.vakra.coerce import coerce_arguments, coerce_value, parse_arguments
from runner.benchmarks.vakra.dialogues import answer_text, gt_turns, pred_turn, read_domain, tool_calls
from runner.benchmarks.vakra.policy import load_policy_judge, run_policy_judge
from runner.benchmarks.vakra.report import domain_result, overall, summary
from runner.benchmarks.vakra.scoring import PolicyVerdict, aggregate, exact_match
from runner.benchmarks.vakra.servers import server_entry, server_spec
from runner.errors import ConfigError
from runner.tasks.templates import render

VAKRA = ROOT / "runner" / "benchmarks" / "vakra"

# --------------------------------------------------------------------------- argument coercion

SCHEMA = {"type": "object", "properties": {
    "year": {"type": "integer"}, "threshold": {"type": "number"}, "flag": {"type": "boolean"},
    "name": {"type": "string"}, "ids": {"type": "array", "items": {"type": "integer"}},
    "filter": {"type": "object", "properties": {"limit": {"type": "integer"}}},
    "maybe": {"type": ["null", "integer"]}, "either": {"anyOf": [{"type": "null"}, {"type": "number"}]}}}


def test_numbers_written_as_strings_become_the_declared_numeric_type() -> None:
    assert coerce_arguments({"year": "2015", "threshold": "20"}, SCHEMA) == {"year": 2015, "threshold": 20.0}
    assert coerce_value(" 7 ", {"type": "integer"}) == 7
    assert coerce_value("3.0", {"type": "integer"}) == 3
    assert coerce_value(3.0, {"type": "integer"}) == 3
    assert coerce_value(True, {"type": "integer"}) == 1
    assert coerce_value(20, {"type": "number"}) == 20.0 and isinstance(coerce_value(20, {"type": "number"}), float)


def test_values_that_do_not_convert_cleanly_are_sent_unchanged_for_the_server_to_judge() -> None:
    assert coerce_value("3.5", {"type": "integer"}) == "3.5"
    assert coerce_value("twenty", {"type": "number"}) == "twenty"
    assert coerce_value("nan", {"type": "number"}) == "nan"
    assert coerce_value("maybe", {"type": "boolean"}) == "maybe"
    assert coerce_arguments({"unknown": "1"}, SCHEMA) == {"unknown": "1"}
    assert coerce_arguments({"year": "1"}, {"type": "object"}) == {"year": "1"}


def test_booleans_strings_lists_and_objects_follow_the_schema() -> None:
    assert [coerce_value(v, {"type": "boolean"}) for v in ("True", "no", "1", 0)] == [True, False, True, False]
    assert [coerce_value(v, {"type": "string"}) for v in (1960, 2.5, False, {"a": 1})] == \
        ["1960", "2.5", "false", '{"a": 1}']
    assert coerce_arguments({"ids": "4"}, SCHEMA) == {"ids": [4]}  # a scalar is wrapped, items coerced
    assert coerce_arguments({"ids": '["1", 2]'}, SCHEMA) == {"ids": [1, 2]}
    assert coerce_arguments({"filter": '{"limit": "5"}'}, SCHEMA) == {"filter": {"limit": 5}}


def test_a_type_union_uses_its_first_non_null_type() -> None:
    assert coerce_arguments({"maybe": "4", "either": "1.5"}, SCHEMA) == {"maybe": 4, "either": 1.5}


def test_arguments_may_be_a_json_string_and_anything_else_is_a_clear_error() -> None:
    assert parse_arguments('{"year": "2015", "limit": "3"}') == {"year": "2015", "limit": "3"}
    assert parse_arguments(None) == {} and parse_arguments("") == {}
    with pytest.raises(ValueError, match="not valid JSON"):
        parse_arguments("{year: 2015")
    with pytest.raises(ValueError, match="must be a JSON object"):
        parse_arguments("[1, 2]")


# --------------------------------------------------------------------------- exact match and aggregation


def test_exact_match_is_an_order_free_subset_test_with_raw_string_equality() -> None:
    assert exact_match(["b", "a"], ["a", "x", "b"])[0] == 1.0  # order and extra responses do not matter
    assert exact_match(['{\n  "count": 4\n}'], ['{"count": 4}'])[0] == 0.0  # no normalisation at all
    assert exact_match([], ["anything"])[0] == 1.0  # nothing expected: passes, as in VAKRA


def test_exact_match_only_sees_the_last_20_predicted_responses() -> None:
    # The expected response is the 1st of 21 predicted responses: outside the window of the last 20.
    actual = ["gt"] + [f"other {i}" for i in range(20)]
    score, why = exact_match(["gt"], actual)
    assert score == 0.0 and "last 20 of 21" in why
    assert exact_match(["gt"], actual[1:] + ["gt"])[0] == 1.0  # 21 again, the expected one is last
    assert exact_match(["gt"], ["x"] + actual)[0] == 0.0
    assert exact_match(["gt"], actual, window=21)[0] == 1.0


def test_dialogue_aggregation_mean_sum_and_min() -> None:
    scores = [1.0, 0.0, 1.0]
    assert aggregate(scores, "mean") == pytest.approx(2 / 3)
    assert aggregate(scores, "sum") == 2.0
    assert aggregate(scores, "min") == 0.0
    assert aggregate([], "mean") == 0.0


# --------------------------------------------------------------------------- files, pairing, dialogue checks


def _dialogue(uuid: str, answer: str = "x", turns: int = 1) -> dict:
    return {"uuid": uuid, "output": [{"turn_id": i, "query": f"q{i}", "answer": answer,
                                      "sequence": {"tool_call": []}} for i in range(turns)]}


def _write(path: Path, rows: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(rows if isinstance(rows, str) else json.dumps(rows), encoding="utf-8")


def test_pairing_reports_missing_extra_and_duplicate_uuids_and_the_last_duplicate_wins(tmp_path: Path) -> None:
    _write(tmp_path / "gt" / "d.json", [_dialogue("a"), _dialogue("b"), _dialogue("c"), _dialogue("b", "second"),
                                        {"no": "uuid"}])
    _write(tmp_path / "pred" / "d.json", [_dialogue("a", "first"), _dialogue("a", "last"), _dialogue("z"),
                                          "not a dialogue"])
    files = read_domain("d", tmp_path / "gt", tmp_path / "pred")
    assert list(files.gt) == ["a", "b", "c"]
    assert files.gt["b"]["output"][0]["answer"] == "second"
    assert files.pred["a"]["output"][0]["answer"] == "last"
    assert (files.missing, files.extra) == (["b", "c"], ["z"])
    assert (files.gt_duplicates, files.pred_duplicates) == (["b"], ["a"])
    assert files.pred_rows_without_uuid == 1
    assert files.gt_problems == [("d[4]", files.gt_problems[0][1])] and "uuid" in files.gt_problems[0][1]
    assert read_domain("d", tmp_path / "gt", tmp_path / "pred", limit=1).missing == []


def test_unreadable_files_become_one_clear_line_not_an_exception(tmp_path: Path) -> None:
    _write(tmp_path / "gt" / "d.json", [_dialogue("a")])
    _write(tmp_path / "pred" / "d.json", '[{"uuid": "a",')
    files = read_domain("d", tmp_path / "gt", tmp_path / "pred")
    assert files.pred_problem is not None and "not valid JSON (line 1" in files.pred_problem
    assert "\n" not in files.pred_problem and str(tmp_path / "pred" / "d.json") in files.pred_problem
    _write(tmp_path / "gt" / "e.json", {"uuid": "a"})
    broken = read_domain("e", tmp_path / "gt", tmp_path / "pred")
    assert broken.gt_problems[0][0] == "file:e.json" and "JSON list" in broken.gt_problems[0][1]
    assert not read_domain("d", tmp_path / "gt", tmp_path / "nowhere").pred_file_found


def test_a_prediction_must_be_one_turn_matching_the_last_ground_truth_turn() -> None:
    gt = gt_turns(_dialogue("a", turns=2))
    assert pred_turn({"output": [{"turn_id": 1, "answer": "x"}]}, gt)["answer"] == "x"
    assert pred_turn({"output": [{"answer": "no turn_id"}]}, gt)["answer"] == "no turn_id"
    with pytest.raises(ValueError, match="has no turns"):
        pred_turn({"output": []}, gt)
    with pytest.raises(ValueError, match="has 2 turns"):
        pred_turn({"output": [{"turn_id": 0}, {"turn_id": 1}]}, gt)
    with pytest.raises(ValueError, match="turn_id 7 matches no ground-truth turn"):
        pred_turn({"output": [{"turn_id": 7}]}, gt)
    with pytest.raises(ValueError, match="not the last ground-truth turn"):
        pred_turn({"output": [{"turn_id": 0}]}, gt)
    with pytest.raises(ValueError, match="no turns"):
        gt_turns({"uuid": "a", "output": []})
    with pytest.raises(ValueError, match="no 'answer'"):
        gt_turns({"uuid": "a", "output": [{"turn_id": 0}]})


def test_tool_calls_and_answers_are_read_in_every_shape_vakra_files_use() -> None:
    turn = {"sequence": {"tool_call": [{"name": "f", "arguments": '{"x": 1}'},
                                       {"function": {"name": "g", "arguments": {}}}, "junk"]}}
    assert [(c.name, c.arguments) for c in tool_calls(turn)] == [("f", '{"x": 1}'), ("g", {}), ("", "junk")]
    assert [c.name for c in tool_calls({"sequence": [{"name": "old", "arguments": {}}]})] == ["old"]
    assert tool_calls({"query": "no sequence"}) == []
    # Every column of a row is kept (VAKRA's stringification kept only the first one).
    assert answer_text([["Orbit", 2016], ["Lattice", 2021]]) == "Orbit, 2016; Lattice, 2021"
    assert answer_text([["2012 Summer"]]) == "2012 Summer"
    assert answer_text(["a", "b"]) == "a, b" and answer_text(None) == "" and answer_text(37.2) == "37.2"


# --------------------------------------------------------------------------- mcp_connection_config.yaml


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "conf" / "mcp.yaml"
    _write(path, text)
    return path


def test_a_stdio_entry_runs_the_runner_python_in_cwd_relative_to_the_config_with_mcp_domain(tmp_path: Path) -> None:
    path = _config(tmp_path, "tasks:\n  '2':\n    command: python\n    args: [server.py, --x]\n    cwd: srv\n"
                             "    container_env: {CAPABILITY_ID: 2, A: a}\n    env: {A: b}\n")
    spec = server_spec(server_entry(path, "capability_dashboard_apis", 2), "hockey")
    assert (spec.command, spec.args) == (sys.executable, ("server.py", "--x"))
    assert spec.cwd == str((tmp_path / "conf" / "srv").resolve())
    assert spec.env == {"CAPABILITY_ID": "2", "A": "b", "MCP_DOMAIN": "hockey"}


def test_a_container_entry_becomes_a_docker_exec_stdio_command(tmp_path: Path) -> None:
    path = _config(tmp_path, "tasks:\n  2:\n    container_name: capability_2_dashboard_apis\n"
                             "    container_runtime: podman\n"
                             "    container_env: {CAPABILITY_ID: '2', MCP_DB_ROOT: /app/db}\n"
                             "    container_command: [python, /app/mcp_dispatch.py]\n")
    spec = server_spec(server_entry(path, "capability_dashboard_apis", 2), "movie")
    assert spec.command == "podman"
    assert spec.args == ("exec", "-i", "-e", "CAPABILITY_ID=2", "-e", "MCP_DB_ROOT=/app/db", "-e", "MCP_DOMAIN=movie",
                         "capability_2_dashboard_apis", "python", "/app/mcp_dispatch.py")
    default = server_spec(server_entry(_config(tmp_path, "tasks:\n  4:\n    container_name: c4\n"),
                                       "capability_multiturn", 4), "coffee")
    assert default.args[-3:] == ("c4", "python", "mcp_server.py")


@pytest.mark.parametrize(("text", "message"), [
    ("tasks:\n  2: {mode: websocket, server_url: 'ws://127.0.0.1:1'}\n", "no longer supports"),
    ("tasks:\n  1: {command: python}\n", r"no entry tasks\.2 .*ids present: 1"),
    ("tasks:\n  2: {mode: stdio}\n", "neither 'command'"),
    ("tasks:\n  2: {command: python, args: server.py}\n", "args must be a list"),
    ("tasks: [1, 2]\n", "mapping 'tasks:'"),
    ("tasks: {2: {command: [}\n", "not a readable YAML"),
])
def test_unusable_mcp_configs_stop_the_run_with_one_line(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        server_entry(_config(tmp_path, text), "capability_dashboard_apis", 2)
    assert "\n" not in str(info.value)
    with pytest.raises(ConfigError, match="no such file"):
        server_entry(tmp_path / "absent.yaml", "capability_dashboard_apis", 2)


# --------------------------------------------------------------------------- figures


def _rec(uuid: str, score: float | None = None, status: str = "ok", missing: bool = False) -> dict:
    return {"id": uuid, "status": status, "scores": {} if score is None else {"dialogue_score": score},
            "extra": {"missing_prediction": True, "paired": False} if missing else {"paired": True}}


def test_domain_figures_and_the_summary_follow_vakras_denominators() -> None:
    # Domain A: 5 GT dialogues: 3 scored (1, 0, 1), 1 missing prediction (an ok record scored 0, as the
    # task writes it), 1 error (a bad prediction).
    a = domain_result([_rec("a1", 1.0), _rec("a2", 0.0), _rec("a3", 1.0, "invalid"), _rec("a4", 0.0, missing=True),
                       _rec("a5", status="error")],
                      {"extra_prediction_uuids": ["x1", "x2"], "duplicate_uuids": {"prediction": ["a1"]}})
    # mean over the 3 scored pairs = 2/3; num_samples counts all 5 GT dialogues.
    assert a.metrics == {"mean_dialogue_score": pytest.approx(2 / 3), "num_correct": 2.0, "num_samples": 5}
    assert (a.n_paired, a.missing_prediction_uuids, a.error_ids, a.invalid_ids) == (3, ["a4"], ["a5"], ["a3"])
    # Domain B: 2 dialogues, both scored 1; an unreadable GT file record is not a dialogue.
    b = domain_result([_rec("b1", 1.0), _rec("b2", 1.0), _rec("file:b.json", status="error")], None)
    assert b.metrics == {"mean_dialogue_score": 1.0, "num_correct": 2.0, "num_samples": 2}
    s = summary({"a": a, "b": b})
    # n_correct = 2 + 2 = 4; n_samples = 5 + 2 = 7; the overall mean counts the missing one as 0: 4/7.
    assert s == {"n_domains": 2, "n_paired_dialogues": 5, "n_missing_predictions": 1, "n_extra_predictions": 2,
                 "n_samples": 7, "n_correct": 4.0, "mean_dialogue_score": pytest.approx(4 / 7), "n_errors": 2,
                 "n_invalid": 1}
    assert overall([])["mean_dialogue_score"] is None  # no ground-truth dialogue at all: over nothing
    # A samples file of a run made before missing predictions became `ok` (they were errors then) gives the
    # same figures: still a missing prediction, never an error.
    old = domain_result([_rec("a1", 1.0), _rec("a2", 0.0), _rec("a3", 1.0, "invalid"),
                         _rec("a4", missing=True, status="error"), _rec("a5", status="error")], None)
    assert (old.metrics, old.n_paired, old.missing_prediction_uuids, old.error_ids) == \
        (a.metrics, 3, ["a4"], ["a5"])


def test_with_every_prediction_missing_the_domain_mean_is_null_and_the_summary_mean_is_0() -> None:
    # No paired dialogue: the per-domain mean (over paired dialogues) is over nothing, so null. The summary
    # mean counts each missing prediction as 0 over the 3 ground-truth dialogues: 0.0, not null.
    d = domain_result([_rec(u, 0.0, missing=True) for u in ("m1", "m2", "m3")], None)
    assert d.metrics == {"mean_dialogue_score": None, "num_correct": 0.0, "num_samples": 3}
    assert (d.n_paired, d.n_errors, d.n_invalid, d.missing_prediction_uuids) == (0, 0, 0, ["m1", "m2", "m3"])
    s = summary({"d": d})
    assert s == {"n_domains": 1, "n_paired_dialogues": 0, "n_missing_predictions": 3, "n_extra_predictions": 0,
                 "n_samples": 3, "n_correct": 0.0, "mean_dialogue_score": 0.0, "n_errors": 0, "n_invalid": 0}
    # A domain whose ground-truth file could not be read holds no dialogue: every mean is over nothing.
    empty = summary({"e": domain_result([_rec("file:e.json", status="error")], None)})
    assert (empty["n_samples"], empty["mean_dialogue_score"], empty["n_errors"]) == (0, None, 1)


# --------------------------------------------------------------------------- policy plug-in and prompts


def test_the_policy_plugin_accepts_the_documented_return_values(tmp_path: Path) -> None:
    import asyncio

    plugin = tmp_path / "policy.py"
    plugin.write_text("async def judge_policy(d):\n    return {'score': d['answer'] == 'ok', 'explanation': 'e'}\n")
    judge = load_policy_judge(plugin)
    assert asyncio.run(run_policy_judge(judge, {"answer": "ok"})) == PolicyVerdict(1.0, "e")
    assert asyncio.run(run_policy_judge(lambda d: 0.5, {})).score == 0.5
    with pytest.raises(ValueError, match="expected True/False"):
        asyncio.run(run_policy_judge(lambda d: "yes", {}))
    (tmp_path / "empty.py").write_text("x = 1\n")
    with pytest.raises(ConfigError, match="defines no function judge_policy"):
        load_policy_judge(tmp_path / "empty.py")
    (tmp_path / "broken.py").write_text("raise RuntimeError('boom')\n")
    with pytest.raises(ConfigError, match="importing it failed: RuntimeError: boom"):
        load_policy_judge(tmp_path / "broken.py")


def test_the_two_rubrics_are_told_apart_by_their_text() -> None:
    prompts = VAKRA / "prompts"
    correctness = render(prompts, "correctness.j2", question="Q?", ground_truth="4", prediction="four")
    grounded = render(prompts, "groundedness.j2", query="Q?", outputs=['{"count": 4}'], answer="four")
    assert "ground truth" in correctness and "grounded" not in correctness.lower()
    assert '"judgement"' in correctness
    assert "grounded" in grounded and "ground truth" not in grounded.lower()
    assert '"grounded"' in grounded and "[1] {\"count\": 4}" in grounded
