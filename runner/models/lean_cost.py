"""litellm's cost of an OpenAI chat reply, without the detours of litellm's cost path around it.

After every call litellm's client wrapper prices the reply (`Logging._response_cost_calculator`, stored as
`_hidden_params["response_cost"]`, which the runner reads). Around the arithmetic that path dumps the usage,
resolves three candidate model names, and for a model it has no price for walks the price map three times
and formats three tracebacks: 0.05 ms per reply for a known model, 0.1-0.2 ms for an unknown one. Here the
same steps are taken in the same order (the candidate names, their resolution against `litellm.model_cost`,
then litellm's own `generic_cost_per_token`, which prices text, cached, audio, image and reasoning tokens,
tiered and service-tier prices), and a name litellm has no model info for is remembered as such. The
result is litellm's number by construction; tests/test_call_fast_paths.py compares it with
`litellm.completion_cost` on several usage shapes.

Anything else goes to litellm's own calculator, untouched: another provider or call type, a cache hit
inside litellm, custom or per-deployment prices, a base model, a region, a cost sent by the provider, web
or file search, discounts or margins, and any registered callback (they read the cost breakdown that only
litellm's path records).
"""

from __future__ import annotations

from typing import Any

from runner.models.inline_calls import has_callbacks

_SLOW = object()
"""What `reply_cost` returns when litellm's own calculator must decide."""

_helpers: dict[str, Any] = {}
"""litellm's own functions this path calls, looked up once by `install`."""
_unknown: set[tuple[str, int, int]] = set()
"""Resolved model names litellm has no model info for, keyed with the price map's identity and size (a
model registered later gets its price)."""


def install(litellm: Any) -> None:
    """Route litellm's per-reply cost through `reply_cost` (once; litellm's calculator stays the fallback)."""
    from litellm.cost_calculator import _model_contains_known_llm_provider
    from litellm.litellm_core_utils import litellm_logging
    from litellm.litellm_core_utils.llm_cost_calc.tool_call_cost_tracking import StandardBuiltInToolCostTracking
    from litellm.litellm_core_utils.llm_cost_calc.utils import generic_cost_per_token

    logging_cls = litellm_logging.Logging
    original = logging_cls._response_cost_calculator
    if getattr(original, "_runner_lean", False):
        return
    _helpers.update(custom_pricing=litellm_logging.use_custom_pricing_for_model,
                    base_model=getattr(litellm_logging, "_get_base_model_from_metadata"),  # noqa: B009 - private
                    known_provider=_model_contains_known_llm_provider, generic=generic_cost_per_token,
                    web_search=StandardBuiltInToolCostTracking.response_object_includes_web_search_call,
                    file_search=StandardBuiltInToolCostTracking.response_object_includes_file_search_call)

    def _response_cost_calculator(self: Any, result: Any, cache_hit: bool | None = None,
                                  litellm_model_name: str | None = None,
                                  router_model_id: str | None = None) -> Any:
        try:
            cost = reply_cost(litellm, self, result, cache_hit, litellm_model_name)
        except Exception:  # noqa: BLE001 - whatever this path did not foresee, litellm's decides
            cost = _SLOW
        if cost is _SLOW:
            return original(self, result, cache_hit=cache_hit, litellm_model_name=litellm_model_name,
                            router_model_id=router_model_id)
        return cost

    _response_cost_calculator._runner_lean = True  # type: ignore[attr-defined]
    _response_cost_calculator._runner_original = original  # type: ignore[attr-defined]  # for the tests
    logging_cls._response_cost_calculator = _response_cost_calculator  # type: ignore[method-assign]


