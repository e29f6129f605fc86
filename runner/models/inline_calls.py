"""litellm's `acompletion` without its per-call thread hop where the hop buys nothing.

`litellm.acompletion` runs the synchronous `completion()` through `loop.run_in_executor(None, ...)` on every
call, then awaits the coroutine it returns. For the OpenAI provider `completion(acompletion=True)` only
builds the request (parameters, headers, body) and returns the coroutine that sends it, with its own HTTP
handler or the openai SDK alike: the thread buys no parallelism (the GIL), but every call queues for one of
asyncio's few pool threads and gives the loop up twice (docs/performance.md: the request phase of 1000
calls 0.2 s shorter without it). The event loop's default executor installed here runs exactly those
calls inline and hands the finished future straight back, so `acompletion` awaits the request without
giving up the loop in between. A call it cannot vouch for keeps the thread: another provider (whose
synchronous path may fetch credentials or sign requests), a `file` part (litellm downloads PDF URLs while
building the body), a secret manager (keys read over the network), any litellm callback (they run in
`completion()` and may block), streaming.

Because the coroutine is awaited in the same step that made it, a call cancelled when the run stops can no
longer leave "coroutine ... was never awaited" behind, which it did while the thread held the coroutine.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import weakref
from collections.abc import Callable
from typing import Any

_INLINE_PROVIDERS = frozenset({"openai", "custom_openai"})
"""Providers whose `completion(acompletion=True)` branch (main.py, the OpenAI-compatible one) only builds
the request before returning its coroutine (checked against litellm 1.82)."""
_INLINE_PARTS = frozenset({"text", "image_url", "input_audio"})
"""Message parts the OpenAI request transformation only reshapes (a `file` part may be downloaded)."""

_litellm: Any = None
_providers: dict[tuple[str, str | None, str | None], str | None] = {}
_installed: weakref.WeakSet[asyncio.AbstractEventLoop] = weakref.WeakSet()


class InlineExecutor(concurrent.futures.ThreadPoolExecutor):
    """A thread pool that runs litellm's non-blocking `completion()` calls in the calling (loop) thread."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        if args or kwargs or not _runs_inline(fn):
            return super().submit(fn, *args, **kwargs)
        # A finished asyncio future: run_in_executor passes it through (wrap_future keeps asyncio futures),
        # and awaiting it does not suspend, so nothing can cancel the call between building its coroutine
        # and awaiting it.
        future = asyncio.get_running_loop().create_future()
        try:
            future.set_result(fn())
        except Exception as exc:  # noqa: BLE001 - raised to acompletion at its await, as from the thread
            future.set_exception(exc)
        return future


def attach(litellm: Any) -> str | None:
    """Tell this module which litellm to recognise (litellm_import.py calls it once litellm is loaded).
    Returns why calls keep their thread with this litellm (None: the inline path is on)."""
    global _litellm
    main = getattr(litellm, "main", None)
    for name, found in (("main.completion", getattr(main, "completion", None)),
                        ("get_llm_provider", getattr(litellm, "get_llm_provider", None))):
        if not callable(found):
            return f"litellm has no {name}"
    if not hasattr(litellm, "secret_manager_client"):
        return "litellm has no secret_manager_client"
    _litellm = litellm
    return None


def use_inline_executor() -> None:
    """In the running event loop: make `InlineExecutor` its default executor (once per loop)."""
    loop = asyncio.get_running_loop()
    if loop in _installed:
        return
    # Private, but the only way to know: a pool asyncio already made for other work is shut down (its
    # queued work still runs) rather than leaked.
    previous = getattr(loop, "_default_executor", None)
    loop.set_default_executor(InlineExecutor(thread_name_prefix="asyncio"))
    if previous is not None and not isinstance(previous, InlineExecutor):
        previous.shutdown(wait=False)
    _installed.add(loop)


def _runs_inline(fn: Callable[..., Any]) -> bool:
    """Whether `fn` is acompletion's `partial(context.run, partial(completion, ...))` for a call whose
    synchronous path cannot block."""
    litellm = _litellm
    if litellm is None or not isinstance(fn, functools.partial) or len(fn.args) != 1 or fn.keywords:
        return False
    if not isinstance(getattr(fn.func, "__self__", None), contextvars.Context):
        return False
    call = fn.args[0]
    if not isinstance(call, functools.partial) or call.args or call.func is not litellm.main.completion:
        return False
    kw = call.keywords
    if kw.get("acompletion") is not True or kw.get("stream") or litellm.secret_manager_client is not None:
        return False
    if has_callbacks(litellm) or _provider(kw) not in _INLINE_PROVIDERS:
        return False
    return all(_plain(message) for message in kw.get("messages") or ())


def _plain(message: Any) -> bool:
    content = message.get("content") if isinstance(message, dict) else None
    if content is None or isinstance(content, str):
        return isinstance(message, dict)
    return isinstance(content, list) and all(isinstance(p, dict) and p.get("type") in _INLINE_PARTS
                                             for p in content)


def _provider(kw: dict[str, Any]) -> str | None:
    """The provider litellm routes this call to (as `completion()` decides it), once per model and address."""
    model = kw.get("model")
    if not isinstance(model, str):
        return None
    key = (model, kw.get("custom_llm_provider"), kw.get("api_base") or kw.get("base_url"))
    if key not in _providers:
        try:
            _providers[key] = str(_litellm.get_llm_provider(model=model, custom_llm_provider=key[1],
                                                            api_base=key[2])[1])
        except Exception:  # noqa: BLE001 - litellm will say so itself, from the thread
            _providers[key] = None
    return _providers[key]


def has_callbacks(litellm: Any) -> bool:
    """Whether any litellm callback is registered (they observe, and may block, every call)."""
    return any(getattr(litellm, name, None) for name in (
        "callbacks", "success_callback", "_async_success_callback", "input_callback",
        "_async_input_callback", "failure_callback", "_async_failure_callback", "service_callback"))
