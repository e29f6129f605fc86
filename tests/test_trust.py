"""A number the runner prints is right or absent: refused endpoints stop the run, missing keys are caught
before any request, exit statuses mean something, and metrics over nothing are null."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import EVE_SAMPLE, JUDGE_CORRECT, cli, fake_model_overrides, one_line_error, read_jsonl, run_in_process
from fake_llm import FakeLLM

from runner.errors import EndpointError

JUDGE_PROMPT = "strict fact-checker"  # a phrase of the fact-check rubric: faults aimed at judges only


def overrides(url: str, run_dir: Path, *tasks: str, limit: int = 3) -> list[str]:
    return fake_model_overrides(url) + [
        "benchmark=eve", f"benchmark.data_dir={EVE_SAMPLE}", f"benchmark.tasks=[{','.join(tasks)}]",
        f"benchmark.limit={limit}", "tracker=none", "progress=false", "cache.enabled=false",
        f"hydra.run.dir={run_dir}", "model.backoff=0.01", "judges.panel.0.backoff=0.01"]


def reply(body: dict) -> str:
    text = body["messages"][-1]["content"]
    return JUDGE_CORRECT if JUDGE_PROMPT in text else "Answer: B"


@pytest.fixture(params=["true", "false"], ids=["litellm-http-handler", "openai-sdk"])
def handler(request, monkeypatch):
    """Both of litellm's OpenAI call paths: they raise the same refusal as different exception classes."""
    monkeypatch.setenv("EXPERIMENTAL_OPENAI_BASE_LLM_HTTP_HANDLER", request.param)
    return request.param


@pytest.mark.parametrize("status", ["401", "403", "404"])
@pytest.mark.parametrize("who", ["model", "judge"])
def test_a_refusing_endpoint_stops_the_run_at_once_naming_it_and_the_status(handler, who, status, tmp_path):
    only = JUDGE_PROMPT if who == "judge" else None
    with FakeLLM(default=reply, faults=[status] * 10, fault_only_matching=only) as srv:
        task = "open_ended" if who == "judge" else "mcqa_single_answer"
        with pytest.raises(EndpointError) as info:
            run_in_process(overrides(srv.base_url, tmp_path / "run", task), tmp_path / "run")
        refused = [b for b in srv.requests if (JUDGE_PROMPT in b["messages"][-1]["content"]) == (who == "judge")]
    name = "judge1" if who == "judge" else "fake-model"
    message = str(info.value)
    assert message.startswith(f"{name}: HTTP {status}") and "not retried" in message
    assert info.value.exit_code == 3
    # Never retried: the in-flight samples each got one refusal, none was asked twice.
    assert len(refused) == len({json.dumps(b, sort_keys=True) for b in refused}) <= 3
    assert not (tmp_path / "run" / "results.json").exists()


def assert_no_retry(srv: FakeLLM) -> None:
    """Only the samples already in flight (3) were sent, each once."""
    bodies = [json.dumps(b, sort_keys=True) for b in srv.requests]
    assert 1 <= len(bodies) <= 3 and len(set(bodies)) == len(bodies)


def test_a_wrong_key_is_refused_by_the_server_and_named(tmp_path):
    with FakeLLM(default=reply, api_key="the-right-key") as srv:
        with pytest.raises(EndpointError, match=r"fake-model: HTTP 401 .*the API key was refused.*api_key"):
            run_in_process(overrides(srv.base_url, tmp_path / "run", "mcqa_single_answer"), tmp_path / "run")
        assert_no_retry(srv)


def test_an_unknown_model_is_refused_by_the_server_and_named(tmp_path):
    with FakeLLM(default=reply, models=["judge1"]) as srv:
        with pytest.raises(EndpointError, match=r"fake-model: HTTP 404 .*check the entry's model"):
            run_in_process(overrides(srv.base_url, tmp_path / "run", "mcqa_single_answer"), tmp_path / "run")
        assert_no_retry(srv)


def test_a_missing_key_stops_before_any_request_naming_the_variable(fake_llm, tmp_path):
    args = overrides(fake_llm.base_url, tmp_path / "run", "mcqa_single_answer") + [
        "model.api_key=null", "model.model=openai/gpt-4o-mini"]
    proc = cli(args, env={"OPENAI_API_KEY": ""}, timeout=60)
    line = one_line_error(proc)
    assert proc.returncode == 3
    assert "OPENAI_API_KEY" in line and "fake-model" in line and "no request was sent" in line
    assert fake_llm.count == 0
    assert not (tmp_path / "run" / "samples").exists()


def test_a_missing_judge_key_is_caught_too(fake_llm, tmp_path):
    args = overrides(fake_llm.base_url, tmp_path / "run", "open_ended") + [
        "judges.panel.0.api_key=null", "judges.panel.0.model=mistral/mistral-small-latest"]
    proc = cli(args, env={"MISTRAL_API_KEY": ""}, timeout=60)
    assert proc.returncode == 3 and "MISTRAL_API_KEY" in one_line_error(proc) and "judge1" in proc.stderr
    assert fake_llm.count == 0


def test_an_endpoint_that_fails_every_call_stops_the_run(tmp_path):
    with FakeLLM(default=reply, faults=["500"] * 20) as srv:
        args = overrides(srv.base_url, tmp_path / "run", "mcqa_single_answer", limit=8) + [
            "model.max_retries=1", "model.concurrency=1"]
        with pytest.raises(EndpointError, match=r"every call to fake-model failed \(3 after their retries"):
            run_in_process(args, tmp_path / "run")
        assert srv.count == 6  # three samples, two attempts each, then the run stopped


