"""How many requests one endpoint has in flight: a ceiling (the entry's `concurrency`), and a level that
follows what the provider says.

Adaptive (the default), the level is additive-increase / multiplicative-decrease, as TCP and the
evaluation tools that adapt (inspect_ai, promptfoo) do it: it starts at a quarter of the ceiling, grows
by one per success until the first sign of a limit ("slow start"), then by one per level's worth of
successes; a 429, or a reply saying no request or token is left in the provider's window, halves it
(once per round: the replies to requests sent before the cut do not cut again). Fixed (`adaptive:
false`), the level stays at the ceiling. Either way a Retry-After (or the window's reset time, once
nothing is left) pauses the whole endpoint, not one request: every request waits it out once.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Mapping
from typing import Any

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
MAX_PAUSE_S = 120.0
"""The longest a provider's header may pause an endpoint at once (a bogus reset must not stall a run)."""


def reset_seconds(value: Any) -> float | None:
    """A rate-limit reset as seconds: OpenAI writes durations like `1s`, `6m0s`, `20ms`; others a number."""
    if value is None:
        return None
    text = str(value).strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text.replace(" ", ""):
        return None
    return sum(float(n) * _UNIT_S[u] for n, u in parts)


def exhausted(headers: Mapping[str, Any] | None) -> float | None:
    """When a reply's rate-limit headers say no request (or token) is left in the window: the seconds until
    it resets (0 when they do not say); None while some remain."""
    if not headers:
        return None
    get = {str(k).lower(): v for k, v in headers.items()}.get
    waits = []
    for what in ("requests", "tokens"):
        remaining = get(f"x-ratelimit-remaining-{what}")
        try:
            if remaining is None or float(remaining) > 0:
                continue
        except (TypeError, ValueError):
            continue
        waits.append(reset_seconds(get(f"x-ratelimit-reset-{what}")) or 0.0)
    return max(waits) if waits else None


class Limiter:
    """The in-flight limit of one endpoint (shared by every request to it, in one event loop)."""

    def __init__(self, ceiling: int, *, adaptive: bool = True) -> None:
        self.ceiling = max(1, int(ceiling))
        self.adaptive = adaptive
        self.level = float(max(1, self.ceiling // 4)) if adaptive else float(self.ceiling)
        self.threshold = float(self.ceiling)
        """Below it the level grows fast (slow start); set at every cut."""
        self.in_flight = 0
        self.round = 0
        """Cuts so far: a request remembers the round it was sent in."""
        self.paused_until = 0.0
        self.rate_limited = 0
        """429 replies seen."""
        self.lowest = self.level
        self.peak_in_flight = 0
        self._wake: asyncio.Event | None = None

    @property
    def current(self) -> int:
        """Requests allowed in flight now."""
        return max(1, min(self.ceiling, int(self.level)))

    async def acquire(self) -> int:
        """Wait for a slot (and out any pause); returns the round the request is sent in."""
        while True:
            wait = self.paused_until - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
                continue
            if self.in_flight < self.current:
                self.in_flight += 1
                self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
                return self.round
            if self._wake is None or self._wake.is_set():
                self._wake = asyncio.Event()
            await self._wake.wait()

    def release(self) -> None:
        """The request is done (whatever its outcome was already reported)."""
        self.in_flight -= 1
        self._notify()

    def succeeded(self, sent_in: int, headers: Mapping[str, Any] | None = None) -> None:
        """A reply came back; its rate-limit headers may say the window is used up."""
        left = exhausted(headers)
        if left is not None:
            self._cut(sent_in)
            self.pause(left)
            return
        if not self.adaptive:
            return
        self.level = min(float(self.ceiling), self.level + (1.0 if self.level < self.threshold else 1.0 / self.level))
        self._notify()

    def refused(self, sent_in: int, retry_after: float | None) -> None:
        """A 429: cut the level (once per round) and pause the endpoint for Retry-After."""
        self.rate_limited += 1
        self._cut(sent_in)
        if retry_after is not None:
            self.pause(retry_after)

    def pause(self, seconds: float) -> None:
        if seconds > 0:
            self.paused_until = max(self.paused_until, time.monotonic() + min(seconds, MAX_PAUSE_S))

    def _cut(self, sent_in: int) -> None:
        if not self.adaptive or sent_in != self.round:
            return
        self.round += 1
        self.level = max(1.0, self.level / 2)
        self.threshold = self.level
        self.lowest = min(self.lowest, self.level)

    def _notify(self) -> None:
        if self._wake is not None:
            self._wake.set()