def reply_cost(litellm: Any, log: Any, result: Any, cache_hit: bool | None,
               litellm_model_name: str | None) -> Any:
    """litellm's cost of `result` as `log._response_cost_calculator` computes it (None: no price), or
    `_SLOW` when this reply is not one this path reproduces."""
    if has_callbacks(litellm) or litellm.cost_discount_config or litellm.cost_margin_config:
        return _SLOW
    if type(result) is not litellm.ModelResponse or log.call_type not in ("acompletion", "completion"):
        return _SLOW
    details = log.model_call_details
    if (details.get("cache_hit", False) if cache_hit is None else cache_hit) is True:
        return _SLOW
    hidden = result._hidden_params
    if not isinstance(hidden, dict) or hidden.get("response_cost") is not None:
        return _SLOW
    if _helpers["custom_pricing"](getattr(log, "litellm_params", None)) \
            or _helpers["base_model"](model_call_details=details) is not None:
        return _SLOW
    optional_params = log.optional_params
    hidden["optional_params"] = optional_params  # as litellm's response_cost_calculator leaves it
    if "llm_provider-x-litellm-response-cost" in (hidden.get("additional_headers") or {}):
        return _SLOW
    usage = result.get("usage")
    if not isinstance(usage, litellm.Usage):
        return _SLOW
    service_tier = optional_params.get("service_tier") if optional_params else None
    if service_tier is None:
        service_tier = getattr(result, "service_tier", None)
    if service_tier is None:
        service_tier = getattr(usage, "service_tier", None)
    if service_tier is not None and not isinstance(service_tier, str):
        return _SLOW
    provider = hidden.get("custom_llm_provider", details.get("custom_llm_provider") or None)
    if provider != "openai" or hidden.get("region_name") is not None:
        return _SLOW
    if service_tier is None and (hidden.get("provider_specific_fields") or {}).get("traffic_type"):
        return _SLOW
    if _helpers["web_search"](response_object=result, usage=usage) \
            or _helpers["file_search"](response_object=result):
        return _SLOW
    model = litellm_model_name or log.model
    response_model = getattr(result, "model", None)
    names = [_selected_name(litellm, model, response_model, hidden, details.get("custom_llm_provider")),
             response_model] + ([model] if model is not None else [])
    for name in names:
        if name is None:
            continue
        if "togethercomputer" in name or "together_ai" in name or "replicate" in name \
                or name in litellm.replicate_models:
            return _SLOW
        resolved = _resolve(litellm.model_cost, name)
        if not _has_info(litellm, resolved):
            continue
        prompt_cost, completion_cost = _helpers["generic"](model=resolved, usage=usage,
                                                           custom_llm_provider="openai", service_tier=service_tier)
        return prompt_cost + completion_cost + 0.0  # + litellm's built-in tools cost, 0.0 here
    return None


def _selected_name(litellm: Any, model: str | None, response_model: str | None, hidden: dict[str, Any],
                   provider: str | None) -> str | None:
    """litellm's `_select_model_name_for_cost_calc` without custom prices or a base model."""
    if provider is None:
        provider = litellm.get_llm_provider(model=model)[1] if model is not None else None
    chosen: str | None = None
    if response_model is None and hidden.get("model") is not None and len(hidden["model"]) > 0:
        chosen = hidden.get("model", model)
    if chosen is None:
        chosen = response_model if response_model is not None else model
    if chosen is not None and provider is not None and not _helpers["known_provider"](chosen):
        chosen = f"{provider}/{chosen}"
    return chosen


def _resolve(model_cost: dict[str, Any], name: str) -> str:
    """The price-map key litellm's `cost_per_token` looks `name` up by, for the openai provider."""
    with_provider = "openai/" + name
    without_prefix = name.split("/", 1)[1] if "/" in name else name
    if with_provider in model_cost:
        return with_provider
    if name in model_cost:
        return name
    if without_prefix in model_cost:
        return without_prefix
    return name


def _has_info(litellm: Any, model: str) -> bool:
    """Whether litellm has model info (prices) for `model` under the openai provider."""
    key = (model, id(litellm.model_cost), len(litellm.model_cost))
    if key in _unknown:
        return False
    try:
        litellm.get_model_info(model=model, custom_llm_provider="openai")
    except Exception:  # noqa: BLE001 - litellm's "This model isn't mapped yet"
        _unknown.add(key)
        return False
    return True
