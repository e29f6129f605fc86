"""Batch mode at the call layer (issue 36): an endpoint with `batch` sends through OpenAI's Files and Batches
protocol (the fake server's, through litellm) and hands back what a direct call would: the same request body,
reply, cache entry and accounting at batch prices; rejected lines are retried in later batches, an expired
batch's leftovers too; a stopped run's batches are polled again from the run dir's journal, never submitted
twice; an endpoint without a batch API is refused before any request, or goes direct with `batch: auto`."""

from __future__ import annotations

import asyncio
import json
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from fake_llm import FakeLLM

from runner.errors import CallError, ConfigError, EndpointError
from runner.models import batch as batch_module
from runner.models.batch_journal import JOURNAL, Journal, describe, summary
from runner.models.batch_setup import open_batches
from runner.models.budget import Budget
from runner.models.cache import ResponseCache, request_key
from runner.models.litellm_model import Endpoint

PARAMS = {"max_tokens": 16, "temperature": 0.0, "seed": 7, "response_format": {"type": "json_object"}}


@pytest.fixture(autouse=True)
def fast_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    """Poll every few milliseconds (a provider's batch takes minutes; the fake server's, two polls)."""
    monkeypatch.setattr(batch_module, "POLL_FIRST_S", 0.01)
    monkeypatch.setattr(batch_module, "POLL_MAX_S", 0.02)


def endpoint(srv: FakeLLM, name: str = "m", batch: Any = True, **kw: Any) -> Endpoint:
    return Endpoint(name=name, model=f"openai/{name}", api_base=srv.base_url, api_key="test-key", batch=batch,
                    batch_wait=kw.pop("batch_wait", 0.05), timeout=5, max_retries=kw.pop("max_retries", 2),
                    backoff_base=0.01, **kw)


