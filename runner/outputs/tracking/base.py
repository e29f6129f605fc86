"""The tracker protocol every experiment tracker implements, and the tracker that logs nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol


class Tracker(Protocol):
    """Receives a run's redacted config, per-task records and results, and the summary.

    The pipeline calls `start` once, `log_task` once per finished task, then `finish` exactly once
    (in a `finally`, with `failed=True` when the run raised).
    """

    def start(self, *, run_dir: Path, name: str, config: dict[str, Any], group: str | None,
              tags: list[str], job_type: str | None = None) -> None:
        """Open the run. `config` is already redacted; `job_type`: eval (default), rejudge, or report (a
        sweep's comparison)."""

    def log_task(self, task: str, records: list[dict[str, Any]], result: dict[str, Any]) -> None:
        """Log one task: its `results.json` block and its sample records (dicts as in the JSONL)."""

    def log_extra(self, *, tables: dict[str, tuple[list[str], list[list[Any]]]] | None = None,
                  images: dict[str, Path] | None = None) -> None:
        """Log extra tables ({name: (columns, rows)}) and images ({name: PNG path})."""

    def finish(self, summary: dict[str, Any], *, failed: bool) -> None:
        """Log the run summary and close the run."""


class NullTracker(Tracker):
    """`tracker=none`: logs nothing (the protocol's methods, which do nothing)."""
