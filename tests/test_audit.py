"""`runner.audit`: each judge and the panel vote of a finished run against human labels."""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import test_pipeline as eve
import test_win_rate as win_rate
from conftest import JUDGE_CORRECT, TESTS, cli, one_line_error, read_jsonl, run_in_process
from fake_llm import FakeLLM
from sklearn.metrics import cohen_kappa_score

from runner.errors import DataError
from runner.metrics.intervals import bootstrap_statistic
from runner.outputs.audit import audit, audit_run, read_labels, write_audit

FIXTURES = TESTS / "fixtures" / "audit"
LABELS_CSV, LABELS_JSONL = FIXTURES / "open_ended_labels.csv", FIXTURES / "open_ended_labels.jsonl"
# Human labels of the fixture files, by sample id (14 has none; 99 is no sample of the run).
HUMAN = {5: "correct", 6: "incorrect", 7: "correct", 8: "correct", 9: "incorrect", 10: "incorrect",
         11: "correct", 12: "correct", 13: "incorrect"}
# open_ended's scored questions (ids 5..14). judge1 fails LiDAR (6), GNSS (7) and MODIS (13); judge2 fails
# LiDAR (6), Sentinel-5P (10) and Sentinel-1 (12) and gives no verdict on Copernicus (11).
FAILS = {"judge1": ("LiDAR", "GNSS", "MODIS"), "judge2": ("LiDAR", "Sentinel")}
C, W = "correct", "incorrect"
JUDGE1 = {5: C, 6: W, 7: W, 8: C, 9: C, 10: C, 11: C, 12: C, 13: W}
JUDGE2 = {5: C, 6: W, 7: C, 8: C, 9: C, 10: W, 12: W, 13: C}
# The panel vote is the task's own judge_voting rule (issue 31): a majority of ⌊2/2⌋+1 = 2 judges saying correct,
# an invalid reply (judge2 on 11) failing; so correct only where both judges say so.
PANEL = {i: C if JUDGE1.get(i) == C and JUDGE2.get(i) == C else W for i in HUMAN}


def judge_reply(body: dict[str, Any]) -> str:
    text = body["messages"][-1]["content"]
    if "strict fact-checker" not in text:
        return eve.scripted_reply(body)
    question = re.search(r"Question:\n(.*?)\n\nReference", text, re.S).group(1)
    judge = body["model"]
    if judge == "judge2" and "Copernicus" in question:
        return "I cannot decide."
    if any(word in question for word in FAILS[judge]):
        return json.dumps({"judgement": "incorrect", "explanation": f"{judge}: wrong on {question[:20]}"})
    return JUDGE_CORRECT


