"""One worker process of a run with `workers=N` (runner/run/workers.py starts it with the 'spawn' method).

It rebuilds the run from the composed config (a plain container), loads the data of its tasks, asks its
share of the planned samples with its own event loop, connections and litellm, and sends every finished
record to the parent as its samples-file line plus the compact form the metrics need; the parent is the
only writer of the samples files. Messages to the parent, in order:

* `("records", [(task, line, compact, is_error), ...], snapshot)` every ~50 ms while samples finish;
* `("log", level, logger, text)` for log lines at the parent's level;
* `("done", final)` or `("failed", (error class module, name, message), final)` last.

`snapshot` and `final` map each endpoint's name to its usage so far (`Endpoint.usage()` in `final`). The
parent's first message is this worker's share of the jobs; then it says `"stop"` (or closes its end) to
cancel the samples in flight; Ctrl-C, SIGTERM and SIGHUP are the parent's to handle.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import threading
import warnings
from collections import deque
from collections.abc import Sequence
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from runner.config.redact import redact
from runner.errors import RunnerError
from runner.models.budget import Budget
from runner.models.litellm_model import Endpoint
from runner.run.build import Built, build
from runner.run.compact import PreviousRecords, compact
from runner.run.jobs import Job, run_jobs
from runner.run.store import SampleStore, dumps, record_key
from runner.tasks.base import Context

JobSpec = tuple[str, int, int, str, int]
"""(task, index in its loaded samples, epoch, fingerprint, offset of its earlier record or -1)."""

FLUSH_S = 0.05
"""Records wait at most this long before they go to the parent (progress stays live, messages few)."""


class Outbox:
    """Batches records for the parent; sends are serialised (log lines may come from other threads)."""

    def __init__(self, conn: Connection, endpoints: Sequence[Endpoint]) -> None:
        self.conn, self.endpoints = conn, endpoints
        self.items: list[tuple[str, str, dict[str, Any], bool]] = []
        self.lock = threading.Lock()

    def add(self, job: Job, record: dict[str, Any]) -> None:
        self.items.append((job.task.name, dumps(record), compact(record), record["status"] == "error"))
        if len(self.items) >= 256:
            self.flush()

    def flush(self) -> None:
        with self.lock:
            if self.items:
                items, self.items = self.items, []
                self.conn.send(("records", items, snapshot(self.endpoints)))

    def send(self, message: tuple[Any, ...]) -> None:
        with self.lock:
            self.conn.send(message)


class _Forward(logging.Handler):
    """Log lines go to the parent, whose handlers (console, runner.log) write them."""

    def __init__(self, outbox: Outbox, level: int) -> None:
        super().__init__(level)
        self.outbox = outbox

    def emit(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(Exception):  # the parent is gone: nothing to tell
            self.outbox.send(("log", record.levelno, record.name, self.format(record)))


def snapshot(endpoints: Sequence[Endpoint], final: bool = False) -> dict[str, dict[str, Any]]:
    """Each endpoint's usage so far; `final` values the cache hits too (`Endpoint.usage`)."""
    out: dict[str, dict[str, Any]] = {}
    for e in endpoints:
        limiter = e._limiter  # noqa: SLF001 - read-only: whether any request has made one
        usage = e.usage() if final else {**e.stats.to_dict(), "rate_limited": limiter.rate_limited if limiter else 0}
        out[e.name] = {**usage, "level": limiter.current if limiter else int(e.concurrency),
                       "served_models": sorted(e.served_models)}
    return out


def main(spec: dict[str, Any], conn: Connection, control: Connection, spent: Any) -> None:
    """The process entry point."""
    # As in runner/__main__.py: cancelled calls may leave litellm's HTTP coroutine unawaited; that warning
    # would only add noise to the parent's one line.
    warnings.filterwarnings("ignore", message=r"coroutine '[\w.]*(Handler|completion)[\w.]*' was never awaited",
                            category=RuntimeWarning)
    # SIGTERM and SIGHUP (a scheduler or a closed terminal signals every process) are the parent's to handle, as
    # Ctrl-C is (ignored from the start): it says "stop", and this worker sends its last records and usage.
    for stop in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(stop, signal.SIG_IGN)
    with contextlib.suppress(OSError, EOFError):  # the parent is gone (its end of a pipe closed): nobody to tell
        spec = {**spec, "jobs": control.recv()}  # the parent's first message: this worker's share (JobSpecs)
        asyncio.run(_work(spec, conn, control, spent))


