"""OpenAI-compatible chat calls handed straight to litellm's own HTTP handler, below `acompletion`'s set-up.

On every call `litellm.acompletion` resolves the provider, maps the parameters, builds litellm_params and a
logging object, and only then hands all of it to `base_llm_http_handler.completion`, which sends the request,
transforms the reply and raises the provider's error: bench/bench_calls.py measured a bare acompletion at
1.61 ms of CPU per call and the runner's whole `Endpoint.complete` on this path at 0.84 ms (idle machine,
L=0, C=128), so ~0.8 ms per call is that set-up, as much as everything else the runner does per sample.
For one endpoint and one request shape (everything but the messages) those arguments are the same on every
call, except for the call id (tests/test_direct_calls.py checks that on the pinned litellm).

So the first call of a shape goes through `acompletion`, and what acompletion hands the handler is kept the
moment it is handed over, before the request is sent: the rest of a run's first wave, started in the same
pass of the event loop, already go direct (deciding only once the first reply was back sent a whole wave of
128 through acompletion, ~0.1 s of CPU more in the wave that delays every later one). Later calls of that shape
hand the handler the same arguments with their own messages, call id, logging object and empty response; a
failure is mapped by litellm's `exception_type` as acompletion maps it, and a reply gets its hidden params
(cost, rate-limit headers) from litellm's `update_response_metadata` as acompletion's wrapper sets them. The
request on the wire, the reply object and the exception classes are litellm's own (tests/test_direct_calls.py
compares both paths).

Everything else stays on `acompletion`: providers other than "openai" (an `api_base` OpenAI-compatible
server, OpenAI itself), any registered litellm callback (the direct path runs none), messages that are not
plain text turns (tool calls, images, audio: litellm may rewrite those), and a shape whose first call litellm
handed the handler in another form (its messages rewritten, a stream, a client of its own).
"""

from __future__ import annotations

import contextvars
import copy
import datetime
import inspect
import json
import logging
import uuid
from typing import Any

from runner.models.inline_calls import has_callbacks

_capturing: contextvars.ContextVar[list[dict[str, Any]] | None] = contextvars.ContextVar("_capturing", default=None)
"""Set around a learning call: litellm's handler appends what it was handed (acompletion runs completion()
in a copy of the caller's context, so the list is the caller's)."""


class _Seen(list):  # type: ignore[type-arg]
    """The handler calls one learning call made, with what to do at the first of them."""

    def __init__(self, first: Any) -> None:
        super().__init__()
        self.first = first


_PER_CALL = ("messages", "model_response", "logging_obj", "optional_params", "litellm_params")
"""The handler's arguments made anew for every call; the rest are kept as acompletion computed them."""

_parts: dict[str, Any] = {}
"""litellm's handler (unwrapped), logging class, response class and helpers, looked up once by `install`."""


def install(litellm: Any) -> str | None:
    """Let learning calls see what acompletion hands litellm's HTTP handler (once per process). Returns why
    the direct path stays off with this litellm (None: on): each private name it uses must be there and
    take the arguments it passes, else every call goes through acompletion."""
    try:
        from litellm.litellm_core_utils.exception_mapping_utils import exception_type
        from litellm.litellm_core_utils.litellm_logging import Logging
        from litellm.litellm_core_utils.llm_response_utils.response_metadata import update_response_metadata
        from litellm.types.utils import ModelResponse

        handler = litellm.main.base_llm_http_handler
        original = handler.completion
    except (ImportError, AttributeError) as exc:
        return f"{type(exc).__name__}: {exc}"
    if getattr(original, "_runner_seen", False):
        return None
    for where, fn, names in (
            ("BaseLLMHTTPHandler.completion", original, _PER_CALL),
            ("Logging", Logging, ("model", "messages", "stream", "litellm_call_id", "litellm_trace_id",
                                  "function_id", "call_type", "start_time", "kwargs")),
            ("Logging.update_environment_variables", getattr(Logging, "update_environment_variables", None),
             ("model", "user", "optional_params", "litellm_params", "custom_llm_provider")),
            ("exception_type", exception_type, ("model", "custom_llm_provider", "original_exception",
                                                "completion_kwargs", "extra_kwargs")),
            ("update_response_metadata", update_response_metadata,
             ("result", "logging_obj", "model", "kwargs", "start_time", "end_time"))):
        missing = missing_parameters(fn, names)
        if missing:
            return f"litellm's {where} no longer takes {', '.join(missing)}"

    def completion(*args: Any, **kwargs: Any) -> Any:
        seen = _capturing.get()
        if seen is not None and not args:
            hidden = getattr(kwargs.get("model_response"), "_hidden_params", None)  # provider, region: set
            seen.append({**{k: copy.deepcopy(v) if k in ("messages", "optional_params", "litellm_params") else v
                            for k, v in kwargs.items()},  # by completion() before the handler fills it
                         "_hidden": dict(hidden) if isinstance(hidden, dict) else {}})
            if len(seen) == 1 and isinstance(seen, _Seen):
                seen.first(seen)
        return original(*args, **kwargs)

    completion._runner_seen = True  # type: ignore[attr-defined]
    handler.completion = completion
    _parts.update(send=original, logging=Logging, response=ModelResponse, exception_type=exception_type,
                  metadata=update_response_metadata)
    return None


