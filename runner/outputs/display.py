"""The terminal: per-task progress (done/total, rate, ETA, retries, errors; provider batches submitted, in
progress with the provider's counts, and done) and the final metrics table.

The only module importing rich.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any

from runner.models.batch_journal import summary as batch_summary

log = logging.getLogger("runner")


PLAIN_EVERY_S = float(os.environ.get("RUNNER_PROGRESS_EVERY_S") or 10.0)
"""Seconds between plain progress lines when stderr is no terminal (a log file, a cluster job's output);
`RUNNER_PROGRESS_EVERY_S` sets it."""


class Display:
    """Progress: rich bars on a terminal, sized to it so that no count or time is ever cut (fields are
    dropped instead); plain lines every `PLAIN_EVERY_S` seconds when stderr is no terminal; nothing with
    `progress=false`."""

    def __init__(self, enabled: bool = True, retries: Callable[[], int] | None = None,
                 level: Callable[[], str] | None = None) -> None:
        from rich.console import Console

        self.console = Console(stderr=True)
        self.enabled = enabled and self.console.is_terminal
        self.plain = enabled and not self.console.is_terminal
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
        self._status_room = 0
        """Columns the status text may take: it holds the in-flight levels only where they fit."""
        self._kept = 0
        self._timer: asyncio.TimerHandle | None = None
        self._started = time.monotonic()

    def __enter__(self) -> Display:
        self._started = time.monotonic()
        if self.plain:  # (on a terminal the bars start with the first task, `add_task`, sized to the tasks)
            with contextlib.suppress(RuntimeError):  # no running loop (a synchronous caller): no timer
                self._timer = asyncio.get_running_loop().call_later(PLAIN_EVERY_S, self._plain_line)
        return self

    def _bars_for(self, width: int) -> Any:
        """Progress columns that fit `width`: the task's name, done/total and the ETA always; the status
        (errors, retries), the rate, a bar and the elapsed time as room allows, in that order of need."""
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        from rich.table import Column

        totals = [t for _, t in self._counts.values()] + [sum(t for _, t in self._counts.values())]
        counts = 2 * max(len(str(t)) for t in totals) + 1
        name = min(max([len(n) for n in self._counts] + [3]), 24, max(8, width // 4))
        parts: dict[str, tuple[int, Any]] = {
            "name": (name, TextColumn(f"[bold]{{task.description:<{name}}}",
                                      table_column=Column(width=name, overflow="fold"))),
            "count": (counts, MofNCompleteColumn(table_column=Column(no_wrap=True, min_width=counts))),
            "eta_label": (3, TextColumn("ETA", table_column=Column(no_wrap=True))),
            "eta": (7, TimeRemainingColumn(table_column=Column(no_wrap=True, min_width=7))),
        }
        optional = {"status": (len(_status(0, 0)) + 8, TextColumn("{task.fields[status]}",
                                                                 table_column=Column(no_wrap=True))),
                    "rate": (8, TextColumn("{task.fields[rate]}", table_column=Column(no_wrap=True, min_width=8))),
                    "bar": (12, BarColumn(bar_width=None, table_column=Column(ratio=1, min_width=10))),
                    "elapsed": (7, TimeElapsedColumn(table_column=Column(no_wrap=True, min_width=7)))}
        used = sum(w + 1 for w, _ in parts.values())
        for key, (need, column) in optional.items():
            if used + need + 1 <= width:
                parts[key] = (need, column)
                used += need + 1
        order = ["name", "bar", "count", "rate", "eta_label", "eta", "elapsed", "status"]
        # The status column's own room: the in-flight levels join it only where they fit (`advance`).
        self._status_room = width - used + (optional["status"][0] if "status" in parts else 0)
        return Progress(*(parts[k][1] for k in order if k in parts), console=self.console, transient=False,
                        refresh_per_second=4, expand=False)

    def __exit__(self, *exc: object) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        for handler, stream in self._streams:
            handler.setStream(stream)
        self._streams.clear()
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def _plain_line(self) -> None:
        """One progress line for a log: done/total over every task, errors, retries, rate and ETA."""
        done = sum(d for d, _ in self._counts.values())
        total = sum(t for _, t in self._counts.values())
        elapsed = time.monotonic() - self._started
        asked = done - self._kept
        rate = asked / elapsed if elapsed > 0 else 0.0
        eta = f", ETA {_clock((total - done) / rate)}" if rate > 0 and total > done else ""
        level = "; ".join(x for x in (self._level(), batch_summary()) if x)
        log.info("progress: %d/%d samples done, %d error(s), %d retries, %.1f/s%s%s", done, total,
                 sum(self._errors.values()), self._retries(), rate, eta, f"; {level}" if level else "")
        with contextlib.suppress(RuntimeError):
            self._timer = asyncio.get_running_loop().call_later(PLAIN_EVERY_S, self._plain_line)

    def add_task(self, name: str, total: int, done: int) -> None:
        """A bar for one task; `done` counts samples kept from an earlier run (resume). Its clock starts
        with its first sample; the `all` bar below the tasks gives the whole run's ETA."""
        self._errors[name] = 0
        self._counts[name] = [done, total]
        self._kept += done
        if self.enabled:
            if self._progress is None:  # sized once the tasks are known (their names, their totals)
                self._progress = self._bars_for(self.console.width)
                self._progress.start()
                # Log lines (a resume's "kept" counts, retries, warnings) go above the bars, not through them:
                # the log's console handler still holds the stderr the bars have just taken over.
                for handler in logging.getLogger().handlers:
                    if type(handler) is logging.StreamHandler and handler.stream in self._std[0]:
                        self._streams.append((handler, handler.setStream(sys.stdout)))
                    elif type(handler) is logging.StreamHandler and handler.stream in self._std[1]:
                        self._streams.append((handler, handler.setStream(sys.stderr)))
            self._bars[name] = self._progress.add_task(name, total=total, completed=done, rate="",
                                                       status=_status(None, 0), start=done >= total)
        if done:
            log.info("%s: %d of %d samples kept from an earlier run", name, done, total)

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
                status = _status(retries, sum(self._errors.values()),
                                 "  ".join(x for x in (self._level(), batch_summary()) if x))
                if len(status) > self._status_room:  # the levels do not fit: left out, not cut
                    status = _status(retries, sum(self._errors.values()))
                self._progress.update(self._all, rate=f"{total:5.1f}/s" if total else "", status=status)

    def message(self, text: str) -> None:
        """A line above the bars (or on stderr)."""
        self.console.print(text, markup=False, highlight=False)

    def table(self, results: Mapping[str, Any]) -> None:
        """The final metrics table (runner/outputs/table.py: wide where it fits, else stacked)."""
        from runner.outputs.table import print_table

        print_table(results)


def _status(retries: int | None, errors: int, level: str = "") -> str:
    return (f"retries {retries}  " if retries is not None else "") + f"errors {errors}" + \
        (f"  {level}" if level else "")


def _clock(seconds: float) -> str:
    """`1:02:03` (hours, minutes, seconds), as rich shows times."""
    seconds = int(max(0.0, seconds))
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"
