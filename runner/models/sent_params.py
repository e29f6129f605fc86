"""What a request really carries: the params of one endpoint for one task, decided once, before any request.

litellm maps a request's OpenAI-style params onto each provider's (`reasoning_effort` becomes an Anthropic or
Gemini thinking budget, `max_tokens` an o-series `max_completion_tokens`) and refuses the ones a provider or
model does not take (`UnsupportedParamsError`), unless told to drop them. The runner never lets litellm drop a
param silently (no global `drop_params`): a param that would be dropped stops the run before any request
(ConfigError, exit 2), naming it, the model and the ways on; with the entry's `drop_params: true` it is left out
of every request and recorded (results.json `params_dropped`). So every consumer (the request itself, the
fingerprints, results.json and plan.json params, the budget's worst case, the cache key) reads what is sent.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from runner.errors import ConfigError

LITELLM_DIRECTIVES = ("allowed_openai_params",)
"""Params that instruct litellm and are not sent to the provider as such."""
REASONING_PARAMS = frozenset({"reasoning_effort", "thinking", "reasoning", "thinking_config", "thinkingConfig"})
"""Params that ask a model to reason (OpenAI's effort, Anthropic's and Gemini's budgets, a server's own form)."""
EPOCH_KEY = "runner_epoch"
"""In a request (so in its cache key) of an epoch whose provider takes no `seed`: never sent."""


def unsent(req: Mapping[str, Any]) -> dict[str, Any]:
    """The request as litellm gets it: without the runner's own keys."""
    return {k: v for k, v in req.items() if k != EPOCH_KEY}


@dataclass(frozen=True)
class SentParams:
    """The params of one endpoint's requests for one task, as they are sent."""

    params: dict[str, Any]
    """Sent (entry < task < run-level, less what is dropped)."""
    dropped: dict[str, Any] = field(default_factory=dict)
    """Set, but not taken by the provider or model, and left out (only with the entry's `drop_params: true`)."""
    seed: bool = True
    """Whether the provider takes `seed` (each epoch gets its own; without, the epoch keys the cache only)."""
    structured: bool = True
    """Whether the provider takes `response_format`: the runner's own request for a judge's JSON shape is left
    out where it does not (the parsers read a JSON object in prose as well)."""


def unsupported(litellm: Any, model: str, api_base: str | None, params: Mapping[str, Any]) -> list[str]:
    """The params litellm would refuse (or drop) for this model: each is tried as litellm maps it for the
    provider, with nothing sent (`get_optional_params`, the mapping acompletion applies to every call)."""
    try:
        from litellm.utils import get_optional_params

        _, provider, _, _ = litellm.get_llm_provider(model=model, api_base=api_base)
        refusal = litellm.UnsupportedParamsError
    except Exception:  # noqa: BLE001 - a model litellm cannot route (or a litellm without this mapping) is
        return []  # refused at its first call instead: drop_params is off, so nothing is dropped silently
    base = {k: params[k] for k in LITELLM_DIRECTIVES if k in params}

    def refused(subset: Mapping[str, Any]) -> bool:
        try:
            get_optional_params(model=model.split("/", 1)[-1] if model.startswith(f"{provider}/") else model,
                                custom_llm_provider=provider, drop_params=False, **{**base, **subset})
        except refusal:
            return True
        except Exception:  # noqa: BLE001 - any other complaint is the provider's to make, at the call
            return False
        return False

    candidates = {k: v for k, v in params.items() if k not in LITELLM_DIRECTIVES}
    if not refused(candidates):
        return []
    return [k for k, v in candidates.items() if refused({k: v})]