@pytest.fixture(scope="module")
def eve_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A finished open_ended run judged by judge1 and judge2 (the fake server is stopped afterwards)."""
    run_dir = tmp_path_factory.mktemp("audit") / "run"
    srv = FakeLLM(default=judge_reply)
    srv.start()
    try:
        run_in_process(eve.eve_overrides(srv.base_url, run_dir, None, judges=2)
                       + ["benchmark.tasks=[open_ended]"], run_dir)
    finally:
        srv.stop()
    yield run_dir


def records_of(run_dir: Path, task: str) -> dict[str, list[dict[str, Any]]]:
    return {task: sorted(read_jsonl(run_dir / "samples" / f"{task}.jsonl"), key=lambda r: r["id"])}


def sklearn_kappa(a: list[str], b: list[str]) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(cohen_kappa_score(a, b))


def check_block(block: dict[str, Any], verdicts: dict[int, str], records: list[dict[str, Any]], rater: str | None,
                n_boot: int, seed: int) -> None:
    """Every figure of one rater's block, from the hand-written verdicts."""
    ids = [i for i in HUMAN if i in verdicts]
    human, judged = [HUMAN[i] for i in ids], [verdicts[i] for i in ids]
    assert block["n"] == len(ids) and block["n_invalid"] == len(HUMAN) - len(ids) and block["n_unlabelled"] == 1
    assert block["agreement"] == pytest.approx(sum(h == v for h, v in zip(human, judged, strict=True)) / len(ids))
    assert block["cohen_kappa"] == pytest.approx(sklearn_kappa(human, judged))
    assert block["confusion"] == {h: {v: sum(HUMAN[i] == h and verdicts[i] == v for i in ids) for v in (C, W)}
                                  for h in (C, W)}
    by_id = {r["id"]: r for r in records}

    def explanation(i: int) -> str:
        given = [j for j in by_id[i]["judgements"] if j["status"] == "ok"]
        if rater is not None:
            return next(j["explanation"] for j in given if j["judge"] == rater)
        return " | ".join(f"{j['judge']} ({j['verdict']}): {j['explanation']}" for j in given)

    assert block["disagreements"] == [
        {"id": i, "label": HUMAN[i], "verdict": verdicts[i], "explanation": explanation(i)}
        for i in ids if HUMAN[i] != verdicts[i]]
    # The interval is the runner's bootstrap of the kappa, here recomputed with sklearn's kappa.
    h, v = np.array(human), np.array(judged)
    # A resample where a rater gave one category only has no kappa (sklearn says 0 there; issue 31).
    interval = bootstrap_statistic(
        len(ids), lambda idx: {"k": None if min(len(set(h[idx])), len(set(v[idx]))) == 1
                               else sklearn_kappa(list(h[idx]), list(v[idx]))}, None, n_boot, seed, expand=True)["k"]
    assert interval is not None and block["cohen_kappa_ci"] == pytest.approx(list(interval))
    assert interval[0] <= block["cohen_kappa"] <= interval[1]


def test_each_judge_and_the_panel_vote_against_the_labels_match_hand_counts_and_sklearn(eve_run):
    records = records_of(eve_run, "open_ended")
    assert {r["id"] for r in records["open_ended"]} == set(range(5, 15))
    result = audit(records, read_labels(LABELS_CSV), n_boot=300, seed=4)
    assert (result["n_boot"], result["seed"], result["unmatched_tasks"]) == (300, 4, ["refusal"])
    task = result["tasks"]["open_ended"]
    assert {k: task[k] for k in ("kind", "n_labels", "n_labels_unmatched", "unmatched_ids")} == {
        "kind": "correctness", "n_labels": 10, "n_labels_unmatched": 1, "unmatched_ids": ["99"]}
    assert list(task["judges"]) == ["judge1", "judge2"]
    check_block(task["judges"]["judge1"], JUDGE1, records["open_ended"], "judge1", 300, 4)
    check_block(task["judges"]["judge2"], JUDGE2, records["open_ended"], "judge2", 300, 4)
    check_block(task["panel"], PANEL, records["open_ended"], None, 300, 4)
    # By hand, to be sure the table above says what it should.
    assert task["judges"]["judge1"]["confusion"] == {C: {C: 4, W: 1}, W: {C: 2, W: 2}}
    assert [d["id"] for d in task["judges"]["judge2"]["disagreements"]] == [9, 12, 13]
    assert (task["panel"]["n"], task["panel"]["agreement"], task["panel"]["n_invalid"]) == (9, 5 / 9, 0)
    # The panel vote is each record's judge_vote: what the task's judge_voting averages.
    votes = {r["id"]: C if r["scores"]["judge_vote"] == 1 else W for r in records["open_ended"]}
    assert {i: votes[i] for i in PANEL} == PANEL
    assert audit(records, read_labels(LABELS_CSV), n_boot=300, seed=4) == result  # seeded: the same numbers
    assert audit(records, read_labels(LABELS_CSV), n_boot=0, seed=4)["tasks"]["open_ended"]["panel"][
        "cohen_kappa_ci"] is None


def test_jsonl_and_csv_labels_read_the_same_normalised_labels():
    labels = read_labels(LABELS_CSV)
    assert labels == read_labels(LABELS_JSONL)
    assert labels == {**{("open_ended", str(i)): label for i, label in HUMAN.items()},
                      ("open_ended", "99"): "correct", ("refusal", "0"): "correct"}


