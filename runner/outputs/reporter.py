"""Reporters: a benchmark's own files and console lines, written after aggregation from the records and
results (tasks neither print nor write files). Named in the benchmark's YAML under `reporters:`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from runner.tasks.base import BaseTask
    from runner.types import TaskResult


class Reporter(Protocol):
    """Writes what a benchmark's users expect beside results.json (MUGEN's per-task judge files, VAKRA's
    report, win-rate CSVs and charts), prints its own summary lines, and returns extra tables and images
    for the tracker (`Tracker.log_extra` keyword arguments), or None."""

    def report(self, tasks: Sequence[BaseTask], records: Mapping[str, list[dict[str, Any]]],
               results: Mapping[str, TaskResult], run_dir: Path) -> dict[str, Any] | None: ...