def missing_parameters(fn: Any, names: tuple[str, ...]) -> list[str]:
    """The keyword arguments of `names` that `fn` does not take (all of them when it is not callable)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return list(names)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return []
    return [n for n in names if n not in params]


def turn_off(reason: str) -> None:
    """Stop sending calls directly for the rest of the process (litellm_import.py says so once)."""
    if _parts:
        _parts.clear()
        fast_path_off("direct calls", reason)


def plain(messages: Any) -> bool:
    """Text turns only: the messages litellm passes to an OpenAI-compatible handler as they are."""
    return isinstance(messages, list) and bool(messages) and all(
        isinstance(m, dict) and m.keys() <= {"role", "content"} and m.get("role") in ("system", "user", "assistant")
        and isinstance(m.get("content"), str) for m in messages)


class DirectCalls:
    """One endpoint's learned request shapes (shape key -> the handler's fixed arguments, or None: never)."""

    def __init__(self) -> None:
        self.shapes: dict[str, dict[str, Any] | None] = {}
        self.direct = 0
        """Calls that went straight to the handler (the rest went through acompletion)."""

    async def complete(self, litellm: Any, kwargs: dict[str, Any]) -> Any:
        """`litellm.acompletion(**kwargs)`, or the same call handed to litellm's handler directly."""
        messages = kwargs.get("messages")
        if not _parts or kwargs.get("stream") or has_callbacks(litellm) or not plain(messages):
            return await litellm.acompletion(**kwargs)
        key = json.dumps({k: v for k, v in kwargs.items() if k != "messages"}, sort_keys=True, default=repr)
        if key not in self.shapes:
            return await self._learn(litellm, key, kwargs)
        fixed = self.shapes[key]
        if fixed is None:
            return await litellm.acompletion(**kwargs)
        self.direct += 1
        return await _send(litellm, fixed, kwargs)

    async def _learn(self, litellm: Any, key: str, kwargs: dict[str, Any]) -> Any:
        def decide(seen: list[dict[str, Any]]) -> None:
            if key not in self.shapes:  # the first such call to reach the handler decides
                self.shapes[key] = _fixed(seen, kwargs["messages"])

        seen = _Seen(decide)
        token = _capturing.set(seen)
        try:
            return await litellm.acompletion(**kwargs)
        finally:  # what was handed over does not depend on the reply: a failed call teaches as well
            _capturing.reset(token)
            if len(seen) > 1:  # litellm called the handler again for this one call: not a form we reproduce
                self.shapes[key] = None


def _fixed(seen: list[dict[str, Any]], messages: list[dict[str, Any]]) -> dict[str, Any] | None:
    """What one handler call kept for its shape, if litellm handed it over in the form the direct path
    reproduces: once, for "openai", the messages as given, no stream, no client or session of its own."""
    if len(seen) != 1:
        return None
    call = seen[0]
    if (call.get("custom_llm_provider") != "openai" or call.get("messages") != messages or call.get("stream")
            or call.get("acompletion") is not True or call.get("client") is not None
            or call.get("shared_session") is not None or not isinstance(call.get("litellm_params"), dict)):
        return None
    logged = getattr(call.get("logging_obj"), "optional_params", None)
    return {**{k: v for k, v in call.items() if k not in _PER_CALL and k != "_hidden"},
            "_hidden": call["_hidden"],
            "_optional_params": call.get("optional_params") or {},
            "_logged_params": logged if isinstance(logged, dict) else {},
            "_litellm_params": {k: v for k, v in call["litellm_params"].items() if k != "litellm_call_id"}}


