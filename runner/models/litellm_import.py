"""Importing litellm: once, in its own thread, without blocking the event loop; the only module that imports it
.

litellm takes about two seconds to import. The call layer (litellm_model.py) starts the import on first
need and awaits it, so cache hits and records go on meanwhile; `start_import` may start it earlier.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import gc
import logging
import os
import sys
import threading
from typing import Any

from runner.models import direct_calls, inline_calls, prices
from runner.models.inline_calls import has_callbacks, use_inline_executor

_import_lock = threading.Lock()
"""Held for the whole import (seconds): only the importing thread, or a synchronous caller, waits on it."""
_future_lock = threading.Lock()
"""Guards `_import_future` only, so the event loop never waits on the import itself."""
_litellm: Any = None
_import_future: concurrent.futures.Future[Any] | None = None

# While litellm is imported in its thread, the event loop gives up the GIL at every file or sqlite
# operation (cache hits, records) and then waits a whole switch interval (5 ms by default) to get it
# back from the importing thread; a short interval keeps it moving meanwhile.
_IMPORT_SWITCH_INTERVAL = 0.0005


def import_litellm() -> Any:
    """litellm, imported and set up for the runner (once per process; later calls return it)."""
    global _litellm
    with _import_lock:
        if _litellm is None:
            # Without this litellm fetches its cost map from the network at import time.
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            # OpenAI-compatible chat through litellm's own HTTP handler (its aiohttp transport,
            # request/response transformation, exception mapping) rather than through the openai SDK
            # client, which re-walks every request body against its TypedDicts and builds its own
            # response model before litellm converts it again: ~1 ms CPU less per call. Still one
            # litellm.acompletion call path; set the variable to "false" to get the SDK path back.
            os.environ.setdefault("EXPERIMENTAL_OPENAI_BASE_LLM_HTTP_HANDLER", "true")
            # The import creates ~250k objects that live as long as the process: collecting while it
            # runs is wasted work, and once frozen no full collection rescans them (unfrozen, every
            # full collection during the calls took ~0.2 s).
            gc_enabled = gc.isenabled()
            gc.disable()
            try:
                import litellm
            finally:
                gc.freeze()
                if gc_enabled:
                    gc.enable()

            # The tokenizer litellm hands every OpenAI-compatible call (~0.25 s to load on the first one,
            # which would hold up every request of the first wave): loaded with the import instead.
            with contextlib.suppress(Exception):  # an optimisation: else the first call loads it, as before
                litellm.main._get_encoding()  # type: ignore[no-untyped-call]

            # Per-call work the runner does not need: debug banners, logging callbacks, telemetry.
            litellm.suppress_debug_info = True
            litellm.set_verbose = False  # type: ignore[attr-defined]  # exists, not re-exported
            litellm.telemetry = False
            # Never drop a param silently: the run decides what is sent before any request (sent_params.py).
            litellm.drop_params = False
            litellm.callbacks = []
            litellm.success_callback = []
            litellm.failure_callback = []
            litellm.turn_off_message_logging = True
            _skip_unobserved_logging(litellm)
            for path, off in (("direct calls", direct_calls.install(litellm)),
                              ("inline calls", inline_calls.attach(litellm))):
                if off is not None:
                    direct_calls.fast_path_off(path, off)
            logging.getLogger("LiteLLM").setLevel(logging.WARNING)
            prices.merge_pending(litellm)  # the run's pricing_file, read when the run was built
            _litellm = litellm
    return _litellm


def _skip_unobserved_logging(litellm: Any) -> None:
    """Drop litellm's per-call success-logging task while no callback would receive it.

    After every call litellm schedules a coroutine that builds a standard logging payload (cost
    lookups, metadata, copies of the messages) for the callbacks; with none registered its only
    result is CPU (~0.2 ms per call) and a queue flushed at exit. If a callback is registered later,
    the original helper runs again. Only applied when litellm has the helper this was measured on.
    """
    utils = sys.modules.get("litellm.utils")
    helper = getattr(utils, "_client_async_logging_helper", None)
    if helper is None or not asyncio.iscoroutinefunction(helper) or getattr(helper, "_runner_lean", False):
        return

    async def logging_helper(*args: Any, **kwargs: Any) -> Any:
        if has_callbacks(litellm):
            return await helper(*args, **kwargs)
        return None

    logging_helper._runner_lean = True  # type: ignore[attr-defined]
    utils._client_async_logging_helper = logging_helper  # type: ignore[union-attr]


def _import_in_thread() -> None:
    assert _import_future is not None
    previous = sys.getswitchinterval()
    sys.setswitchinterval(min(previous, _IMPORT_SWITCH_INTERVAL))
    try:
        _import_future.set_result(import_litellm())
    except BaseException as exc:  # noqa: BLE001 - handed to every waiting caller
        _import_future.set_exception(exc)
    finally:
        sys.setswitchinterval(previous)


def start_import() -> concurrent.futures.Future[Any]:
    """Import litellm once, in its own thread; every caller gets the same future."""
    global _import_future
    with _future_lock:
        if _import_future is None:
            _import_future = concurrent.futures.Future()
            # Running, so it cannot be cancelled: a caller cancelled while it waits (a sample stopped) has
            # asyncio cancel the future it waits on, and that must not fail the import for every other caller.
            _import_future.set_running_or_notify_cancel()
            if _litellm is not None:
                _import_future.set_result(_litellm)
            else:
                threading.Thread(target=_import_in_thread, name="litellm-import", daemon=True).start()
        return _import_future


async def litellm_ready() -> Any:
    """litellm, imported on first need without blocking the event loop (cache hits go on meanwhile), with
    this loop's default executor running its non-blocking calls inline (inline_calls.py)."""
    litellm = _litellm if _litellm is not None else await asyncio.wrap_future(start_import())
    use_inline_executor()
    return litellm
