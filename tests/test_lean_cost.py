"""The cost of a reply without litellm's full cost path (runner/models/lean_cost.py) is litellm's number, to
the last bit, on every usage shape it takes; the shapes it does not take go to litellm's own calculator."""

from __future__ import annotations

import asyncio
import datetime
from typing import Any

import pytest
from fake_llm import FakeLLM

from runner.models import lean_cost
from runner.models.litellm_model import Endpoint, _import_litellm

litellm = _import_litellm()
ORIGINAL = litellm.litellm_core_utils.litellm_logging.Logging._response_cost_calculator._runner_original


def usage(prompt: int, completion: int, prompt_details: dict[str, int] | None = None,
          completion_details: dict[str, int] | None = None) -> Any:
    return litellm.Usage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion,
                         prompt_tokens_details=prompt_details, completion_tokens_details=completion_details)


def reply(served: str, used: Any, **fields: Any) -> Any:
    """A chat reply as litellm's OpenAI handler leaves it (the provider in its hidden params)."""
    resp = litellm.ModelResponse(model=served, usage=used, choices=[
        {"index": 0, "message": {"role": "assistant", "content": "B"}, "finish_reason": "stop"}], **fields)
    resp._hidden_params.update(custom_llm_provider="openai", region_name=None, additional_headers={})
    return resp


def call_log(model: str, optional_params: dict[str, Any] | None = None) -> Any:
    log = litellm.litellm_core_utils.litellm_logging.Logging(
        model=model, messages=[{"role": "user", "content": "hi"}], stream=False, call_type="acompletion",
        start_time=datetime.datetime.now(), litellm_call_id="test", function_id="test")
    log.update_environment_variables(model=model, user=None, optional_params=dict(optional_params or {}),
                                     litellm_params={}, custom_llm_provider="openai")
    return log


# (request model, served model, usage, reply fields, request params): every shape the lean path prices
SHAPES = {
    "plain": ("openai/gpt-4o-mini", "gpt-4o-mini", usage(1234, 56), {}, {}),
    "dated snapshot served": ("openai/gpt-4o-mini", "gpt-4o-mini-2024-07-18", usage(1234, 56), {}, {}),
    "cached prompt tokens": ("openai/gpt-4o-mini", "gpt-4o-mini", usage(5000, 20, {"cached_tokens": 4096}), {}, {}),
    "audio in and out": ("openai/gpt-4o-audio-preview", "gpt-4o-audio-preview",
                         usage(900, 400, {"audio_tokens": 700, "text_tokens": 200},
                               {"audio_tokens": 300, "text_tokens": 100}), {}, {}),
    "audio, cached, no text counts": ("openai/gpt-4o-audio-preview", "gpt-4o-audio-preview",
                                      usage(900, 400, {"audio_tokens": 700, "cached_tokens": 100},
                                            {"audio_tokens": 300}), {}, {}),
    "reasoning tokens": ("openai/gpt-5", "gpt-5-2025-08-07", usage(300, 2000, None, {"reasoning_tokens": 1800}),
                         {}, {}),
    "flex tier asked": ("openai/gpt-5", "gpt-5", usage(300, 2000, {"cached_tokens": 100}), {},
                        {"service_tier": "flex"}),
    "priority tier served": ("openai/gpt-5.4", "gpt-5.4", usage(300, 200), {"service_tier": "priority"}, {}),
    "default tier served": ("openai/gpt-4o-mini", "gpt-4o-mini", usage(300, 200), {"service_tier": "default"}, {}),
    "above the 272k tier": ("openai/gpt-5.4", "gpt-5.4", usage(300_000, 1000, {"cached_tokens": 200_000}), {}, {}),
    "unknown model": ("openai/fake-model", "fake-model", usage(60, 1), {}, {}),
    "unknown request, known reply": ("openai/my-proxy-name", "gpt-4o-mini", usage(60, 1), {}, {}),
    "no usage details at all": ("openai/gpt-4o-mini", "gpt-4o-mini", usage(0, 0), {}, {}),
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_the_lean_cost_is_litellms_cost_to_the_last_bit(shape):
    model, served, used, fields, params = SHAPES[shape]
    lean = lean_cost.reply_cost(litellm, call_log(model, params), reply(served, used, **fields), None, model)
    assert lean is not lean_cost._SLOW, "this shape must take the lean path"
    full = ORIGINAL(call_log(model, params), reply(served, used, **fields), litellm_model_name=model)
    assert lean == full and type(lean) is type(full)
    if shape.startswith("unknown model"):
        assert lean is None
        return
    public = litellm.completion_cost(completion_response=reply(served, used, **fields), model=model,
                                     optional_params=params)
    assert lean == public and (lean > 0 or shape == "no usage details at all")


def test_shapes_it_does_not_reproduce_go_to_litellms_calculator():
    model, served = "openai/gpt-4o-mini", "gpt-4o-mini"
    cited = reply(served, usage(100, 10))
    cited.choices[0].message.annotations = [{"type": "url_citation", "url_citation": {"url": "https://x"}}]
    billed = reply(served, usage(100, 10))
    billed._hidden_params["additional_headers"] = {"llm_provider-x-litellm-response-cost": "0.5"}
    other = reply("claude-haiku-4-5", usage(100, 10))
    other._hidden_params["custom_llm_provider"] = "anthropic"
    for resp in (cited, billed, other):
        assert lean_cost.reply_cost(litellm, call_log(model), resp, None, model) is lean_cost._SLOW
    custom = call_log(model)
    custom.litellm_params["input_cost_per_token"] = 1.0
    assert lean_cost.reply_cost(litellm, custom, reply(served, usage(100, 10)), None, model) is lean_cost._SLOW
    # and through the installed hook they still get litellm's answer
    hook = litellm.litellm_core_utils.litellm_logging.Logging._response_cost_calculator
    assert hook(call_log(model), billed, litellm_model_name=model) == 0.5


def test_a_registered_callback_gets_litellms_own_path():
    model = "openai/gpt-4o-mini"
    litellm.success_callback = [lambda *a, **k: None]  # registered the way a user registers one
    try:
        assert lean_cost.reply_cost(litellm, call_log(model), reply("gpt-4o-mini", usage(10, 1)), None, model) \
            is lean_cost._SLOW
    finally:
        litellm.success_callback = []


def test_a_model_registered_later_gets_its_price():
    model = "openai/registered-late-model"
    assert lean_cost.reply_cost(litellm, call_log(model), reply("registered-late-model", usage(10, 1)), None,
                                model) is None
    litellm.register_model({"registered-late-model": {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6,
                                                      "litellm_provider": "openai", "mode": "chat"}})
    try:
        cost = lean_cost.reply_cost(litellm, call_log(model), reply("registered-late-model", usage(10, 1)), None,
                                    model)
        assert cost == pytest.approx(12e-6, rel=1e-12)
    finally:
        litellm.model_cost.pop("registered-late-model", None)


def test_a_reply_through_the_runner_costs_what_litellm_says(fake_llm: FakeLLM):
    endpoint = Endpoint(name="mini", model="openai/gpt-4o-mini", api_base=fake_llm.base_url, api_key="k")
    out = asyncio.run(endpoint.complete([{"role": "user", "content": "one two three"}]))
    expected = litellm.completion_cost(completion_response=reply("gpt-4o-mini", usage(3, 1)),
                                       model="openai/gpt-4o-mini")
    assert (out.usage.prompt_tokens, out.usage.completion_tokens) == (3, 1)
    assert out.usage.cost == expected > 0 and endpoint.usage()["cost_usd"] == expected
