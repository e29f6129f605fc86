"""Rate limits: the in-flight level of an endpoint follows the provider (runner/models/limiter.py), checked
by hand on the limiter and end to end against the fake server enforcing a limit of requests in flight."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from conftest import fake_model_overrides, read_jsonl, run_in_process
from fake_llm import FakeLLM

from runner.models.limiter import Limiter, exhausted, reset_seconds
from runner.models.litellm_model import Endpoint


@pytest.mark.parametrize(("text", "seconds"), [("1s", 1.0), ("6m0s", 360.0), ("20ms", 0.02), ("1h2m3s", 3723.0),
                                                ("2.5", 2.5), ("0", 0.0), ("soon", None), ("5x", None), (None, None)])
def test_reset_durations_as_providers_write_them(text, seconds) -> None:
    assert reset_seconds(text) == (pytest.approx(seconds) if seconds is not None else None)


def test_an_exhausted_window_is_read_from_the_headers() -> None:
    assert exhausted({"x-ratelimit-remaining-requests": "3"}) is None
    assert exhausted({"X-RateLimit-Remaining-Requests": "0"}) == 0.0
    assert exhausted({"x-ratelimit-remaining-requests": "5", "x-ratelimit-remaining-tokens": "0",
                      "x-ratelimit-reset-tokens": "1m30s"}) == 90.0
    assert exhausted({"x-ratelimit-remaining-requests": "n/a"}) is None
    assert exhausted(None) is None


def test_the_level_grows_fast_then_slowly_and_halves_once_per_round() -> None:
    limiter = Limiter(64)
    assert limiter.current == 16  # a quarter of the ceiling
    for _ in range(3):
        limiter.succeeded(0)
    assert limiter.level == 19.0  # slow start: one more per success
    limiter.refused(0, None)
    assert limiter.level == 9.5 and limiter.current == 9 and limiter.round == 1 and limiter.rate_limited == 1
    limiter.refused(0, None)  # sent before the cut: counted, but no second cut
    assert limiter.level == 9.5 and limiter.rate_limited == 2
    limiter.succeeded(1)
    assert limiter.level == pytest.approx(9.5 + 1 / 9.5)  # past the threshold: one per level's successes
    limiter.succeeded(1, {"x-ratelimit-remaining-requests": "0"})  # the window is used up: a cut, no 429
    assert limiter.level == pytest.approx((9.5 + 1 / 9.5) / 2) and limiter.rate_limited == 2
    for _ in range(2100):  # level² grows by 2 per success: from ~5 to 64 takes ~2,030
        limiter.succeeded(limiter.round)
    assert limiter.current == 64 and limiter.level == 64.0  # and never past the ceiling


def test_a_fixed_level_stays_at_the_ceiling() -> None:
    limiter = Limiter(12, adaptive=False)
    limiter.refused(0, None)
    limiter.succeeded(1)
    assert limiter.current == 12 and limiter.rate_limited == 1


def calls(srv: FakeLLM, n: int, *, concurrency: int, adaptive: bool) -> Endpoint:
    endpoint = Endpoint(name="m", model="openai/fake-model", api_base=srv.base_url, api_key="k",
                        concurrency=concurrency, adaptive=adaptive, max_retries=2, backoff_base=0.01)

    async def main() -> None:
        await asyncio.gather(*(endpoint.complete([{"role": "user", "content": f"q{i}"}]) for i in range(n)))
    asyncio.run(main())
    return endpoint


def test_against_a_limit_of_8_a_ceiling_of_64_adapts_and_no_call_fails() -> None:
    with FakeLLM(default="A", latency=0.05, max_in_flight=8) as srv:
        adaptive = calls(srv, 160, concurrency=64, adaptive=True)
        refused_adaptive = srv.refused
        srv.reset()
        fixed = calls(srv, 160, concurrency=64, adaptive=False)
        refused_fixed = srv.refused
    for endpoint in (adaptive, fixed):
        assert endpoint.stats.successes == 160 and endpoint.stats.failures == 0
    assert adaptive.usage()["rate_limited"] == refused_adaptive
    assert fixed.usage()["rate_limited"] == refused_fixed
    # The fixed level sends 64 at once into a limit of 8 again and again; the adaptive one learns the limit.
    assert refused_adaptive * 4 < refused_fixed
    level = adaptive.usage()["concurrency"]
    assert level["ceiling"] == 64 and level["adaptive"] is True and level["final"] <= 16


def test_retry_after_pauses_the_whole_endpoint_once() -> None:
    with FakeLLM(default="A", latency=0.2, max_in_flight=2, retry_after="1") as srv:
        endpoint = calls(srv, 6, concurrency=6, adaptive=False)
        arrivals = list(srv.arrivals)
    assert endpoint.stats.successes == 6
    first_429 = next(t for t, status in arrivals if status == 429)
    # The refusals of the first burst arrive together; after them nothing is sent until Retry-After passed.
    later = [t for t, status in arrivals if t > first_429 + 0.1]
    assert later and min(later) >= first_429 + 0.9
    assert endpoint.usage()["rate_limited"] == srv.refused


def test_a_run_records_the_refusals_and_the_level_per_endpoint(tmp_path: Path, monkeypatch) -> None:
    from test_wandb_tracker import read_offline_run

    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    data = tmp_path / "data"
    data.mkdir()
    rows = [{"Question": f"Question {i}?", "Choices": ["a", "b", "c", "d"], "Answer": "B"} for i in range(40)]
    (data / "mcqa_single_answer.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    run_dir = tmp_path / "run"
    with FakeLLM(default="Answer: B", latency=0.05, max_in_flight=4) as srv:
        results = run_in_process(fake_model_overrides(srv.base_url, concurrency=32) + [
            "benchmark=eve", f"benchmark.data_dir={data}", "benchmark.tasks=[mcqa_single_answer]",
            "benchmark.num_fewshot=0", "tracker=wandb", "progress=false", "cache.enabled=false",
            f"hydra.run.dir={run_dir}", "model.backoff=0.01"], run_dir)
        refused = srv.refused
    task = results["tasks"]["mcqa_single_answer"]
    assert task["n"] == 40 and task["n_errors"] == 0 and task["metrics"]["accuracy"] == 1.0
    usage = results["usage"]["fake-model"]
    assert usage["rate_limited"] == refused and usage["concurrency"]["ceiling"] == 32
    assert all(r["status"] == "ok" for r in read_jsonl(run_dir / "samples" / "mcqa_single_answer.jsonl"))
    (sync,) = run_dir.glob("wandb/offline-run-*")
    summary = read_offline_run(sync)["summary"]
    assert summary["usage/fake-model/rate_limited"] == refused
    assert summary["usage/fake-model/concurrency/ceiling"] == 32


def test_adaptive_false_is_a_config_key(tmp_path: Path) -> None:
    from conftest import compose

    from runner.config import plain
    from runner.models.entries import endpoint_from_config

    cfg = compose(["model=gpt-4o-mini", "model.adaptive=false", "model.concurrency=7"])
    endpoint = endpoint_from_config(plain(cfg.model), None)
    assert endpoint.adaptive is False and endpoint.limiter().current == 7


def test_a_used_up_quota_is_not_a_rate_limit_it_stops_at_once(fake_llm) -> None:
    from runner.errors import EndpointError

    fake_llm.faults = ["quota"] * 10
    endpoint = Endpoint(name="m", model="openai/fake-model", api_base=fake_llm.base_url, api_key="k")
    with pytest.raises(EndpointError, match=r"HTTP 429 .*the account's quota is used up.*plan and billing"):
        asyncio.run(endpoint.complete([{"role": "user", "content": "q"}]))
    assert fake_llm.count == 1


def test_the_progress_line_names_the_endpoints_held_below_their_ceiling() -> None:
    from runner.run.pipeline import in_flight_levels

    busy, free = Endpoint(name="gpt", model="openai/x", concurrency=64), Endpoint(name="judge", model="openai/y",
                                                                              concurrency=4, adaptive=False)
    assert in_flight_levels([busy, free]) == "in flight gpt 16/64"  # adaptive: starts at a quarter
    busy.limiter().refused(0, None)
    assert in_flight_levels([busy, free]) == "in flight gpt 8/64"
    for _ in range(2100):  # additive growth past the cut: ~2,000 successes from 8 back to 64
        busy.limiter().succeeded(busy.limiter().round)
    assert in_flight_levels([busy, free]) == ""  # back at the ceiling: nothing to say
