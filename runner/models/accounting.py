"""What a run spent: per-endpoint accounting (`Stats`), the entry's own prices (`pricing`), the run's
totals and the closing line printed after every run. Pure code: nothing here imports litellm.

Money is USD. A cost is `None` (null in results.json) whenever a price is unknown, never 0: replies from
a local server or a model litellm has no price for cost `null` unless the entry sets `pricing` (an entry
that sent nothing spent 0 whatever its price).
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.errors import ConfigError

PRICING_KEYS = ("input_per_mtok", "output_per_mtok")
MONEY_KEYS = ("cost_usd", "saved_usd", "cost")
"""Sums that are null as soon as one part is null (an unknown price)."""
_COUNT_KEYS = ("requests", "cached_requests", "prompt_tokens", "completion_tokens", "cached_prompt_tokens",
               "cached_completion_tokens", "retries", "failures", "successes", "cache_hits")


def parse_pricing(pricing: Mapping[str, Any] | None, where: str) -> tuple[float, float] | None:
    """An entry's `pricing: {input_per_mtok: X, output_per_mtok: Y}` as (X, Y) in USD per million tokens;
    None when the entry sets none. Anything else is a ConfigError naming `where`."""
    if pricing is None:
        return None
    usage = (f"{where}.pricing: give both input_per_mtok and output_per_mtok (USD per million tokens), e.g. "
             "pricing: {input_per_mtok: 0.15, output_per_mtok: 0.6}")
    if not isinstance(pricing, Mapping):
        raise ConfigError(f"{usage}; got {pricing!r}")
    unknown = sorted(str(k) for k in pricing if k not in PRICING_KEYS)
    missing = [k for k in PRICING_KEYS if pricing.get(k) is None]
    if unknown or missing:
        raise ConfigError(f"{usage}; " + (f"unknown key {', '.join(unknown)}" if unknown
                                          else f"missing {', '.join(missing)}"))
    prices = []
    for key in PRICING_KEYS:
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

    def reply(self, prompt_tokens: int, completion_tokens: int, cost: float | None) -> None:
        """A reply received from the provider; `cost` None when its price is unknown."""
        self.prompt_tokens += prompt_tokens
        self.completion_tokens += completion_tokens
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
                "cost_usd": cost, "cached_prompt_tokens": self.cached_prompt_tokens,
                "cached_completion_tokens": self.cached_completion_tokens,
                "saved_usd": None if self.unsaved or self.pending else self.saved_usd,
                "retries": self.retries, "failures": self.failures, "successes": self.successes,
                "cache_hits": self.cache_hits, "cost": cost}


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def totals(usage: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """results.json `totals`: every count summed over the endpoints; a money sum is null when any
    endpoint's is (an unknown price)."""
    parts = list(usage.values())
    keys = list(dict.fromkeys([*_COUNT_KEYS, *(k for u in parts for k in u)]))
    out: dict[str, Any] = {}
    for key in keys:
        values: list[Any] = [u.get(key) for u in parts]
        if key in MONEY_KEYS:
            out[key] = None if any(v is None for v in values) else float(sum(float(v) for v in values))
        elif key in _COUNT_KEYS or (values and all(_is_count(v) for v in values)):
            out[key] = sum(int(v) for v in values if _is_count(v))
    for key in MONEY_KEYS:
        out.setdefault(key, 0.0)
    return out


INVOCATIONS = "invocations.jsonl"
"""One line per invocation that wrote the run dir: when, how long, how it ended, and what it spent."""


def merge_usage(parts: list[Mapping[str, Mapping[str, Any]]]) -> dict[str, Any]:
    """Per-endpoint usage summed over invocations: counts added, money null once any part's is, served
    model ids united, role and model string as last seen."""
    out: dict[str, dict[str, Any]] = {}
    for usage in parts:
        for name, numbers in usage.items():
            into = out.setdefault(name, {})
            for key, value in numbers.items():
                if key in MONEY_KEYS:
                    into[key] = None if value is None or (key in into and into[key] is None) \
                        else float(into.get(key) or 0.0) + float(value)
                elif _is_count(value):
                    into[key] = int(into.get(key) or 0) + value
                elif key == "served_models":
                    into[key] = sorted({*into.get(key, []), *value})
                else:
                    into[key] = value
    return out


RESERVED_BYTES = 65536
"""Room an invocation holds in invocations.jsonl from its start (a placeholder line): given back just before its
line is written, so a disk that filled up during the run still takes it (~0.7 KB per endpoint)."""


