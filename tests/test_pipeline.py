"""End-to-end runs of every EVE task against the fake OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    EVE_SAMPLE,
    JUDGE_CORRECT,
    JUDGE_INCORRECT,
    read_jsonl,
    run_in_process,
    run_overrides,
)

from runner.metrics.core import mean


def _last_user(body: dict[str, Any]) -> str:
    return next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")


def scripted_reply(body: dict[str, Any]) -> str:
    """The fake model's and judges' behaviour, decided from the request like a real model would."""
    text = _last_user(body)
    system = body["messages"][0]["content"] if body["messages"][0]["role"] == "system" else ""
    if "strict fact-checker" in text:
        question = re.search(r"Question:\n(.*?)\n\nReference", text, re.S).group(1)
        if body["model"] == "judge2" and "Sentinel" in question:
            return JUDGE_INCORRECT
        return "Here is my verdict:\n```json\n" + JUDGE_CORRECT + "\n```"
    if "could not answer from its context" in text:
        return JUDGE_CORRECT if "do not contain" in text else JUDGE_INCORRECT
    if "one or more correct options" in system:
        return "Answer: A, C\nB is wrong because it is passive."
    if "multiple-choice" in system:
        return "I believe the answer is (b)."
    if "hallucinations" in system:
        return "A"
    if "using only the documents" in system:
        return "The documents do not contain this information."
    return "An answer about Earth Observation."


def _rows(task: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (EVE_SAMPLE / f"{task}.jsonl").read_text().splitlines()]


def eve_overrides(base_url: str, run_dir: Path, cache: Path | None, judges: int = 2) -> list[str]:
    return run_overrides(base_url, run_dir, judges=judges, cache=cache)


def test_every_eve_task_end_to_end_matches_metrics_computed_from_the_data(fake_llm, tmp_path):
    fake_llm.default = scripted_reply
    results = run_in_process(eve_overrides(fake_llm.base_url, tmp_path / "run", None), tmp_path / "run")
    tasks = results["tasks"]
    assert set(tasks) == {"mcqa_single_answer", "mcqa_multiple_answers", "open_ended", "open_ended_w_context",
                          "refusal", "hallucination_detection"}

    single = _rows("mcqa_single_answer")[2:]  # 2 shots by default, never scored
    assert tasks["mcqa_single_answer"]["n"] == len(single)
    assert tasks["mcqa_single_answer"]["metrics"] == {
        "accuracy": pytest.approx(mean(r["Answer"] == "B" for r in single))}

    multi = _rows("mcqa_multiple_answers")[2:]
    # Every reply picks A and C; C only exists where there are at least three options.
    picks = [{"A", "C"} & set(r["Choices"]["label"]) for r in multi]
    assert tasks["mcqa_multiple_answers"]["metrics"] == {
        "iou": pytest.approx(mean(len(p & set(r["Answers"])) / len(p | set(r["Answers"]))
                                  for p, r in zip(picks, multi, strict=False))),
        "accuracy": pytest.approx(mean(set(r["Answers"]) == p for p, r in zip(picks, multi, strict=False)))}

    halluc = _rows("hallucination_detection")
    positives = mean(r["is_hallucinated"] for r in halluc)  # every reply says A (hallucinated)
    assert tasks["hallucination_detection"]["metrics"] == pytest.approx(
        {"accuracy": positives, "precision": positives, "recall": 1.0, "f1": 2 * positives / (positives + 1)})

    open_rows = _rows("open_ended")[5:]
    j2 = [0.0 if "Sentinel" in r["Question"] else 1.0 for r in open_rows]
    assert tasks["open_ended"]["metrics"] == pytest.approx({
        "llm_as_judge_judge1": 1.0, "llm_as_judge_judge2": mean(j2),
        "llm_as_judge_avg": mean((1 + v) / 2 for v in j2),
        "judge_voting": mean(j2),  # two judges: a 1-0 split is not a majority
        "judge_agreement": mean(j2)})
    assert 0 < mean(j2) < 1, "the fixture should make the judges disagree on some samples"
    ctx_rows = _rows("open_ended_w_context")
    assert tasks["open_ended_w_context"]["metrics"]["judge_voting"] == pytest.approx(
        mean(0.0 if "Sentinel" in r["Question"] else 1.0 for r in ctx_rows))
    assert tasks["refusal"]["metrics"]["judge_voting"] == 1.0
    assert tasks["refusal"]["n_invalid"] == 0 and tasks["open_ended_w_context"]["n_invalid"] == 0

    # Every metric is recomputable from the samples files alone.
    from runner.run.rescore import rescore

    assert rescore(tmp_path / "run") == tasks

    # The samples file carries everything the contract lists, per sample.
    rec = read_jsonl(tmp_path / "run" / "samples" / "open_ended.jsonl")[0]
    assert {"id", "prompt", "response", "reference", "judgements", "scores"} <= set(rec)
    assert [j["judge"] for j in rec["judgements"]] == ["judge1", "judge2"]
    assert {"verdict", "explanation", "raw"} <= set(rec["judgements"][0])
    assert rec["judgements"][0]["explanation"] == "matches the reference"
    single_recs = read_jsonl(tmp_path / "run" / "samples" / "mcqa_single_answer.jsonl")
    assert sorted(r["id"] for r in single_recs) == list(range(2, 15))  # row indices; rows 0-1 were shots
    assert {r["answer"] for r in single_recs} == {"B"}


def test_few_shot_examples_are_sent_as_prior_turns_and_never_scored(fake_llm, tmp_path):
    fake_llm.default = scripted_reply
    run_in_process(eve_overrides(fake_llm.base_url, tmp_path / "r", None) +
                   ["benchmark.tasks=[mcqa_single_answer]", "benchmark.num_fewshot=3", "benchmark.limit=4"],
                   tmp_path / "r")
    rows = _rows("mcqa_single_answer")
    bodies = [b for b in fake_llm.requests if b["model"] == "fake-model"]
    assert len(bodies) == 4
    msgs = bodies[0]["messages"]
    assert [m["role"] for m in msgs] == ["system", "user", "assistant"] * 1 + ["user", "assistant"] * 2 + ["user"]
    assert msgs[1]["content"].startswith(rows[0]["Question"])
    assert msgs[2]["content"] == f"Answer: {rows[0]['Answer']}"
    assert "A. " + rows[0]["Choices"][0] in msgs[1]["content"]
    ids = [r["id"] for r in read_jsonl(tmp_path / "r" / "samples" / "mcqa_single_answer.jsonl")]
    assert sorted(ids) == [3, 4, 5, 6]


def test_unparseable_judge_reply_is_invalid_with_raw_text_and_counts_as_fail(fake_llm, tmp_path):
    def reply(body: dict[str, Any]) -> str:
        if "strict fact-checker" in _last_user(body):
            return "I think it is mostly fine." if body["model"] == "judge1" else JUDGE_CORRECT
        return "Some answer."

    fake_llm.default = reply
    results = run_in_process(eve_overrides(fake_llm.base_url, tmp_path / "r", None) +
                             ["benchmark.tasks=[open_ended]", "benchmark.limit=3"], tmp_path / "r")
    block = results["tasks"]["open_ended"]
    assert block["n_invalid"] == 3 and len(block["invalid_ids"]) == 3
    assert block["metrics"]["llm_as_judge_judge1"] == 0.0
    assert block["metrics"]["llm_as_judge_judge2"] == 1.0
    assert block["metrics"]["judge_voting"] == 0.0 and block["metrics"]["judge_agreement"] == 0.0
    rec = read_jsonl(tmp_path / "r" / "samples" / "open_ended.jsonl")[0]
    assert rec["status"] == "invalid"
    assert rec["judgements"][0] == {**rec["judgements"][0], "status": "invalid", "verdict": None,
                                    "raw": "I think it is mostly fine."}


def test_cached_rerun_sends_no_request_and_reproduces_results(fake_llm, tmp_path):
    fake_llm.default = scripted_reply
    cache = tmp_path / "cache"
    first = run_in_process(eve_overrides(fake_llm.base_url, tmp_path / "a", cache), tmp_path / "a")
    sent = fake_llm.count
    assert sent > 0
    second = run_in_process(eve_overrides(fake_llm.base_url, tmp_path / "b", cache), tmp_path / "b")
    assert fake_llm.count == sent, "a cached re-run must not send any request"
    assert second["tasks"] == first["tasks"]
    usage = second["usage"]["fake-model"]
    assert usage["requests"] == 0 and usage["cache_hits"] > 0 and usage["cost"] == 0.0


@pytest.mark.parametrize("faults", [["429"], ["500", "503"], ["broken"], ["timeout"], ["disconnect"],
                                    ["429", "500", "broken", "timeout"]])
def test_retries_under_injected_faults_give_identical_metrics(fake_llm, tmp_path, faults):
    fake_llm.default = scripted_reply
    base = eve_overrides(fake_llm.base_url, tmp_path / "clean", None) + [
        "benchmark.tasks=[mcqa_single_answer,open_ended]", "benchmark.limit=4"]
    clean = run_in_process(base, tmp_path / "clean")
    fake_llm.reset()  # fault counters are per distinct request; start them afresh
    fake_llm.faults, fake_llm.hang, fake_llm.retry_after = faults, 3.0, "0"
    faulty_overrides = [o.replace(str(tmp_path / "clean"), str(tmp_path / "faulty")) for o in base] + [
        f"{entry}.{key}" for entry in ("model", "judges.panel.0", "judges.panel.1")
        for key in ("timeout=1", "backoff=0.01", "max_retries=5")]
    faulty = run_in_process(faulty_overrides, tmp_path / "faulty")
    assert faulty["tasks"] == clean["tasks"]
    assert faulty["summary"]["n_errors"] == 0
    assert faulty["usage"]["fake-model"]["retries"] == len(faults) * faulty["usage"]["fake-model"]["successes"]


def test_a_call_that_keeps_failing_is_an_error_record_and_the_run_goes_on(fake_llm, tmp_path):
    fake_llm.default = scripted_reply
    fake_llm.faults = ["500"] * 10
    fake_llm.fault_only_matching = "Sentinel-1"  # only questions naming Sentinel-1 keep failing
    results = run_in_process(eve_overrides(fake_llm.base_url, tmp_path / "r", None) +
                             ["benchmark.tasks=[mcqa_single_answer]", "model.max_retries=1",
                              "model.backoff=0.01"], tmp_path / "r")
    block = results["tasks"]["mcqa_single_answer"]
    failing = [i for i, r in enumerate(_rows("mcqa_single_answer")) if i >= 2 and "Sentinel-1" in r["Question"]]
    assert failing and sorted(block["error_ids"]) == failing
    assert block["n_errors"] == len(failing) and results["summary"]["n_errors"] == len(failing)
    assert block["n"] == 13
    rec = next(r for r in read_jsonl(tmp_path / "r" / "samples" / "mcqa_single_answer.jsonl")
               if r["id"] == failing[0])
    assert rec["status"] == "error" and "InternalServerError" in rec["error"]


def test_bad_rows_are_recorded_as_errors_and_the_rest_is_scored(fake_llm, tmp_path):
    from conftest import write_jsonl

    rows = _rows("mcqa_single_answer")[:5]
    del rows[3]["Choices"]
    data = write_jsonl(tmp_path / "data" / "mcqa_single_answer.jsonl", rows)
    data.write_text(data.read_text() + "{not json\n")
    fake_llm.default = scripted_reply
    overrides = eve_overrides(fake_llm.base_url, tmp_path / "r", None) + [
        "benchmark.tasks=[mcqa_single_answer]", "benchmark.num_fewshot=0", f"benchmark.data_dir={data.parent}"]
    results = run_in_process(overrides, tmp_path / "r")
    block = results["tasks"]["mcqa_single_answer"]
    assert block["n"] == 6 and sorted(block["error_ids"]) == [3, 5]
    errors = {r["id"]: r["error"] for r in read_jsonl(tmp_path / "r" / "samples" / "mcqa_single_answer.jsonl")
              if r["status"] == "error"}
    assert "Choices" in errors[3] and "not valid JSON" in errors[5]


def test_resuming_a_run_dir_with_another_model_is_refused(fake_llm, tmp_path):
    from runner.errors import ConfigError

    fake_llm.default = scripted_reply
    overrides = eve_overrides(fake_llm.base_url, tmp_path / "r", None) + [
        "benchmark.tasks=[mcqa_single_answer]", "benchmark.limit=2"]
    run_in_process(overrides, tmp_path / "r")
    with pytest.raises(ConfigError, match=r"2 differ in the model under test \(was fake-model, now other-model\)"):
        run_in_process(overrides + ["model.name=other-model"], tmp_path / "r")
