"""`preflight` (default true): each endpoint a run with judges (or several endpoints) will call gets one
`max_tokens: 1` request before the model's first sample, so a refused key stops the run (exit 3) having spent
at most one tiny request per endpoint, not after every sample was sent to the model. Cached like any other
request, counted in usage (with workers too) and by dry runs (tests/test_dry_run.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import JUDGE_CORRECT, cli, one_line_error, run_in_process, run_overrides
from fake_llm import FakeLLM


def reply(body: dict[str, Any]) -> str:
    if body.get("max_tokens") == 1:  # a provider writes one token at most
        return "OK"
    return JUDGE_CORRECT if str(body["model"]).startswith("judge") else "Answer: B"


def args(url: str, run_dir: Path, *extra: str, judge_key: str = "the-key", tasks: str = "open_ended",
         cache: Path | None = None) -> list[str]:
    return run_overrides(url, run_dir, *extra, tasks=[tasks], limit=6, cache=cache, preflight=True,
                         model_fields={"api_key": "the-key", "max_retries": 1, "timeout": 5},
                         judge_fields={"api_key": judge_key, "max_retries": 1, "timeout": 5,
                                       "params": {"max_tokens": 16}})


def test_a_refused_judge_key_stops_the_run_before_the_models_first_sample(tmp_path):
    with FakeLLM(default=reply, api_key="the-key") as srv:
        proc = cli(args(srv.base_url, tmp_path / "run", judge_key="a-wrong-key"), timeout=120)
        assert proc.returncode == 3
        line = one_line_error(proc)
        assert "judge1: HTTP 401" in line and "api_key" in line
        # one tiny request per endpoint, nothing else: no sample was sent to the model
        assert sorted(b["model"] for b in srv.requests) == ["fake-model", "judge1"]
        assert all(b["max_tokens"] == 1 for b in srv.requests)
    assert not any(p.read_text() for p in (tmp_path / "run" / "samples").glob("*.jsonl")), "no sample record"
    # what the preflight spent is this invocation's usage, as any request's
    (line_usage,) = [json.loads(x)["usage"] for x in (tmp_path / "run" / "invocations.jsonl").read_text().splitlines()]
    assert line_usage["fake-model"]["requests"] == 1 and line_usage["judge1"]["requests"] == 1


def test_without_preflight_the_same_mistake_is_found_after_the_model_was_paid(tmp_path):
    with FakeLLM(default=reply, api_key="the-key") as srv:
        proc = cli(args(srv.base_url, tmp_path / "run", "preflight=false", "model.concurrency=1",
                        judge_key="a-wrong-key"), timeout=120)
        assert proc.returncode == 3 and "judge1: HTTP 401" in one_line_error(proc)
        assert [b["model"] for b in srv.requests].count("fake-model") >= 1
        assert not any(b.get("max_tokens") == 1 for b in srv.requests)


def test_an_unreachable_judge_stops_the_run_before_the_models_first_sample(tmp_path):
    with FakeLLM(default=reply) as srv:
        dead = FakeLLM()
        dead_url = dead.start()
        dead.stop()  # a port nothing listens on any more
        run_args = [a.replace(f"api_base:'{srv.base_url}'", f"api_base:'{dead_url}'") for a in
                    args(srv.base_url, tmp_path / "run", "judges.panel.0.max_retries=0")]
        proc = cli(run_args, timeout=120)
        assert proc.returncode == 3 and "judge1" in one_line_error(proc)
        assert [b["max_tokens"] for b in srv.requests] == [1], "the model got its preflight request only"


def test_the_preflight_is_cached_and_counted_in_usage(tmp_path):
    with FakeLLM(default=reply) as srv:
        first = run_in_process(args(srv.base_url, tmp_path / "a", cache=tmp_path / "cache"), tmp_path / "a")
        sent = srv.count
        assert first["usage"]["fake-model"]["requests"] == 6 + 1 and first["usage"]["judge1"]["requests"] == 6 + 1
        assert sent == 14
        again = run_in_process(args(srv.base_url, tmp_path / "b", cache=tmp_path / "cache"), tmp_path / "b")
        assert srv.count == sent, "the preflight and the samples come from the cache"
    assert again["usage"]["fake-model"]["cached_requests"] == 7 and again["usage"]["judge1"]["cached_requests"] == 7


def test_with_workers_the_preflight_is_counted_once_in_usage(tmp_path):
    with FakeLLM(default=reply) as srv:
        results = run_in_process(args(srv.base_url, tmp_path / "run", "workers=2", "model.concurrency=4"),
                                 tmp_path / "run")
        assert srv.count == 2 * 6 + 2
    assert results["usage"]["fake-model"]["requests"] == 7 and results["usage"]["judge1"]["requests"] == 7
    assert results["totals"]["requests"] == srv.count


def test_a_resumed_run_with_nothing_left_to_ask_sends_no_preflight(tmp_path):
    with FakeLLM(default=reply) as srv:
        run_in_process(args(srv.base_url, tmp_path / "run"), tmp_path / "run")
        srv.reset()
        run_in_process(args(srv.base_url, tmp_path / "run"), tmp_path / "run")
        assert srv.count == 0
