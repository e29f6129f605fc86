"""The terminal: per-task progress (done/total, rate, ETA, retries, errors) and the final metrics table.

The only module importing rich.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Mapping
from typing import Any

log = logging.getLogger("runner")

class Display:
    """Rich progress bars on a terminal; nothing but the final table otherwise."""

    def __init__(self, enabled: bool = True, retries: Callable[[], int] | None = None,
                 level: Callable[[], str] | None = None) -> None:
        from rich.console import Console

        self.console = Console(stderr=True)
        self.enabled = enabled and self.console.is_terminal
        self._retries = retries or (lambda: 0)
        self._level = level or (lambda: "")
        """Requests in flight allowed now per endpoint (they follow the providers' rate limits)."""
        self._progress: Any = None
        self._bars: dict[str, Any] = {}
        self._errors: dict[str, int] = {}
        self._counts: dict[str, list[int]] = {}

    def __enter__(self) -> Display:
        if self.enabled:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._progress = Progress(
                TextColumn("[bold]{task.description:<24}"), BarColumn(), MofNCompleteColumn(),
                TextColumn("{task.fields[rate]}"),
                TextColumn("ETA"), TimeRemainingColumn(), TimeElapsedColumn(),
                TextColumn("retries {task.fields[retries]}  errors {task.fields[errors]}  {task.fields[level]}"),
                console=self.console, transient=False, refresh_per_second=4)
            self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def add_task(self, name: str, total: int, done: int) -> None:
        """A bar for one task; `done` counts samples kept from an earlier run (resume)."""
        self._errors[name] = 0
        self._counts[name] = [done, total]
        if done:
            log.info("%s: %d of %d samples kept from an earlier run", name, done, total)
        if self._progress is not None:
            self._bars[name] = self._progress.add_task(name, total=total, completed=done, rate="",
                                                       retries=self._retries(), errors=0, level=self._level())

    def advance(self, name: str, error: bool) -> None:
        """One sample of `name` finished."""
        if error:
            self._errors[name] = self._errors.get(name, 0) + 1
        count = self._counts.setdefault(name, [0, 0])
        count[0] += 1
        if self._progress is None and count[0] == count[1]:  # no bars (a log file): one line per task
            log.info("%s: %d/%d samples done, %d error(s), %d retries so far", name, count[0], count[1],
                     self._errors[name], self._retries())
        if self._progress is not None:
            bar = self._bars[name]
            self._progress.advance(bar)
            speed = self._progress.tasks[bar].speed
            self._progress.update(bar, rate=f"{speed:5.1f}/s" if speed else "", retries=self._retries(),
                                  errors=self._errors[name], level=self._level())

    def message(self, text: str) -> None:
        """A line above the bars (or on stderr)."""
        self.console.print(text, markup=False, highlight=False)

    def table(self, results: Mapping[str, Any]) -> None:
        """The final metrics table, one row per task and metric (value and 95 % interval), plus the panel's
        Fleiss kappa on tasks judged by two or more judges."""
        from rich.console import Console
        from rich.table import Table

        title = str(results.get("benchmark"))
        if results.get("model"):
            title += f" · model {results['model']}"
        if results.get("judges"):
            title += " · judges " + ", ".join(results["judges"])
        table = Table(title=title, title_justify="left")
        for col, justify in (("task", "left"), ("metric", "left"), ("value", "right"), ("95% CI", "right"),
                             ("n", "right"), ("invalid", "right"), ("errors", "right")):
            table.add_column(col, justify=justify, no_wrap=True)  # type: ignore[arg-type]
        for task, block in results.get("tasks", {}).items():
            first = True
            intervals = block.get("ci") or {}
            for metric, value in block.get("metrics", {}).items():
                table.add_row(task if first else "", metric, _fmt(value), _interval(intervals.get(metric)),
                              *(str(block.get(k, "")) if first else "" for k in ("n", "n_invalid", "n_errors")))
                first = False
            stats = block.get("judge_stats")
            if isinstance(stats, Mapping) and "fleiss_kappa" in stats:  # the panel's reliability
                table.add_row(task if first else "", "fleiss_kappa", _fmt(stats.get("fleiss_kappa")),
                              _interval(stats.get("fleiss_kappa_ci")), str(stats.get("n", "")), "", "")
            table.add_section()
        out = Console(file=sys.stdout)
        if not out.is_terminal:  # a log file or pipe: never cut metric names to 80 columns
            out = Console(file=sys.stdout, width=200)
        out.print(table)


def _fmt(value: Any) -> str:
    if value is None:
        return "—"  # no scored sample: no number
    return f"{value:.4f}" if isinstance(value, float) else str(value)


def _interval(interval: Any) -> str:
    """`[lo, hi]` with 3 decimals; — when there is none (a null metric, or a run without intervals)."""
    if not isinstance(interval, (list, tuple)) or len(interval) != 2 or None in interval:
        return "—"
    return f"[{float(interval[0]):.3f}, {float(interval[1]):.3f}]"