def decide(litellm: Any, *, name: str, model: str, api_base: str | None, params: Mapping[str, Any],
           drop: bool) -> SentParams:
    """What the endpoint `name` sends for these params; a ConfigError when a param would be dropped and the
    entry has not opted in."""
    refused = unsupported(litellm, model, api_base, params)
    seed = "seed" in params or not unsupported(litellm, model, api_base, {"seed": 0})
    structured = not unsupported(litellm, model, api_base, {"response_format": {"type": "json_object"}})
    if not refused:
        return SentParams(dict(params), seed=seed, structured=structured)
    if drop:
        return SentParams({k: v for k, v in params.items() if k not in refused},
                          {k: params[k] for k in refused}, seed=seed and "seed" not in refused,
                          structured=structured)
    shown = ", ".join(f"{k}={params[k]!r}" for k in refused)
    keys = ",".join(refused)
    raise ConfigError(
        f"{name}: litellm would not send {shown} to {model} (not a param litellm knows this provider or model "
        f"to take), so the run would not measure what it says; nothing was sent. To leave it out and record "
        f"that (results.json params_dropped), set drop_params: true on the entry ({name}); to send it anyway to a "
        f"server that takes it (vLLM, an OpenAI-compatible server litellm does not know), add "
        f"allowed_openai_params: [{keys}] to the entry's params (or the run's: 'params.allowed_openai_params="
        f"[{keys}]'); or remove it")


def decision_request(model: str, api_base: str | None, params: Mapping[str, Any], drop: bool) -> dict[str, Any]:
    """What decides a `decide` (the litellm release among it: its mappings change), as a response-cache
    request: a re-run whose every reply is cached then needs no litellm import to know what it sends."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        release = version("litellm")
    except PackageNotFoundError:  # pragma: no cover - litellm is a dependency
        release = "?"
    return {"sent_params": 2, "litellm": release, "model": model, "api_base": api_base, "params": dict(params),
            "drop_params": drop}


def from_stored(value: Mapping[str, Any] | None) -> SentParams | None:
    """A decision as the response cache stored it (None: none, or not one)."""
    if not isinstance(value, Mapping) or not isinstance(value.get("params"), dict):
        return None
    return SentParams(dict(value["params"]), dict(value.get("dropped") or {}), bool(value.get("seed", True)),
                      bool(value.get("structured", True)))


def stored(sent: SentParams) -> dict[str, Any]:
    """A decision as the response cache keeps it."""
    return {"params": sent.params, "dropped": sent.dropped, "seed": sent.seed, "structured": sent.structured}


class ParamsBook:
    """One endpoint's decisions: what is sent for each distinct set of effective params, decided once each (and
    remembered in the response cache, so a fully cached re-run needs no litellm import to know it)."""

    def __init__(self) -> None:
        self._decided: dict[str, SentParams] = {}
        self._last: tuple[Any, SentParams] | None = None

    def get(self, params: Mapping[str, Any] | None, endpoint: Any) -> SentParams:
        """The decision for a task's `params` on `endpoint` (an `Endpoint`)."""
        last = self._last
        if last is not None and last[0] is params:  # one task's params object: most calls
            return last[1]
        effective = endpoint.effective_params(params)
        key = json.dumps(effective, sort_keys=True, default=str)
        decided = self._decided.get(key)
        if decided is None:
            decided = self._decided[key] = _remembered(endpoint, effective)
        self._last = (params, decided)
        return decided


def _remembered(endpoint: Any, effective: dict[str, Any]) -> SentParams:
    """`decide`, through the endpoint's response cache."""
    from runner.models.cache import request_key
    from runner.models.litellm_import import import_litellm

    cache = endpoint.cache
    where = request_key(decision_request(endpoint.model, endpoint.origin or endpoint.api_base, effective,
                                         endpoint.drop_params)) if cache is not None else ""
    known = from_stored(cache.get(where)) if cache is not None else None
    if known is not None:
        return known
    decided = decide(import_litellm(), name=endpoint.name, model=endpoint.model, api_base=endpoint.api_base,
                     params=effective, drop=endpoint.drop_params)
    if cache is not None:
        cache.put(where, stored(decided))
    return decided
