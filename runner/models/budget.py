"""A hard spending limit for one run (`budget.max_usd`): a request is sent only when its worst case fits.

Before each request (model, judge, extractor; cache hits are free) the call layer reserves its worst-case
cost: its input tokens, counted as a dry run counts them, plus its `max_tokens`, at the endpoint's price. A
reservation that would take the run over `max_usd` is not made: while other requests are in flight (their
reservations may come back) the request waits for them; once nothing in flight can make room, or what is
already spent leaves no room, the run stops (BudgetStop) and stays stopped. A reply settles its reservation
with its real cost; a reply whose cost is unknown (impossible token counts) keeps the reservation as spent,
and a request that got no reply gives it back. What earlier invocations of the run dir spent starts the
ledger, so a resumed run counts it. Worker processes share one ledger in shared memory (`share`), so the
limit holds across them at any concurrency.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from typing import Any

from runner.errors import ConfigError

log = logging.getLogger("runner.calls")

_SETTLED, _RESERVED, _IN_FLIGHT, _STOPPED = range(4)
"""The ledger's cells: USD spent (earlier invocations and settled replies), USD reserved by requests in flight,
how many are in flight, and whether the run stopped."""
WAIT_S = 0.01
"""How often a request that does not fit yet looks again while others are in flight (they may give room back)."""
MARGIN = 1e-9
"""Share of `max_usd` kept free: results.json adds the same costs in another order, so a run spent to the last
cent could read a float's rounding above the cap."""


class BudgetStop(Exception):  # noqa: N818 - a stop signal, not a failure
    """Raised instead of sending a request that does not fit the budget; the sample stays unasked."""


def request_cap(req: Mapping[str, Any]) -> int | None:
    """The most tokens a request's reply may have (`max_tokens`, else `max_completion_tokens`); None: unbounded."""
    for key in ("max_tokens", "max_completion_tokens"):
        value = req.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
            return int(value)
    return None


def worst_case(req: Mapping[str, Any], who: str, price: Callable[[int, int], float | None],
               input_tokens: Callable[[], int]) -> float:
    """What request `req` to endpoint `who` may cost at most: its input tokens (as a dry run counts them) plus
    its max_tokens at the entry's `price`. A request that cannot be capped (the run's check before the first
    request names those) is a ConfigError: it is not sent."""
    cap = request_cap(req)
    cost = None if cap is None else price(input_tokens(), cap)
    if cost is None:
        missing = "max_tokens in its params" if cap is None else "known price (pricing: {input_per_mtok: X, " \
            "output_per_mtok: Y}, USD per million tokens)"
        raise ConfigError(f"budget.max_usd cannot be kept: a request to {who} has no {missing}; set it in the "
                          "entry; this request was not sent")
    return cost


class Budget:
    """One run's ledger, shared by every endpoint (and, with workers, every process)."""

    def __init__(self, max_usd: float | None, spent_before: float = 0.0, shared: Any = None) -> None:
        if max_usd is not None and max_usd < 0:
            raise ConfigError(f"budget.max_usd: {max_usd} is negative; give the most this run may spend, in USD")
        self.max_usd = None if max_usd is None else float(max_usd)
        self._cells: Any = shared if shared is not None else [float(spent_before), 0.0, 0.0, 0.0]
        self._lock: Any = shared.get_lock() if shared is not None else contextlib.nullcontext()
        self._warned: set[str] = set()

    @property
    def limited(self) -> bool:
        """Whether requests must reserve their worst case (a `max_usd` is set)."""
        return self.max_usd is not None

    def share(self, context: Any) -> Any:
        """Move the ledger into shared memory made by the multiprocessing `context` and return it: worker
        processes build their Budget on it (`Budget(max_usd, shared=...)`), this process keeps reading it."""
        cells = context.Array("d", 4)  # with its own lock: reserving is a read and a write
        with self._lock:
            cells[:] = list(self._cells)
        self._cells, self._lock = cells, cells.get_lock()
        return cells

    @property
    def spent(self) -> float:
        """USD spent so far: earlier invocations and the replies settled (not the reservations in flight)."""
        return float(self._cells[_SETTLED])

    @property
    def stopped(self) -> bool:
        """Whether a request was refused: then no new request is sent by any endpoint or process."""
        return bool(self._cells[_STOPPED])

    @stopped.setter
    def stopped(self, value: bool) -> None:
        with self._lock:
            self._cells[_STOPPED] = 1.0 if value else 0.0

    def start(self, spent_before: float) -> None:
        """Count what earlier invocations of the run dir spent (before any request of this one)."""
        with self._lock:
            self._cells[_SETTLED] += float(spent_before)

    async def reserve(self, worst: float, who: str) -> float:
        """Reserve `worst` USD for one request of endpoint `who` and return it (the amount to settle); wait
        while requests in flight may give room back; BudgetStop when it cannot fit."""
        assert self.max_usd is not None
        limit = self.max_usd * (1.0 - MARGIN)
        while True:
            with self._lock:
                cells = self._cells
                if cells[_STOPPED]:
                    raise BudgetStop(f"budget.max_usd={self.max_usd:g} reached")
                if cells[_SETTLED] + cells[_RESERVED] + worst <= limit:
                    cells[_RESERVED] += worst
                    cells[_IN_FLIGHT] += 1
                    return worst
                # What is spent only grows: no reservation coming back can make room then, nor can anything
                # when no request is in flight.
                if cells[_SETTLED] + worst > limit or cells[_IN_FLIGHT] < 1:
                    cells[_STOPPED] = 1.0
                    left = max(0.0, self.max_usd - cells[_SETTLED])
                    raise BudgetStop(f"budget.max_usd={self.max_usd:g} reached: the next request to {who} may "
                                     f"cost up to ${worst:.6g} and ${left:.6g} is left")
            await asyncio.sleep(WAIT_S)

    def settle(self, reserved: float, cost: float | None, who: str) -> None:
        """A reply came for a reservation of `reserved`: count its real `cost` (None: unknown, the reservation
        stays spent)."""
        spent = reserved if cost is None else float(cost)
        if spent > reserved * (1.0 + 1e-6) + 1e-12 and who not in self._warned:
            # Its input counted by another tokenizer than the provider's, or a reply beyond max_tokens.
            self._warned.add(who)
            log.warning("%s: a reply cost $%.6g, more than the $%.6g reserved for it (the provider counted more "
                        "tokens than the request's input and max_tokens); the budget counts the real cost",
                        who, spent, reserved)
        self._close(reserved, spent)

    def release(self, reserved: float) -> None:
        """A reserved request got no reply (failed, refused, cancelled): its reservation comes back."""
        self._close(reserved, 0.0)

    def _close(self, reserved: float, spent: float) -> None:
        with self._lock:
            cells = self._cells
            cells[_IN_FLIGHT] -= 1
            # Nothing in flight holds anything: clear the float dust of many additions and subtractions.
            cells[_RESERVED] = cells[_RESERVED] - reserved if cells[_IN_FLIGHT] > 0 else 0.0
            cells[_SETTLED] += spent


def uncappable(max_usd: float | None, problems: list[str]) -> None:
    """A budget that cannot be kept (an endpoint without a price or without `max_tokens`) stops the run
    before the first request, naming every entry and the key to set (ConfigError, exit 2)."""
    if max_usd is not None and problems:
        raise ConfigError(f"budget.max_usd={max_usd:g} cannot be kept: " + "; ".join(problems) + "; a request "
                          "is sent only when its worst case (input tokens plus max_tokens at the entry's price) "
                          "fits, so every endpoint needs both; no request was sent")
