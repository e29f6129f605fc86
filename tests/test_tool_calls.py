"""Function tools through the one call layer: the model's calls come back in its order, as it wrote them,
and the response cache keys the tools offered and returns the calls on a hit."""

from __future__ import annotations

import asyncio

from runner.models.cache import ResponseCache
from runner.models.litellm_model import Endpoint


def test_tool_calls_come_back_in_order_and_a_cache_hit_returns_them(fake_llm, tmp_path) -> None:
    tools = [{"type": "function", "function": {"name": n, "description": n, "parameters": {"type": "object"}}}
             for n in ("look_up", "count")]
    fake_llm.tool_scripts = [("find it", [{"tool_calls": [{"name": "look_up", "arguments": {"q": "x"}},
                                                          {"name": "count", "arguments": '{"bad": '}]},
                                          {"content": "done"}])]
    endpoint = Endpoint(name="m", model="openai/fake-model", api_base=fake_llm.base_url, api_key="k",
                        cache=ResponseCache(tmp_path / "cache"))
    messages = [{"role": "user", "content": "find it"}]
    first = asyncio.run(endpoint.complete(messages, tools=tools))
    assert [(c["name"], c["arguments"]) for c in first.tool_calls] == [("look_up", '{"q": "x"}'), ("count", '{"bad": ')]
    assert first.finish_reason == "tool_calls" and fake_llm.requests[-1]["tools"] == tools
    again = asyncio.run(endpoint.complete(messages, tools=tools))
    assert again.usage.cached and again.tool_calls == first.tool_calls and len(fake_llm.requests) == 1
    # The tools are part of what decides the reply: other tools, another request.
    asyncio.run(endpoint.complete(messages, tools=tools[:1]))
    assert len(fake_llm.requests) == 2
