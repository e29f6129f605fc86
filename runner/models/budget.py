"""A hard spending limit for one run: once the cost this run spent reaches `max_usd`, no new request is
sent (requests in flight finish and are recorded); cache hits are free."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from runner.errors import ConfigError


class BudgetStop(Exception):  # noqa: N818 - a stop signal, not a failure
    """Raised instead of sending a request once the budget is spent; the sample stays unasked."""


class Budget:
    """Shared by every endpoint of a run; `spent` reads what the endpoints have spent so far."""

    def __init__(self, max_usd: float | None, spent: Callable[[], float],
                 on_spend: Callable[[], None] | None = None) -> None:
        if max_usd is not None and max_usd < 0:
            raise ConfigError(f"budget.max_usd: {max_usd} is negative; give the most this run may spend, in USD")
        self.max_usd = max_usd
        self._spent = spent
        self._on_spend = on_spend
        """Called as soon as a reply's cost is counted: a worker process tells the others at once."""
        self.stopped = False

    def spent_more(self) -> None:
        """A reply's cost was just counted (by the endpoint that received it)."""
        if self._on_spend is not None:
            self._on_spend()

    @property
    def spent(self) -> float:
        """USD spent by this run's requests so far."""
        return self._spent()

    def check(self) -> None:
        """Before a request: stop when the budget is reached."""
        if self.max_usd is not None and (self.stopped or self.spent >= self.max_usd):
            self.stopped = True
            raise BudgetStop(f"budget of ${self.max_usd:g} reached (spent ${self.spent:.4f})")


def require_prices(max_usd: float | None, unknown: Sequence[str]) -> None:
    """A budget cannot be kept with unknown prices: stop before the first request, naming the entries."""
    if max_usd is not None and unknown:
        raise ConfigError(f"budget.max_usd needs prices, but {', '.join(unknown)} has no known price; set "
                          "pricing: {input_per_mtok: X, output_per_mtok: Y} in its entry (USD per million tokens)")
