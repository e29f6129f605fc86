"""Whole-run error types: each becomes one clear stderr line (what, where, what to do) and a non-zero exit."""

from __future__ import annotations


class RunnerError(Exception):
    """A problem that stops the whole run (bad config, missing data, unreachable endpoint).

    The message is one line: what went wrong, where, and what to do about it.
    """

    exit_code = 2


class ConfigError(RunnerError):
    """The composed configuration is invalid."""


class DataError(RunnerError):
    """A data source is missing or unreadable as a whole (a bad row is recorded, not raised)."""


class EndpointError(RunnerError):
    """A model or judge endpoint cannot be used at all (e.g. the embedded server failed to start)."""

    exit_code = 3


class CallError(Exception):
    """One model or judge call failed after its retries; the sample is recorded as an error."""

    def __init__(self, message: str, *, attempts: int, retryable: bool = True) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.retryable = retryable


class IncompleteRun(RunnerError):
    """Results were written, but samples ended as errors beyond `fail_on_error` or a task has none scored."""

    exit_code = 1


class BudgetReached(RunnerError):
    """The run stopped at `budget.max_usd`; results of what was scored are written; a re-run resumes."""

    exit_code = 4