async def _work(spec: dict[str, Any], conn: Connection, control: Connection, spent: Any) -> None:
    from omegaconf import OmegaConf

    cfg = OmegaConf.create(spec["config"])
    redact(spec["config"])  # a spawned process learns the run's keys, so its error texts mask them too
    # The parent tracks the run; a worker only asks.
    cfg.tracker = {"_target_": "runner.outputs.tracking.base.NullTracker"}
    run_dir, index = Path(spec["run_dir"]), int(spec["index"])
    built: Built | None = None
    outbox = Outbox(conn, [])
    handler = _Forward(outbox, int(spec["log_level"]))
    logging.getLogger().addHandler(handler)
    logging.getLogger().setLevel(int(spec["log_level"]))
    stopped = False
    try:
        built = build(cfg, run_dir)
        endpoints = built.endpoints()
        outbox.endpoints = endpoints
        for endpoint in endpoints:  # the entry's concurrency is the whole run's: this worker's share of it
            endpoint.concurrency = int(spec["concurrency"][endpoint.name])
        _share_budget(built, cfg, spent, index)
        ctx = Context(model=built.model, panel=built.panel, seed=int(cfg.seed), run_dir=run_dir,
                      epochs=int(cfg.epochs))
        pending = _jobs(built, ctx, SampleStore(run_dir), spec["jobs"])

        def sink(job: Job, record: dict[str, Any]) -> None:
            outbox.add(job, record)

        asking = asyncio.create_task(run_jobs(pending, ctx, sink))
        _listen(control, asyncio.get_running_loop(), asking)
        flusher = asyncio.create_task(_flush_every(outbox))
        try:
            await asking
        except asyncio.CancelledError:  # the parent said stop: the samples in flight stay unasked
            stopped = True
        finally:
            flusher.cancel()
            for task in built.tasks:
                try:
                    await task.close()
                except Exception as exc:  # noqa: BLE001 - a failed clean-up must not hide the records
                    logging.getLogger("runner").warning("closing task %s failed: %s", task.name, exc)
        outbox.flush()
        outbox.send(("done", _final(built, stopped)))
    except Exception as exc:  # noqa: BLE001 - whatever it is, the parent must hear of it
        outbox.flush()
        kind = (type(exc).__module__, type(exc).__name__, str(exc))
        outbox.send(("failed", kind, _final(built, stopped) if built is not None else {}))
    finally:
        logging.getLogger().removeHandler(handler)
        if built is not None:
            if built.cache is not None:
                built.cache.close()
            built.stack.close()


def _final(built: Built, stopped: bool) -> dict[str, Any]:
    return {"usage": snapshot(built.endpoints(), final=True), "budget": bool(built.budget and built.budget.stopped),
            "stopped": stopped}


def _share_budget(built: Built, cfg: Any, spent: Any, index: int) -> None:
    """The run's budget is one ledger for all workers, in shared memory (runner/models/budget.py): a request
    reserves its worst case there before it is sent, whichever process sends it, so the limit holds at any
    concurrency; a stop in one worker stops every worker's next request."""
    if cfg.budget.max_usd is None or spent is None:
        return
    budget = Budget(float(cfg.budget.max_usd), shared=spent)
    built.budget = budget
    for endpoint in built.endpoints():
        endpoint.budget = budget


def _jobs(built: Built, ctx: Context, store: SampleStore, specs: Sequence[JobSpec]) -> deque[Job]:
    """This worker's jobs, from the data it loads itself (the same rows the parent planned with)."""
    tasks = {t.name: t for t in built.tasks}
    loaded = {name: built.benchmark.load(tasks[name]) for name in dict.fromkeys(s[0] for s in specs)}
    again: dict[str, dict[str, int]] = {name: {} for name in loaded}
    pending: deque[Job] = deque()
    for name, index, epoch, fp, offset in specs:
        data = loaded[name]
        if index >= len(data.samples):
            raise RunnerError(f"{name}: the data changed after the run was planned (sample {index} is gone); "
                              "re-run to plan again")
        sample = data.samples[index]
        if offset >= 0:
            again[name][record_key(sample.id, epoch)] = offset
        pending.append(Job(tasks[name], data, data.held(sample), fp, epoch, index))
    for name, data in loaded.items():
        data.rebuild_from_rows()
        data.release()  # the jobs hold this worker's share, or build it again: the rest of the data can go
        ctx.previous[name] = PreviousRecords(store.path(name), again[name])
    return pending


def _listen(control: Connection, loop: asyncio.AbstractEventLoop, task: asyncio.Task[Any]) -> None:
    """On the parent's "stop" (or its end closing: it died), cancel the samples in flight. The loop watches the
    pipe itself: a thread blocked on it could be cut off mid-traceback when this process ends, and a half line
    on the shared stderr would break the parent's one error line."""
    fd = control.fileno()

    def heard() -> None:
        loop.remove_reader(fd)
        task.cancel()

    loop.add_reader(fd, heard)
    task.add_done_callback(lambda _: loop.remove_reader(fd))


async def _flush_every(outbox: Outbox) -> None:
    while True:
        await asyncio.sleep(FLUSH_S)
        outbox.flush()
        await asyncio.sleep(0)
