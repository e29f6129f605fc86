"""What an endpoint spent: its accounting (`Stats`) and the entry's own prices (`pricing`); the run's totals,
invocations and closing line are runner/run/invocations.py. Pure code: nothing here imports litellm.

Money is USD. A cost is `None` (null in results.json) whenever a price is unknown, never 0: replies from
a local server or a model litellm has no price for cost `null` unless the entry sets `pricing` (an entry
that sent nothing spent 0 whatever its price).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from runner.errors import ConfigError

PRICING_KEYS = ("input_per_mtok", "output_per_mtok")
BATCH_PRICING_KEYS = ("batch_input_per_mtok", "batch_output_per_mtok")
"""Optional in `pricing`: what a request sent in a provider batch costs (else half of PRICING_KEYS')."""
MONEY_KEYS = ("cost_usd", "saved_usd", "cost")
"""Sums that are null as soon as one part is null (an unknown price)."""
COUNT_KEYS = ("requests", "cached_requests", "prompt_tokens", "completion_tokens", "reasoning_tokens",
              "cached_prompt_tokens", "cached_completion_tokens", "retries", "failures", "successes", "cache_hits")


def parse_pricing(pricing: Mapping[str, Any] | None, where: str) -> tuple[float, float] | None:
    """An entry's `pricing: {input_per_mtok: X, output_per_mtok: Y}` as (X, Y) in USD per million tokens;
    None when the entry sets none. Anything else is a ConfigError naming `where`."""
    if pricing is None:
        return None
    usage = (f"{where}.pricing: give both input_per_mtok and output_per_mtok (USD per million tokens), e.g. "
             "pricing: {input_per_mtok: 0.15, output_per_mtok: 0.6}")
    if not isinstance(pricing, Mapping):
        raise ConfigError(f"{usage}; got {pricing!r}")
    unknown = sorted(str(k) for k in pricing if k not in PRICING_KEYS + BATCH_PRICING_KEYS)
    missing = [k for k in PRICING_KEYS if pricing.get(k) is None]
    if not missing and any(pricing.get(k) is not None for k in BATCH_PRICING_KEYS):
        missing = [k for k in BATCH_PRICING_KEYS if pricing.get(k) is None]
    if unknown or missing:
        raise ConfigError(f"{usage}; " + (f"unknown key {', '.join(unknown)}" if unknown
                                          else f"missing {', '.join(missing)}"))
    return _numbers(pricing, PRICING_KEYS, usage)


def parse_batch_pricing(pricing: Mapping[str, Any] | None, where: str) -> tuple[float, float] | None:
    """An entry's `pricing.batch_input_per_mtok` and `.batch_output_per_mtok` as USD per token (input, output);
    None when the entry gives none (checked with the rest by `parse_pricing`)."""
    if not isinstance(pricing, Mapping) or all(pricing.get(k) is None for k in BATCH_PRICING_KEYS):
        return None
    numbers = _numbers(pricing, BATCH_PRICING_KEYS, f"{where}.pricing")
    return numbers[0] / 1e6, numbers[1] / 1e6


def _numbers(pricing: Mapping[str, Any], keys: tuple[str, str], usage: str) -> tuple[float, float]:
    prices = []
    for key in keys:
        value = pricing[key]
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = math.nan
        if isinstance(value, bool) or not math.isfinite(number) or number < 0:
            raise ConfigError(f"{usage}; {key} must be a number >= 0, got {value!r}")
        prices.append(number)
    return prices[0], prices[1]


def priced(prices: tuple[float, float], prompt_tokens: int, completion_tokens: int) -> float:
    """The cost of one call at the entry's own prices (USD per million tokens)."""
    return prompt_tokens * prices[0] / 1e6 + completion_tokens * prices[1] / 1e6


def response_cost(resp: Any, model: str, completion_cost: Callable[..., Any]) -> float | None:
    """litellm's cost of one reply as it computed it during the call (cached and audio tokens, tiered
    prices), else `completion_cost` (litellm's); None when litellm has no price for the model."""
    hidden = getattr(resp, "_hidden_params", None)
    if isinstance(hidden, Mapping) and "response_cost" in hidden:
        cost = hidden["response_cost"]
    else:
        try:
            cost = completion_cost(completion_response=resp, model=model)
        except Exception:  # noqa: BLE001 - no price for this model
            cost = None
    return money(cost)


def money(value: Any) -> float | None:
    """A cost in USD; None for anything no cost can be (negative, infinite, not a number): unknown, not money."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 <= value < math.inf:
        return None
    return float(value)


MAX_TOKENS_PER_CALL = 100_000_000
"""More tokens than one call can hold (the largest context windows hold about 10 million): a count above it is a
server's broken counter, like a negative one."""


def token_count(value: Any) -> int | None:
    """A reply's token count (0 when it reports none); None when no call can have it: negative, above
    MAX_TOKENS_PER_CALL, not a whole number."""
    if value is None:
        return 0
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return int(number) if number.is_integer() and 0 <= number <= MAX_TOKENS_PER_CALL else None


@dataclass
class Stats:
    """Accounting for one endpoint over a run.

    `cost_usd` is what this run's replies cost where their price is known (0 when nothing was spent);
    `unpriced` counts the replies whose price is unknown, which make the reported cost null.
    """

    requests: int = 0
    """HTTP attempts sent, retries included (cache hits are not requests)."""
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    """Of `completion_tokens`, those the provider says the model spent reasoning (priced as output tokens)."""
    cost_usd: float = 0.0
    unpriced: int = 0
    cached_prompt_tokens: int = 0
    cached_completion_tokens: int = 0
    saved_usd: float = 0.0
    """What the cache hits would have cost."""
    unsaved: int = 0
    """Cache hits whose price is unknown."""
    retries: int = 0
    failures: int = 0
    successes: int = 0
    pending: list[tuple[int, int]] = field(default_factory=list, repr=False)
    """Token counts of cache hits not valued yet (valued by `settle`, when litellm is surely loaded)."""

    def reply(self, prompt_tokens: int, completion_tokens: int, cost: float | None, *, reasoning: int = 0) -> None:
        """A reply received from the provider; `cost` None when its price is unknown; `reasoning` of its
        completion tokens were reasoning."""
        self.prompt_tokens += prompt_tokens
        self.completion_tokens += completion_tokens
        self.reasoning_tokens += reasoning
        if cost is None:
            self.unpriced += 1
        else:
            self.cost_usd += cost

    def cached(self, prompt_tokens: int, completion_tokens: int, saved: float | None, *,
               final: bool = False) -> None:
        """A reply served by the cache; `saved` None when its price is unknown (`final`) or is to be valued
        later by `settle`."""
        self.cache_hits += 1
        self.cached_prompt_tokens += prompt_tokens
        self.cached_completion_tokens += completion_tokens
        if saved is not None:
            self.saved_usd += saved
        elif final:
            self.unsaved += 1
        else:
            self.pending.append((prompt_tokens, completion_tokens))

    def settle(self, price: Callable[[int, int], float | None]) -> None:
        """Value the pending cache hits with `price` (None: unknown)."""
        for prompt_tokens, completion_tokens in self.pending:
            value = price(prompt_tokens, completion_tokens)
            if value is None:
                self.unsaved += 1
            else:
                self.saved_usd += value
        self.pending.clear()

    def to_dict(self) -> dict[str, Any]:
        """The results.json `usage.<endpoint>` counts (money null when a price is unknown)."""
        cost = None if self.unpriced else self.cost_usd
        return {"requests": self.requests, "cached_requests": self.cache_hits,
                "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "reasoning_tokens": self.reasoning_tokens, "cost_usd": cost,
                "cached_prompt_tokens": self.cached_prompt_tokens,
                "cached_completion_tokens": self.cached_completion_tokens,
                "saved_usd": None if self.unsaved or self.pending else self.saved_usd,
                "retries": self.retries, "failures": self.failures, "successes": self.successes,
                "cache_hits": self.cache_hits, "cost": cost}