def test_a_failed_judge_call_makes_the_sample_an_error_and_the_exit_status_1(tmp_path):
    # The judge fails for one question only; every other call succeeds.
    with FakeLLM(default=reply, faults=["500"] * 10, fault_only_matching=r"strict fact-checker.*canopy height") \
            as srv:
        args = overrides(srv.base_url, tmp_path / "run", "open_ended") + ["judges.panel.0.max_retries=1"]
        proc = cli(args, timeout=120)
        assert proc.returncode == 1, proc.stderr
        assert "1 of 3 sample(s) ended as errors" in one_line_error(proc)
        records = read_jsonl(tmp_path / "run" / "samples" / "open_ended.jsonl")
        bad = [r for r in records if r["status"] == "error"]
        assert len(bad) == 1 and "judge1" in bad[0]["error"] and bad[0]["judgements"] == []
        results = json.loads((tmp_path / "run" / "results.json").read_text())
        assert results["tasks"]["open_ended"]["n_errors"] == 1 and results["tasks"]["open_ended"]["n_invalid"] == 0
        # Resuming asks only that sample again; now that the judge answers, everything is scored: exit 0.
        srv.faults = []
        before = srv.count
        proc = cli(args, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert srv.count - before == 2  # the model's reply again (no cache) and one judgement
        results = json.loads((tmp_path / "run" / "results.json").read_text())
        assert results["tasks"]["open_ended"]["n_errors"] == 0
        assert results["tasks"]["open_ended"]["metrics"]["llm_as_judge_avg"] == 1.0


def boom(body: dict) -> str:
    raise RuntimeError("this reply fails")  # the fake server answers HTTP 500


def test_fail_on_error_sets_the_share_of_errors_a_run_may_have(tmp_path):
    with FakeLLM(default=reply) as srv:
        srv.rules = [(r"canopy height", boom)]
        args = overrides(srv.base_url, tmp_path / "run", "open_ended", limit=4) + ["model.max_retries=0"]
        strict = cli(args, timeout=120)
        assert strict.returncode == 1
        lenient = cli(args + ["fail_on_error=0.25"], timeout=120)
        assert lenient.returncode == 0, lenient.stderr


def test_a_task_with_no_scored_sample_has_null_metrics_and_exit_1(tmp_path):
    with FakeLLM(default=reply) as srv:
        # Every model call of the multiple-choice task fails; the open-ended task's calls, asked first,
        # succeed (so the endpoint as a whole works).
        srv.rules = [(r"\nA\. ", boom)]
        args = overrides(srv.base_url, tmp_path / "run", "open_ended", "mcqa_single_answer", limit=2) + [
            "model.max_retries=0", "model.concurrency=1"]
        proc = cli(args, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert "mcqa_single_answer have no scored sample" in one_line_error(proc)
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    block = results["tasks"]["mcqa_single_answer"]
    assert block["metrics"] == {"accuracy": None} and block["n_errors"] == 2
    assert results["summary"]["headline"]["mcqa_single_answer"] is None
    assert results["summary"]["macro_avg"] == results["summary"]["headline"]["open_ended"]
    assert "—" in proc.stdout  # the table shows no number for it


def test_a_clean_run_exits_0(fake_llm, tmp_path):
    fake_llm.default = reply
    proc = cli(overrides(fake_llm.base_url, tmp_path / "run", "mcqa_single_answer"), timeout=120)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("model", ["gpt-4o-mini", "openai-compatible"])
def test_a_real_model_is_not_graded_by_the_embedded_demo_judge(model, tmp_path):
    proc = cli([f"model={model}", "benchmark.tasks=[open_ended]", "tracker=none",
                f"hydra.run.dir={tmp_path / 'run'}"], env={"OPENAI_API_KEY": "unused"}, timeout=60)
    assert proc.returncode == 2
    line = one_line_error(proc)
    assert "embedded demo judge" in line and "judges=NAME (mugen, one, three)" in line
    assert not (tmp_path / "run" / "local_server.log").exists()  # nothing was started


def test_a_data_file_none_of_whose_rows_has_the_columns_is_bad_input(tmp_path):
    from conftest import write_jsonl

    write_jsonl(tmp_path / "data" / "mcqa_single_answer.jsonl",
                [{"question": "q", "options": ["a", "b"], "answer": "A"}] * 3)
    proc = cli(overrides("http://127.0.0.1:9/v1", tmp_path / "run", "mcqa_single_answer")
               + [f"benchmark.data_dir={tmp_path / 'data'}"], timeout=60)
    assert proc.returncode == 2
    line = one_line_error(proc)
    assert "mcqa_single_answer.jsonl: none of its 3 row(s)" in line and "Question" in line


def test_a_refusing_judge_exits_3_with_one_line_and_no_results(tmp_path):
    with FakeLLM(default=reply, faults=["401"] * 10, fault_only_matching=JUDGE_PROMPT) as srv:
        proc = cli(overrides(srv.base_url, tmp_path / "run", "open_ended"), timeout=120)
    assert proc.returncode == 3
    line = one_line_error(proc)
    assert line.startswith("error: judge1: HTTP 401") and "api_key" in line
    assert not (tmp_path / "run" / "results.json").exists()