def user(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


async def ask(e: Endpoint, texts: list[str], params: dict[str, Any] | None = None) -> list[Any]:
    return await asyncio.gather(*(e.complete(user(t), params=params) for t in texts), return_exceptions=True)


def test_a_batched_request_is_the_direct_request_and_its_reply_and_cache_entry_are_the_direct_ones(tmp_path):
    with FakeLLM(default='{"answer": "B"}') as srv:
        direct = endpoint(srv, batch=False, cache=ResponseCache(tmp_path / "c1"))
        batched = endpoint(srv, cache=ResponseCache(tmp_path / "c2"))
        assert open_batches([direct, batched], tmp_path) == [batched]
        one = asyncio.run(direct.complete(user("q1"), params=PARAMS))
        two = asyncio.run(batched.complete(user("q1"), params=PARAMS))
        assert srv.batch_lines[-1][2] == srv.requests[-1]  # what litellm sent directly, byte for byte as JSON
        assert (two.text, two.model, two.finish_reason, two.usage.prompt_tokens, two.usage.completion_tokens) == \
            (one.text, one.model, one.finish_reason, one.usage.prompt_tokens, one.usage.completion_tokens)
        key = request_key(direct.identity(direct.request(user("q1"), params=PARAMS)))
        assert srv.batch_lines[-1][1] == key  # the custom_id is the cache key
        assert batched.cache is not None and direct.cache is not None
        assert batched.cache.get(key) == direct.cache.get(key) is not None
        assert batched.stats.requests == batched.stats.successes == 1 and len(srv.batches) == 1


def test_requests_collect_into_batches_of_batch_size(tmp_path):
    with FakeLLM(default="A") as srv:
        e = endpoint(srv, batch_size=2, batch_wait=5.0)
        open_batches([e], tmp_path)
        outs = asyncio.run(ask(e, ["a", "b", "c", "d"]))
        assert [o.text for o in outs] == ["A"] * 4
        assert sorted(len(b["_lines"]) for b in srv.batches.values()) == [2, 2]
        assert e.usage()["batch"] == {"mode": "true", "sent_in_batches": True, "batches": 2, "batched_requests": 4,
                                      "prices": "an unknown price (litellm has none for openai/m; set the entry's "
                                      "pricing)"}


def test_a_request_asked_twice_goes_once_and_the_second_reply_counts_as_a_cache_hit(tmp_path):
    with FakeLLM(default="A") as srv:
        e = endpoint(srv, pricing={"input_per_mtok": 1_000_000, "output_per_mtok": 3_000_000})
        open_batches([e], tmp_path)
        first, second = asyncio.run(ask(e, ["same", "same"]))
        assert len(srv.batch_lines) == 1
        assert sorted([first.usage.cached, second.usage.cached]) == [False, True]
        assert e.stats.cache_hits == 1 and e.stats.requests == 1


def test_cost_is_at_the_entrys_batch_price_else_half_its_price(tmp_path):
    with FakeLLM(default="one two") as srv:  # the fake server counts words: "q one" 2 tokens in, 2 out
        own = endpoint(srv, "own", pricing={"input_per_mtok": 1_000_000, "output_per_mtok": 3_000_000,
                                            "batch_input_per_mtok": 100_000, "batch_output_per_mtok": 200_000})
        half = endpoint(srv, "half", pricing={"input_per_mtok": 1_000_000, "output_per_mtok": 3_000_000})
        open_batches([own, half], tmp_path)
        a, b = asyncio.run(own.complete(user("q one"))), asyncio.run(half.complete(user("q one")))
    assert (a.usage.prompt_tokens, a.usage.completion_tokens) == (2, 2)
    assert a.usage.cost == pytest.approx(2 * 0.1 + 2 * 0.2)
    assert b.usage.cost == pytest.approx(2 * 0.5 + 2 * 1.5)
    assert own.usage()["cost_usd"] == pytest.approx(0.6) and half.usage()["cost_usd"] == pytest.approx(4.0)
    assert half.usage()["batch"]["prices"].startswith("half the entry's pricing")
    assert own.price(2, 2) == pytest.approx(0.6) and own.price(2, 2, batch=False) == pytest.approx(8.0)


def test_a_model_litellm_prices_costs_litellms_batch_price(tmp_path):
    with FakeLLM(default="one two") as srv:
        e = Endpoint(name="mini", model="openai/gpt-4o-mini", api_base=srv.base_url, api_key="k", batch=True,
                     batch_wait=0.05, timeout=5)
        open_batches([e], tmp_path)
        out = asyncio.run(e.complete(user("q one")))
    # litellm 1.82's gpt-4o-mini: input_cost_per_token_batches 7.5e-08, output_cost_per_token_batches 3e-07
    assert out.usage.cost == pytest.approx(2 * 7.5e-08 + 2 * 3e-07)
    assert e.usage()["batch"]["prices"] == "litellm's batch prices"


def test_the_budget_reserves_and_settles_at_batch_prices(tmp_path):
    with FakeLLM(default="one two") as srv:
        e = endpoint(srv, pricing={"input_per_mtok": 1_000_000, "output_per_mtok": 3_000_000},
                     params={"max_tokens": 4})
        e.budget = Budget(100.0)
        open_batches([e], tmp_path)
        asyncio.run(ask(e, ["q one", "q two"]))
    assert e.budget.spent == pytest.approx(2 * (2 * 0.5 + 2 * 1.5))


def test_lines_the_provider_rejects_go_into_the_next_batch(tmp_path):
    with FakeLLM(default="A", faults=["500"], fault_only_matching="second") as srv:
        e = endpoint(srv)
        open_batches([e], tmp_path)
        outs = asyncio.run(ask(e, ["first", "second", "third"]))
        assert [o.text for o in outs] == ["A"] * 3
        sizes = [len(b["_lines"]) for b in srv.batches.values()]
        assert sizes == [3, 1] and srv.batch_lines[-1][2]["messages"][-1]["content"] == "second"
        assert (e.stats.requests, e.stats.retries, e.stats.successes) == (4, 1, 3)


def test_a_line_failing_after_its_retries_fails_that_request_only(tmp_path):
    with FakeLLM(default="A", faults=["503", "503"], fault_only_matching="bad") as srv:
        e = endpoint(srv, max_retries=1)
        open_batches([e], tmp_path)
        good, bad = asyncio.run(ask(e, ["good", "bad"]))
        assert good.text == "A" and isinstance(bad, CallError) and "503" in str(bad)
        assert len(srv.batches) == 2 and e.stats.failures == 1


def test_an_expired_batch_sends_the_requests_it_left_again(tmp_path):
    with FakeLLM(default="A", batch_script=[{"status": "expired", "done": 1}]) as srv:
        e = endpoint(srv)
        open_batches([e], tmp_path)
        outs = asyncio.run(ask(e, ["a", "b", "c"]))
        assert [o.text for o in outs] == ["A"] * 3
        first, second = srv.batches.values()
        assert first["status"] == "expired" and first["request_counts"] == {"total": 3, "completed": 1, "failed": 2}
        assert len(second["_lines"]) == 2 and second["status"] == "completed"
        # the one answered before the expiry was not sent again
        assert sorted(Counter(c for _, c, _ in srv.batch_lines).values()) == [1, 2, 2]


def test_a_batch_failed_as_a_whole_is_tried_again_and_a_cancelled_one_fails_its_requests(tmp_path):
    with FakeLLM(default="A", batch_script=[{"status": "failed"}]) as srv:
        e = endpoint(srv)
        open_batches([e], tmp_path)
        assert [o.text for o in asyncio.run(ask(e, ["a"]))] == ["A"]
        assert [b["status"] for b in srv.batches.values()] == ["failed", "completed"]
    with FakeLLM(default="A") as srv:
        srv.batch_hold = True
        e = endpoint(srv)
        (tmp_path / "other").mkdir()
        open_batches([e], tmp_path / "other")

        async def cancelled() -> Any:
            asking = asyncio.ensure_future(e.complete(user("a")))
            while not srv.batches and not asking.done():
                await asyncio.sleep(0.01)
            request = urllib.request.Request(f"{srv.base_url}/batches/batch_0001/cancel", method="POST",
                                             headers={"Authorization": "Bearer test-key"})
            await asyncio.to_thread(urllib.request.urlopen, request)
            return await asyncio.gather(asking, return_exceptions=True)

        (out,) = asyncio.run(cancelled())
        assert isinstance(out, CallError) and "cancelled" in str(out)


def test_a_stopped_run_polls_its_batch_again_and_submits_nothing_twice(tmp_path):
    with FakeLLM(default="A") as srv:
        srv.batch_hold = True
        first = endpoint(srv)
        open_batches([first], tmp_path)

        async def stopped() -> None:
            asking = asyncio.ensure_future(ask(first, ["a", "b"]))
            while not (tmp_path / JOURNAL).exists() or "created" not in (tmp_path / JOURNAL).read_text():
                await asyncio.sleep(0.01)
            asking.cancel()  # the run stops (Ctrl-C): the batch goes on at the provider

        asyncio.run(stopped())
        assert "1 not finished" in describe(tmp_path)[-1]
        srv.batch_hold = False
        again = endpoint(srv)  # a new invocation: new endpoint, new batcher, the journal read back
        open_batches([again], tmp_path)
        outs = asyncio.run(ask(again, ["a", "b", "c"]))
        assert [o.text for o in outs] == ["A"] * 3
        custom_ids = [c for _, c, _ in srv.batch_lines]
        assert len(custom_ids) == len(set(custom_ids)) == 3  # a and b polled again, c in a new batch
        assert [len(b["_lines"]) for b in srv.batches.values()] == [2, 1]
        assert "0 not finished" in describe(tmp_path)[-1]


def test_a_batch_stopped_between_upload_and_creation_is_found_by_its_file_or_submitted(tmp_path):
    with FakeLLM(default="A") as srv:
        e = endpoint(srv)
        key = request_key(e.identity(e.request(user("a"))))
        body = {"model": "m", "messages": user("a")}
        line = json.dumps({"custom_id": key, "method": "POST", "url": "/v1/chat/completions", "body": body})
        created = srv._new_file(line.encode() + b"\n", "batch", "x.jsonl")
        lost = srv._new_file(b"", "batch", "y.jsonl")
        journal = Journal(tmp_path)
        journal.submitted("m", created["id"], [key], [])
        request = urllib.request.Request(f"{srv.base_url}/batches", method="POST", data=json.dumps(
            {"input_file_id": created["id"], "endpoint": "/v1/chat/completions", "completion_window": "24h"}).encode(),
            headers={"Authorization": "Bearer test-key", "Content-Type": "application/json"})
        urllib.request.urlopen(request).read()  # created at the provider, but the journal never heard of it
        key_b = request_key(e.identity(e.request(user("b"))))
        journal.submitted("m", lost["id"], [key_b], [])  # uploaded, never created
        open_batches([e], tmp_path)
        outs = asyncio.run(ask(e, ["a", "b"]))
        assert [o.text for o in outs] == ["A", "A"]
        assert [c for _, c, _ in srv.batch_lines] == [key, key_b]  # a adopted from the provider, b sent once


def test_an_endpoint_without_a_batch_api_is_refused_before_any_request_or_goes_direct_with_auto(tmp_path):
    with FakeLLM(default="A", batches=False) as srv:
        strict, auto = endpoint(srv, "strict"), endpoint(srv, "auto", batch="auto")
        with pytest.raises(EndpointError, match=r"strict .*batch: true, but the server at .* has no batch API "
                                                r"\(HTTP 404 for GET /batches\).*batch: auto.*no request was sent"):
            open_batches([strict], tmp_path)
        assert open_batches([auto], tmp_path) == [] and not auto.batching
        assert asyncio.run(auto.complete(user("q"))).text == "A" and srv.count == 1
        assert auto.usage()["batch"] == {"mode": "auto", "sent_in_batches": False}
    anthropic = Endpoint(name="claude", model="anthropic/claude-haiku-4-5", api_key="x", batch=True)
    with pytest.raises(ConfigError, match=r"claude .*its provider \(anthropic\) has no batch API"):
        open_batches([anthropic], tmp_path)
    assert not (tmp_path / JOURNAL).exists()


def test_a_refused_key_stops_the_probe_in_any_mode(tmp_path):
    with FakeLLM(default="A", api_key="right") as srv:
        e = endpoint(srv, batch="auto")
        with pytest.raises(EndpointError, match="HTTP 401"):
            open_batches([e], tmp_path)


@pytest.mark.parametrize("key, value", [("batch", "sometimes"), ("batch_size", 0), ("batch_size", 50_001),
                                        ("batch_wait", -1)])
def test_bad_batch_keys_are_one_config_error_naming_the_entry(key, value):
    with pytest.raises(ConfigError, match=rf"^m: {key}="):
        Endpoint(name="m", model="openai/m", **{key: value})


def test_the_progress_summary_counts_batches_by_state(tmp_path):
    with FakeLLM(default="A") as srv:
        e = endpoint(srv, batch_size=1)
        open_batches([e], tmp_path)
        asyncio.run(ask(e, ["a", "b"]))
    assert summary() == "batches 2: 2 done"
    lines = describe(tmp_path)
    assert len(lines) == 3 and all("completed" in ln and "results handed back" in ln for ln in lines[:2])


def test_schema_defaults_are_the_call_layers():
    from runner.config.schema import entry_defaults
    from runner.models.batch_costs import DEFAULT_BATCH_SIZE, DEFAULT_BATCH_WAIT_S

    defaults = entry_defaults()
    assert (defaults["batch"], defaults["batch_size"], defaults["batch_wait"]) == \
        (False, DEFAULT_BATCH_SIZE, DEFAULT_BATCH_WAIT_S)
    assert Path(JOURNAL).name == "batches.jsonl"


def test_an_agents_turns_offering_tools_go_directly_at_the_direct_price(tmp_path):
    tools = [{"type": "function", "function": {"name": "look", "parameters": {"type": "object", "properties": {}}}}]
    with FakeLLM(default="done") as srv:
        e = endpoint(srv, pricing={"input_per_mtok": 1_000_000, "output_per_mtok": 3_000_000})
        open_batches([e], tmp_path)
        out = asyncio.run(e.complete(user("q one"), tools=tools))
        assert out.text == "done" and srv.count == 1 and not srv.batch_lines
    assert out.usage.cost == pytest.approx(2 * 1.0 + 1 * 3.0)  # 2 words in, 1 out, at the entry's direct prices
