"""Calls handed straight to litellm's HTTP handler (runner/models/direct_calls.py) are the calls acompletion
makes: the same request on the wire, the same reply and hidden params (cost, rate-limit headers), the same
exception class, status, headers and text for every failure the fake server produces; and what is not
plain text, or is watched by a litellm callback, goes through acompletion."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from fake_llm import FakeLLM

from runner.models import direct_calls
from runner.models.direct_calls import DirectCalls, plain
from runner.models.failures import classify, http_status, retry_after
from runner.models.litellm_model import Endpoint, _import_litellm

litellm = _import_litellm()
CALLBACK_LISTS = ("callbacks", "success_callback", "_async_success_callback", "input_callback",
                  "_async_input_callback", "failure_callback", "_async_failure_callback", "service_callback")


def call(base_url: str, text: str, **extra: Any) -> dict[str, Any]:
    return {"model": "openai/fake-model", "api_base": base_url, "messages": [{"role": "user", "content": text}],
            "temperature": 0.0, "max_tokens": 16, "seed": 7, "api_key": "k", "timeout": extra.pop("timeout", 30.0),
            "num_retries": 0, "max_retries": 0, **extra}


def learned(srv: FakeLLM, **extra: Any) -> DirectCalls:
    """A DirectCalls that has learned the shape of `call(srv.base_url, ...)` from one acompletion call."""
    calls = DirectCalls()
    asyncio.run(calls.complete(litellm, call(srv.base_url, "learn", **extra)))
    assert len(calls.shapes) == 1 and next(iter(calls.shapes.values())) is not None, calls.shapes
    return calls


def reply_view(resp: Any) -> dict[str, Any]:
    hidden = resp._hidden_params
    headers = {k: v for k, v in (hidden.get("additional_headers") or {}).items()
               if k != "llm_provider-date"}  # the server's clock, which can tick between the two calls
    return {"choices": [c.model_dump() for c in resp.choices], "usage": resp.usage.model_dump(), "model": resp.model,
            "cost": hidden.get("response_cost"), "headers": headers,
            "api_base": hidden.get("api_base"), "model_name": hidden.get("litellm_model_name"),
            "provider": hidden.get("custom_llm_provider")}


def test_a_direct_call_sends_and_returns_what_acompletion_does():
    with FakeLLM(default="Answer: B", max_in_flight=50) as srv:  # rate-limit headers on every reply
        calls = learned(srv)
        srv.reset()
        via_litellm = asyncio.run(litellm.acompletion(**call(srv.base_url, "q1")))
        direct = asyncio.run(calls.complete(litellm, call(srv.base_url, "q1")))
        assert calls.direct == 1
        sent = list(srv.requests)
    assert sent[0] == sent[1]  # the body on the wire
    assert reply_view(direct) == reply_view(via_litellm)
    assert reply_view(direct)["headers"]["x-ratelimit-remaining-requests"] == "49"
    assert direct._hidden_params["litellm_call_id"] != via_litellm._hidden_params["litellm_call_id"]


def test_a_priced_model_costs_the_same_on_both_paths():
    with FakeLLM(default="Answer: B", model="gpt-4o-mini") as srv:
        kwargs = {**call(srv.base_url, "learn"), "model": "openai/gpt-4o-mini"}
        calls = DirectCalls()
        asyncio.run(calls.complete(litellm, kwargs))
        again = {**kwargs, "messages": [{"role": "user", "content": "q2"}]}
        direct = asyncio.run(calls.complete(litellm, again))
        via_litellm = asyncio.run(litellm.acompletion(**again))
    assert calls.direct == 1
    cost = direct._hidden_params["response_cost"]
    assert cost == via_litellm._hidden_params["response_cost"] == litellm.completion_cost(via_litellm) > 0


@pytest.mark.parametrize("fault", ["401", "403", "404", "429", "quota", "500", "503", "broken", "disconnect",
                                   "timeout"])
def test_every_failure_is_the_same_exception_on_both_paths(fault: str):
    extra = {"timeout": 0.5} if fault == "timeout" else {}
    with FakeLLM(default="B", retry_after="3", hang=2.0) as srv:
        calls = learned(srv, **extra)
        srv.faults = [fault]  # the first attempt of each new body fails so

        def failure(how: str) -> BaseException:
            kwargs = call(srv.base_url, f"q-{how}", **extra)
            coro = calls.complete(litellm, kwargs) if how == "direct" else litellm.acompletion(**kwargs)
            with pytest.raises(Exception) as info:
                asyncio.run(coro)
            return info.value

        direct, via_litellm = failure("direct"), failure("acompletion")
        assert calls.direct == 1
    assert type(direct) is type(via_litellm)
    assert http_status(direct) == http_status(via_litellm)
    assert retry_after(direct) == retry_after(via_litellm)
    assert classify(direct, litellm) == classify(via_litellm, litellm)
    def text(exc: BaseException) -> str:  # a timeout says how long it waited, to the millisecond
        return re.sub(r"taken=[0-9.]+ seconds", "taken=T seconds", str(exc).replace("q-direct", "q-acompletion"))

    assert text(direct) == text(via_litellm)


def test_only_the_messages_and_the_call_id_differ_between_two_calls_of_one_shape():
    # What the direct path rests on, checked on the pinned litellm: a new litellm that handed the handler
    # anything else per call would fail here first.
    seen: list[dict[str, Any]] = []
    with FakeLLM(default="B") as srv:
        for text in ("one", "two"):
            token = direct_calls._capturing.set(seen)
            try:
                asyncio.run(litellm.acompletion(**call(srv.base_url, text)))
            finally:
                direct_calls._capturing.reset(token)
    first, second = seen
    assert first.keys() == second.keys()
    differ = {k for k in first if k not in ("model_response", "logging_obj", "provider_config")
              and first[k] != second[k]}
    assert differ == {"messages", "litellm_params"}
    assert {k for k in first["litellm_params"] if first["litellm_params"][k] != second["litellm_params"][k]} \
        == {"litellm_call_id"}
    assert type(first["provider_config"]) is type(second["provider_config"])


def test_tool_turns_and_watched_calls_go_through_acompletion():
    assert plain([{"role": "system", "content": "s"}, {"role": "user", "content": "u"}])
    assert not plain([{"role": "user", "content": [{"type": "text", "text": "u"}]}])
    assert not plain([{"role": "assistant", "content": None, "tool_calls": []}])
    assert not plain([{"role": "tool", "content": "42", "tool_call_id": "c1"}])
    assert not plain([])
    with FakeLLM(default="B") as srv:
        calls = learned(srv)
        tool_turns = call(srv.base_url, "x")
        tool_turns["messages"] = [{"role": "user", "content": "x"},
                                  {"role": "assistant", "content": None, "tool_calls": [
                                      {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                                  {"role": "tool", "tool_call_id": "c1", "content": "42"}]
        asyncio.run(calls.complete(litellm, tool_turns))
        assert calls.direct == 0
        watcher = litellm.integrations.custom_logger.CustomLogger()  # what any observability callback is
        lists = {name: list(getattr(litellm, name)) for name in CALLBACK_LISTS}
        litellm.callbacks = [watcher]
        try:
            asyncio.run(calls.complete(litellm, call(srv.base_url, "watched")))
        finally:  # litellm spreads a used callback over its other lists
            for name, value in lists.items():
                setattr(litellm, name, value)
        assert calls.direct == 0  # a callback sees every call: acompletion's path runs it
        asyncio.run(calls.complete(litellm, call(srv.base_url, "plain again")))
        assert calls.direct == 1


def test_an_endpoint_sends_most_calls_directly_and_counts_them_as_before():
    with FakeLLM(default="Answer: B") as srv:
        endpoint = Endpoint(name="m", model="openai/fake-model", api_base=srv.base_url, api_key="k",
                            concurrency=4)

        async def ask() -> list[Any]:
            return await asyncio.gather(*(endpoint.complete([{"role": "user", "content": f"q{i}"}])
                                          for i in range(20)))

        outs = asyncio.run(ask())
        assert srv.count == 20
    assert {o.text for o in outs} == {"Answer: B"}
    assert endpoint._direct.direct == 19  # every call after the first: the shape is learned as it is sent
    assert endpoint.stats.requests == endpoint.stats.successes == 20
    assert endpoint.stats.prompt_tokens == sum(o.usage.prompt_tokens for o in outs) > 0


def test_a_wave_started_together_learns_its_shape_from_the_first_call_sent():
    with FakeLLM(default="B", latency=0.05) as srv:
        calls = DirectCalls()

        async def wave() -> list[Any]:
            return await asyncio.gather(*(calls.complete(litellm, call(srv.base_url, f"w{i}")) for i in range(8)))

        outs = asyncio.run(wave())
        sent = list(srv.requests)
    assert calls.direct == 7  # decided before the first reply came back
    assert [o.choices[0].message.content for o in outs] == ["B"] * 8
    bodies = sorted(sent, key=lambda body: body["messages"][0]["content"])
    assert [b["messages"][0]["content"] for b in bodies] == [f"w{i}" for i in range(8)]
    rest = [{k: v for k, v in b.items() if k != "messages"} for b in bodies]
    assert all(r == rest[0] for r in rest)


def test_a_call_that_hands_the_handler_twice_teaches_no_shape():
    # As a retry inside litellm would (the pinned release makes none for these calls): one acompletion-like
    # call reaching the real handler twice is a form the direct path does not reproduce, so its shape stays
    # on acompletion although the first hand-over was plain.
    class Twice:
        def __getattr__(self, name: str) -> Any:
            return getattr(litellm, name)

        async def acompletion(self, **kwargs: Any) -> Any:
            await litellm.acompletion(**kwargs)
            return await litellm.acompletion(**kwargs)

    with FakeLLM(default="B") as srv:
        calls = DirectCalls()
        out = asyncio.run(calls.complete(Twice(), call(srv.base_url, "twice")))
        asyncio.run(calls.complete(litellm, call(srv.base_url, "after")))
        assert srv.count == 3
    assert out.choices[0].message.content == "B"
    assert list(calls.shapes.values()) == [None] and calls.direct == 0


def test_the_direct_path_checks_what_it_uses_and_stays_off_where_litellm_differs():
    # The pinned litellm passes the check (the module is installed, so its parts are there)...
    assert direct_calls.install(litellm) is None and direct_calls._parts
    # ...and a litellm without the handler, or whose helpers take other arguments, is named, not used.
    class NoHandler:
        main = object()

    assert "base_llm_http_handler" in str(direct_calls.install(NoHandler()))

    def renamed(result: Any, logging_object: Any) -> None: ...

    assert direct_calls.missing_parameters(renamed, ("result", "logging_obj")) == ["logging_obj"]
    assert direct_calls.missing_parameters(lambda **kw: None, ("anything",)) == []
    assert direct_calls.missing_parameters(None, ("x",)) == ["x"]


def test_a_direct_call_whose_set_up_fails_goes_through_acompletion_and_turns_the_path_off(caplog):
    # What a litellm release that changed its Logging class would do to a learned shape: the call is still
    # answered (through acompletion), the run is told once, and later calls skip the direct path.
    with FakeLLM(default="Answer: B") as srv:
        calls = learned(srv)
        saved = dict(direct_calls._parts)

        def changed_logging(**kwargs: Any) -> Any:
            raise TypeError("Logging.__init__() got an unexpected keyword argument 'litellm_trace_id'")

        direct_calls._parts["logging"] = changed_logging
        try:
            with caplog.at_level("WARNING", logger="runner.fast_paths"):
                outs = [asyncio.run(calls.complete(litellm, call(srv.base_url, f"q{i}"))) for i in range(3)]
            assert not direct_calls._parts
        finally:
            direct_calls._parts.update(saved)
        assert srv.count == 4  # the learning call and three answered calls: nothing sent twice
    assert [o.choices[0].message.content for o in outs] == ["Answer: B"] * 3
    notes = [r.getMessage() for r in caplog.records if r.name == "runner.fast_paths"]
    assert len(notes) == 1 and "direct calls are off" in notes[0] and "unexpected keyword" in notes[0]