def test_pairwise_labels_as_a_b_tie_or_model_names_against_each_judge_and_the_vote(fake_llm, tmp_path):
    _, records, run_dir = win_rate.run(fake_llm, tmp_path, ["judge1", "judge2", "judge3"], "benchmark.orders=both")
    json_path, md_path = audit_run({win_rate.TASK: records}, FIXTURES / "win_rate_labels.jsonl", run_dir,
                                   n_boot=200, seed=0)
    task = json.loads(json_path.read_text())["tasks"][win_rate.TASK]
    assert task["kind"] == "pairwise"
    # Human: x on 0 (A), y on 2, tie on 3, y on 4 (B), x on 5. judge1 and judge2: x, y, tie, x, x; judge3: x, y,
    # invalid on 3, x, y; the vote: x, y, tie, x, x (judge3 is outvoted on 5).
    j1, j3, panel = task["judges"]["judge1"], task["judges"]["judge3"], task["panel"]
    assert (j1["n"], j1["agreement"], j1["n_invalid"]) == (5, 4 / 5, 0)
    assert j1["confusion"] == {"x": {"x": 2, "y": 0, "tie": 0}, "y": {"x": 1, "y": 1, "tie": 0},
                               "tie": {"x": 0, "y": 0, "tie": 1}}
    assert j1["cohen_kappa"] == pytest.approx(sklearn_kappa(["x", "y", "tie", "y", "x"], ["x", "y", "tie", "x", "x"]))
    recs = win_rate.by_id(records)
    assert j1["disagreements"] == [{"id": 4, "label": "y", "verdict": "x",
                                    "explanation": win_rate.entry(recs[4], "judge1")["explanation"]}]
    assert (j3["n"], j3["n_invalid"], j3["agreement"]) == (4, 1, 2 / 4)
    assert [(d["id"], d["label"], d["verdict"]) for d in j3["disagreements"]] == [(4, "y", "x"), (5, "x", "y")]
    assert (panel["n"], panel["agreement"], [d["id"] for d in panel["disagreements"]]) == (5, 4 / 5, [4])
    assert j1["cohen_kappa"] == task["judges"]["judge2"]["cohen_kappa"]
    assert "## x_vs_y (pairwise)" in md_path.read_text()


def _judgement(judge: str, verdict: str | None, score: float | None = None, **extra: Any) -> dict[str, Any]:
    return {"judge": judge, "status": "ok" if verdict else "invalid", "verdict": verdict, "score": score,
            "explanation": f"{judge} says {verdict}", **extra}


def test_groundedness_compares_verdicts_as_given_and_binary_labels_map_scores():
    grounded = [  # a VAKRA-like record: each judge has a correctness and a groundedness judgement
        {"id": i, "judgements": [_judgement("j", "correct", 1.0, rubric="correctness"),
                                 _judgement("j", g, 1.0 if g == "yes" else 0.0, rubric="groundedness")]}
        for i, g in enumerate(["yes", "partial", "no", "yes"])]
    refusal = [{"id": i, "judgements": [_judgement("j", v, s)]}
               for i, (v, s) in enumerate([("refused", 1.0), ("answered", 0.0), (None, None)])]
    labels = {("g", "0"): "yes", ("g", "1"): "yes", ("g", "2"): "no", ("g", "3"): "no",
              ("r", "0"): "correct", ("r", "1"): "correct", ("r", "2"): "incorrect"}
    result = audit({"g": grounded, "r": refusal}, labels, n_boot=0, seed=0)["tasks"]
    g = result["g"]["judges"]["j"]
    assert result["g"]["kind"] == "groundedness" and g["n"] == 4 and g["agreement"] == 2 / 4
    assert g["confusion"] == {"yes": {"yes": 1, "partial": 1, "no": 0}, "partial": {"yes": 0, "partial": 0, "no": 0},
                              "no": {"yes": 1, "partial": 0, "no": 1}}
    assert g["cohen_kappa"] == pytest.approx(sklearn_kappa(["yes", "yes", "no", "no"], ["yes", "partial", "no", "yes"]))
    assert g["disagreements"][0] == {"id": 1, "label": "yes", "verdict": "partial", "explanation": "j says partial"}
    r = result["r"]["judges"]["j"]
    assert (r["n"], r["n_invalid"], r["confusion"]) == (2, 1, {C: {C: 1, W: 1}, W: {C: 0, W: 0}})
    # One judge: its unparsed reply is no vote (issue 44, point 3), though judge_voting counts it as a fail: the
    # panel is compared with the label on the two samples it voted on, like the judge.
    panel = result["r"]["panel"]
    assert (panel["n"], panel["n_invalid"], panel["confusion"]) == (2, 1, {C: {C: 1, W: 1}, W: {C: 0, W: 0}})


