"""The function calls in a chat reply, as plain data the cache and the records can hold."""

from __future__ import annotations

import json
from typing import Any


def requested_calls(message: Any) -> tuple[dict[str, str], ...]:
    """`{"id", "name", "arguments"}` per tool call of a reply message (litellm's object or a dict), in order.

    `arguments` stays the text the model wrote: a provider that hands back an object gets it serialised,
    so that a malformed call is seen as the model wrote it, and decided by whoever executes it.
    """
    calls = _get(message, "tool_calls") or ()
    out = []
    for i, call in enumerate(calls):
        function = _get(call, "function") or {}
        arguments = _get(function, "arguments")
        if not isinstance(arguments, str):
            arguments = "{}" if arguments is None else json.dumps(arguments, ensure_ascii=False)
        out.append({"id": str(_get(call, "id") or f"call_{i}"), "name": str(_get(function, "name") or ""),
                    "arguments": arguments})
    return tuple(out)


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)