async def _send(litellm: Any, fixed: dict[str, Any], kwargs: dict[str, Any]) -> Any:
    """One call as acompletion would make it, from the handler on. Where a step of litellm's own fails in a
    way no provider error explains (this litellm changed), the direct path turns off and the call goes
    through acompletion: the path is never the reason a call fails."""
    start = datetime.datetime.now()
    call_id = str(uuid.uuid4())
    messages = kwargs["messages"]
    request = {**kwargs, "litellm_call_id": call_id}
    litellm_params = {**fixed["_litellm_params"], "litellm_call_id": call_id}
    parts = dict(_parts)
    if not parts:  # turned off meanwhile
        return await litellm.acompletion(**kwargs)
    try:
        log = parts["logging"](model=kwargs["model"], messages=messages, stream=False, litellm_call_id=call_id,
                               litellm_trace_id=None, function_id="", call_type="acompletion", start_time=start,
                               kwargs=request)
        log.update_environment_variables(model=fixed["model"], user=None,
                                         optional_params=copy.deepcopy(fixed["_logged_params"]),
                                         litellm_params=litellm_params, custom_llm_provider="openai")
        empty = parts["response"]()
        empty._hidden_params.update(fixed["_hidden"])
    except Exception as exc:  # noqa: BLE001 - nothing was sent: acompletion sends it
        turn_off(f"setting up a call failed: {type(exc).__name__}: {exc}")
        return await litellm.acompletion(**kwargs)
    handed = {k: v for k, v in fixed.items() if not k.startswith("_")}
    try:
        resp = await parts["send"](**handed, messages=messages, model_response=empty,
                                   logging_obj=log, optional_params=copy.deepcopy(fixed["_optional_params"]),
                                   litellm_params=litellm_params)
    except Exception as exc:  # noqa: BLE001 - mapped as acompletion maps it (the mapping raises)
        extra = {k: v for k, v in request.items() if k not in ("model", "messages")}
        try:
            parts["exception_type"](model=kwargs["model"], custom_llm_provider="openai", original_exception=exc,
                                    completion_kwargs={"model": kwargs["model"], "messages": messages,
                                                       "timeout": kwargs.get("timeout"),
                                                       "api_key": kwargs.get("api_key"), "acompletion": True},
                                    extra_kwargs=extra)
        except Exception as mapped:  # noqa: BLE001 - litellm's own exception classes are the mapping's answer
            if type(mapped).__module__.startswith("litellm."):
                raise mapped from exc
            turn_off(f"mapping an error failed: {type(mapped).__name__}: {mapped}")
        else:
            turn_off("litellm's exception_type returned instead of raising")
        return await litellm.acompletion(**kwargs)  # as a retry of the failed request would
    if not isinstance(resp, parts["response"]) or not getattr(resp, "choices", None):
        turn_off(f"the handler returned {type(resp).__name__}, not a chat reply")
        return await litellm.acompletion(**kwargs)
    try:
        parts["metadata"](result=resp, logging_obj=log, model=kwargs["model"], kwargs=request, start_time=start,
                          end_time=datetime.datetime.now())
    except Exception as exc:  # noqa: BLE001 - the reply stands; its cost then comes from completion_cost
        turn_off(f"reading a reply's metadata failed: {type(exc).__name__}: {exc}")
    return resp


_notes = logging.getLogger("runner.fast_paths")


class _Once(logging.Filter):
    """Each note once per process: worker processes forward theirs to the parent, which says it once."""

    def __init__(self) -> None:
        super().__init__()
        self.said: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        if text in self.said:
            return False
        self.said.add(text)
        return True


_notes.addFilter(_Once())


def fast_path_off(path: str, reason: str) -> None:
    """One note on stderr that a fast path of the call layer is off with this litellm: calls then go through
    litellm's public `acompletion`, as they would without it (same replies, costs and errors)."""
    from importlib import metadata

    try:
        version = metadata.version("litellm")
    except metadata.PackageNotFoundError:
        version = "?"
    _notes.warning("note: the call layer's %s are off with litellm %s (%s); calls go through "
                   "litellm.acompletion, which gives the same results a little slower", path, version, reason)