def test_a_panel_with_no_valid_verdict_has_no_agreement():
    # Every judge reply invalid: each judge n=0, and the panel too (it reported n=2 and agreement 0.5 before, an
    # invalid vote counted as "incorrect" and compared with the labels).
    records = {"t": [{"id": i, "scores": {"judge_vote": 0.0},
                      "judgements": [_judgement("a", None), _judgement("b", None)]} for i in (1, 2)]}
    result = audit(records, {("t", "1"): "correct", ("t", "2"): "incorrect"}, n_boot=50, seed=0)["tasks"]["t"]
    for block in (*result["judges"].values(), result["panel"]):
        assert (block["n"], block["n_invalid"], block["agreement"], block["cohen_kappa"]) == (0, 2, None, None)


def test_a_tied_panel_is_no_vote_and_labels_in_the_wrong_vocabulary_or_tasks_are_one_clear_error():
    records = {"t": [{"id": 1, "judgements": [_judgement("a", "yes"), _judgement("b", "no")]},
                     {"id": 2, "judgements": [_judgement("a", "yes"), _judgement("b", "yes"), _judgement("c", None)]}]}
    panel = audit(records, {("t", "1"): "yes", ("t", "2"): "no"}, n_boot=0, seed=0)["tasks"]["t"]["panel"]
    assert (panel["n"], panel["n_invalid"], panel["confusion"]) == (1, 1, {"yes": {"yes": 0, "no": 0},
                                                                                "no": {"yes": 1, "no": 0}})
    with pytest.raises(DataError, match=r"task t has correctness labels, but its judges' verdicts are no, yes"):
        audit(records, {("t", "1"): "correct"}, n_boot=0, seed=0)
    with pytest.raises(DataError, match=r"name tasks other, none of which the run has \(t\)"):
        audit(records, {("other", "1"): "yes"}, n_boot=0, seed=0)
    pair = {"p": [{"id": 1, "extra": {"model_a": "x", "model_b": "y"}, "judgements": [_judgement("a", "x")]}]}
    with pytest.raises(DataError, match=r"task p id 1 is labelled 'z', which is none of x, y, tie"):
        audit(pair, {("p", "1"): "z"}, n_boot=0, seed=0)


@pytest.mark.parametrize(("name", "text", "message"), [
    ("missing.csv", None, r"cannot read the labels file .*missing\.csv \(No such file or directory\); pass a JSONL"),
    ("cols.csv", "id,task,verdict\n1,t,correct\n", r"cols\.csv: no label column \(header: id, task, verdict\); "
                                                     r"the first line must name the columns id, task, label"),
    ("field.jsonl", '{"id": 1, "task": "t"}\n', r"field\.jsonl:1: no label; every row needs an id, a task and a label"),
    ("unknown.csv", "id,task,label\n1,t,correct\n2,t,maybe\n",
     r"unknown\.csv:3: unknown label 'maybe' \(task t, id 2\); use correct/incorrect \(correctness\)"),
    ("bad.jsonl", '{"id": 1, "task": "t", "label": "yes"}\n{"id": 2,\n', r"bad\.jsonl:2: not JSON"),
    ("mixed.jsonl", '{"id": 1, "task": "t", "label": "yes"}\n{"id": 2, "task": "t", "label": "correct"}\n',
     r"mixed\.jsonl:2: task t mixes groundedness and correctness labels"),
    ("twice.csv", "id,task,label\n1,t,A\n1,t,B\n", r"twice\.csv:3: task t id 1 is labelled twice, 'A' then 'B'"),
    ("empty.csv", "id,task,label\n", r"empty\.csv holds no labels"),
])
def test_a_bad_labels_file_is_one_data_error_line_saying_what_where_and_what_to_do(tmp_path, name, text, message):
    path = tmp_path / name
    if text is not None:
        path.write_text(text, encoding="utf-8")
    with pytest.raises(DataError, match=message) as caught:
        read_labels(path)
    assert "\n" not in str(caught.value)