class Invocation:
    """This invocation's share of a run dir. `record` appends it to `invocations.jsonl` and returns the
    usage and run times summed over every invocation so far, so a resumed run's tokens, cost and duration
    cover all of them, not only the last."""

    def __init__(self, run_dir: Path) -> None:
        self.path = Path(run_dir) / INVOCATIONS
        self.started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        self._t0 = time.perf_counter()
        self.recorded = False
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            self._at = os.fstat(fd).st_size
            if self._at and os.pread(fd, 1, self._at - 1) != b"\n":
                os.pwrite(fd, b"\n", self._at)  # a torn line of a killed invocation must not swallow ours
                self._at += 1
            head = json.dumps({"started": self.started, "outcome": "running", "pid": os.getpid()})
            _write_at(fd, (head + " " * (RESERVED_BYTES - len(head) - 1) + "\n").encode(), self._at)
        finally:
            os.close(fd)

    def record(self, usage: Mapping[str, Any], outcome: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """Write this invocation's line (`outcome`: ok, failed, interrupted) in place of its placeholder and
        return (usage, run times) over every invocation of the run dir."""
        line = {"started": self.started, "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "duration_s": round(time.perf_counter() - self._t0, 3), "outcome": outcome, "usage": usage}
        data = (json.dumps(line, default=str) + "\n").encode()
        fd = os.open(self.path, os.O_WRONLY)
        try:
            os.ftruncate(fd, self._at)  # frees the placeholder: a line up to its size fits on a full disk
            _write_at(fd, data, self._at)
            os.fsync(fd)
        except OSError as exc:
            exc.filename = exc.filename or str(self.path)
            raise
        finally:
            os.close(fd)
        self.recorded = True
        lines = read_invocations(self.path.parent)
        return merge_usage([x.get("usage") or {} for x in lines]), {
            "started": lines[0].get("started"), "finished": line["finished"],
            "duration_s": round(sum(float(x.get("duration_s") or 0.0) for x in lines), 3),
            "invocations": len(lines), "last_duration_s": line["duration_s"]}


def _write_at(fd: int, data: bytes, offset: int) -> None:
    done = 0
    while done < len(data):
        done += os.pwrite(fd, data[done:], offset + done)


def read_invocations(run_dir: Path) -> list[dict[str, Any]]:
    """The run dir's invocation lines (a torn one, from a killed process, is skipped)."""
    path = Path(run_dir) / INVOCATIONS
    out = []
    if path.exists():
        for text in path.read_text(encoding="utf-8").splitlines():
            try:
                line = json.loads(text)
            except ValueError:
                continue
            if isinstance(line, dict) and line.get("outcome") != "running":  # a killed one's placeholder
                out.append(line)
    return out


def format_usd(value: float | None) -> str:
    """`$0.0312`; small amounts keep two significant digits (`$0.0000011`); None is `unknown`."""
    if value is None:
        return "cost unknown"
    if value == 0:
        return "$0.00"
    digits = max(4, 1 - math.floor(math.log10(abs(value))))
    return f"${value:.{digits}f}"


def closing_line(results: Mapping[str, Any]) -> str:
    """One line after a run: where results.json is, requests (of which from the cache), tokens sent and
    received, cost and wall time, e.g.
    `done: outputs/x/results.json · 130 requests (40 cached) · 52,310 tokens · $0.0312 · 42.1 s`.

    Requests count every reply asked for: HTTP attempts (retries included) plus cache hits; tokens are
    those of the requests sent (cached replies' tokens are not spent again).
    """
    run = results.get("run") or {}
    total = results.get("totals") or totals(results.get("usage") or {})
    path = Path(str(run["run_dir"])) / "results.json" if run.get("run_dir") else Path("results.json")
    cached = int(total.get("cached_requests", total.get("cache_hits", 0)) or 0)
    requests = int(total.get("requests") or 0) + cached
    tokens = int(total.get("prompt_tokens") or 0) + int(total.get("completion_tokens") or 0)
    cost = total.get("cost_usd", total.get("cost"))
    # No reply asked for at all: no cost to state, not "$0.00" as if something had been bought for nothing.
    parts = [f"done: {path}", f"{requests:,} request{'' if requests == 1 else 's'} ({cached:,} cached)",
             f"{tokens:,} tokens", "nothing sent" if requests == 0 and not cost else
             format_usd(None if cost is None else float(cost))]
    duration = run.get("duration_s")
    if isinstance(duration, (int, float)):
        parts.append(f"{duration:.1f} s")
    if int(run.get("invocations") or 1) > 1:  # a resumed run: the figures add up all its invocations
        parts.append(f"over {run['invocations']} invocations")
    if results.get("stopped"):
        parts.append(f"stopped: {results['stopped']}")
    return " · ".join(parts)
