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
        self._all: Any = None
        self._std = ((sys.stdout, sys.__stdout__), (sys.stderr, sys.__stderr__))
        self._streams: list[tuple[logging.StreamHandler[Any], Any]] = []

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
                TextColumn("{task.fields[status]}"),
                console=self.console, transient=False, refresh_per_second=4)
            self._progress.start()
            # Log lines (a resume's "kept" counts, retries, warnings) go above the bars, not through them:
            # the log's console handler still holds the stderr the bars have just taken over.
            for handler in logging.getLogger().handlers:
                if type(handler) is logging.StreamHandler and handler.stream in self._std[0]:
                    self._streams.append((handler, handler.setStream(sys.stdout)))
                elif type(handler) is logging.StreamHandler and handler.stream in self._std[1]:
                    self._streams.append((handler, handler.setStream(sys.stderr)))
        return self

    def __exit__(self, *exc: object) -> None:
        for handler, stream in self._streams:
            handler.setStream(stream)
        self._streams.clear()
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def add_task(self, name: str, total: int, done: int) -> None:
        """A bar for one task; `done` counts samples kept from an earlier run (resume). Its clock starts
        with its first sample; the `all` bar below the tasks gives the whole run's ETA."""
        self._errors[name] = 0
        self._counts[name] = [done, total]
        if done:
            log.info("%s: %d of %d samples kept from an earlier run", name, done, total)
        if self._progress is not None:
            self._bars[name] = self._progress.add_task(name, total=total, completed=done, rate="",
                                                       status=_status(None, 0), start=done >= total)

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
            if self._all is None:  # added at the first sample, so kept samples do not count as speed
                self._all = self._progress.add_task(
                    "all", total=sum(t for _, t in self._counts.values()),
                    completed=sum(d for d, _ in self._counts.values()) - 1, rate="", status="")
            bar = self._bars[name]
            if self._progress.tasks[bar].start_time is None:
                self._progress.start_task(bar)
            self._progress.advance(bar)
            speed = self._progress.tasks[bar].speed
            retries = self._retries()
            self._progress.update(bar, rate=f"{speed:5.1f}/s" if speed else "",
                                  status=_status(None, self._errors[name]))
            if self._all is not None:  # retries and levels are the endpoints', so they show on the whole run
                self._progress.advance(self._all)
                total = self._progress.tasks[self._all].speed
                self._progress.update(self._all, rate=f"{total:5.1f}/s" if total else "",
                                      status=_status(retries, sum(self._errors.values()), self._level()))

    def message(self, text: str) -> None:
        """A line above the bars (or on stderr)."""
        self.console.print(text, markup=False, highlight=False)

    def table(self, results: Mapping[str, Any]) -> None:
        """The final metrics table, one row per task and metric (value and 95 % interval), plus the panel's
        Fleiss kappa on tasks judged by two or more judges."""
        from rich.console import Console
        from rich.table import Table

        demo = set(results.get("demo_endpoints") or [])
        title = str(results.get("benchmark"))
        if results.get("model"):
            title += f" · model {results['model']}" + (" (demo)" if results["model"] in demo else "")
        if results.get("judges"):
            title += " · judges " + ", ".join(j + (" (demo)" if j in demo else "") for j in results["judges"])
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
        if demo:
            out.print(demo_caveat(sorted(demo)), markup=False, highlight=False)


def demo_caveat(names: list[str]) -> str:
    """The line under a table whose model or judges are the embedded demo model."""
    return (f"DEMO: {', '.join(names)} = the embedded SmolLM2-135M model: these numbers show that the pipeline "
            "works, not what a model can do; for real scores: model=NAME judges=one")


def _status(retries: int | None, errors: int, level: str = "") -> str:
    return (f"retries {retries}  " if retries is not None else "") + f"errors {errors}" + \
        (f"  {level}" if level else "")


def _fmt(value: Any) -> str:
    if value is None:
        return "—"  # no scored sample: no number
    return f"{value:.4f}" if isinstance(value, float) else str(value)


def _interval(interval: Any) -> str:
    """`[lo, hi]` with 3 decimals; — when there is none (a null metric, or a run without intervals)."""
    if not isinstance(interval, (list, tuple)) or len(interval) != 2 or None in interval:
        return "—"
    return f"[{float(interval[0]):.3f}, {float(interval[1]):.3f}]"