def test_model_names_are_labels_only_when_named():
    path = FIXTURES / "win_rate_labels.jsonl"
    with pytest.raises(DataError, match=r"unknown label 'y'"):
        read_labels(path)
    assert read_labels(path, models=["x", "y"])[("x_vs_y", "4")] == "B"


def test_cli_writes_both_files_and_prints_their_paths(eve_run):
    proc = cli([str(eve_run), "--labels", str(LABELS_JSONL), "--n-boot", "50"], module="runner.audit", timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [str(eve_run / "audit.json"), str(eve_run / "audit.md")]
    saved = json.loads((eve_run / "audit.json").read_text())
    assert (saved["n_boot"], saved["seed"]) == (50, 0)  # the run's seed
    expected = audit(records_of(eve_run, "open_ended"), read_labels(LABELS_CSV), n_boot=50, seed=0)
    assert saved == json.loads(json.dumps(expected))
    md = (eve_run / "audit.md").read_text()
    assert "## open_ended (correctness)" in md and "| panel vote | 9 | 0.556 |" in md
    assert "| judge2 | 12 | correct | incorrect | judge2: wrong on What do the VV and V |" in md
    assert write_audit(expected, eve_run) == (eve_run / "audit.json", eve_run / "audit.md")


def test_cli_errors_are_one_line_and_exit_2(eve_run, tmp_path):
    bad = tmp_path / "labels.csv"
    bad.write_text("id,task,label\n5,open_ended,perhaps\n", encoding="utf-8")
    proc = cli([str(eve_run), "--labels", str(bad)], module="runner.audit", timeout=120)
    assert proc.returncode == 2
    assert one_line_error(proc) == (f"error: {bad}:2: unknown label 'perhaps' (task open_ended, id 5); use "
                                    "correct/incorrect (correctness), yes/no/partial/unsure (groundedness) or "
                                    "A/B/tie (pairwise)")
    proc = cli([str(tmp_path / "nowhere"), "--labels", str(LABELS_CSV)], module="runner.audit", timeout=120)
    assert proc.returncode == 2 and "RUN_DIR must be a runner run directory" in one_line_error(proc)


def test_a_run_with_audit_labels_writes_the_audit_and_a_bad_file_stops_it_before_any_request(tmp_path):
    from conftest import fake_model_overrides

    with FakeLLM(default=judge_reply) as srv:
        base = eve.eve_overrides(srv.base_url, tmp_path / "run", None, judges=2) + ["benchmark.tasks=[open_ended]"]
        proc = cli(base + [f"audit.labels={LABELS_JSONL}"], timeout=120)
        assert proc.returncode == 0, proc.stderr
        written = json.loads((tmp_path / "run" / "audit.json").read_text())
        records = records_of(tmp_path / "run", "open_ended")
        assert written == audit(records, read_labels(LABELS_JSONL), n_boot=1000, seed=0)
        assert (tmp_path / "run" / "audit.md").exists()

        bad = tmp_path / "bad.jsonl"
        bad.write_text('{"id": 5, "task": "open_ended", "label": "maybe"}\n')
        before = srv.count
        proc = cli(fake_model_overrides(srv.base_url, judges=2) + [
            f"benchmark.data_dir={eve.EVE_SAMPLE}", "benchmark=eve", "benchmark.tasks=[open_ended]", "tracker=none",
            f"hydra.run.dir={tmp_path / 'other'}", f"audit.labels={bad}"], timeout=60)
        assert proc.returncode == 2 and "maybe" in one_line_error(proc)
        assert srv.count == before
