"""`workers=N`: one run's pending samples asked by N processes on this machine, each with its own event loop,
connections and litellm (runner/run/worker_child.py), while this process writes every record, keeps the
progress bars and adds up the usage.

The CPU a reply costs inside litellm (~2 ms) caps one process at a few hundred replies a second; N
processes lift the cap N-fold on N cores. Each entry's `concurrency` stays the ceiling of the whole run:
it is divided between the workers. Anything that stops one worker stops the run: a refused endpoint (exit
3) or a crash stop the others, the budget is shared, and Ctrl-C, SIGTERM and SIGHUP are this process's alone
(the workers ignore them): it stops the workers and keeps every record they had finished and their usage.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import signal
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from runner.errors import ConfigError, RunnerError
from runner.models.local_server import usable_cores
from runner.outputs.display import Display
from runner.run import worker_child
from runner.run.build import EMBEDDED, Built
from runner.run.compact import PreviousRecords, TaskRecords
from runner.run.invocations import by_name, merge_usage
from runner.run.jobs import Job
from runner.run.store import SampleStore, record_key

log = logging.getLogger("runner")

MIN_SAMPLES_PER_WORKER = 2000
"""Below this many pending samples per process a worker's start-up (~1 s of CPU, plus importing litellm
again: ~2 s) costs more than its share of the replies saves (docs/scaling.md)."""
REQUESTS_PER_WORKER = 16
"""Requests in flight (the entries' `concurrency`, all together) per worker the default asks for. One
process handles ~450 replies a second (~2.2 ms of CPU each); C requests in flight at latency L bring C/L a
second, so an entry with the default concurrency of 16 needs a second process only below ~35 ms of latency,
one with 32 below ~70 ms (a server on this network), 128 below ~280 ms."""
STOP_GRACE_S = 10.0
"""How long stopped workers get to send their last records and usage before they are terminated."""


class WorkerCrash(RunnerError):
    """A worker process ended without finishing or saying why (killed, out of memory, a bug)."""

    exit_code = 1


def cores() -> int:
    """The cores this process may run on."""
    return len(usable_cores())


def check_workers(requested: Any) -> None:
    """`workers` is null or a whole number of processes (checked before anything is written)."""
    if requested is not None and (not isinstance(requested, int) or isinstance(requested, bool) or requested < 1):
        raise ConfigError(f"workers: {requested} is not a number of processes; give 1 or more, or null to let "
                          "the runner choose")


def workers_for(requested: Any, pending: int, built: Built) -> int:
    """How many processes ask the `pending` samples: `requested`, or (null) one per core, while each gets at
    least MIN_SAMPLES_PER_WORKER samples and REQUESTS_PER_WORKER of the entries' requests in flight (a
    replayed model sends none). Always one with the embedded model: its one server is all there is, and it
    lives in this process. Never more than an entry's concurrency: each worker needs a request in flight."""
    from runner.models.replay import ReplayEndpoint

    check_workers(requested)
    if multiprocessing.current_process().daemon:  # e.g. a sweep's job in a launcher's daemonic process
        return 1  # multiprocessing lets no daemonic process start children
    endpoints = built.endpoints()
    embedded = [e.name for e in endpoints if (e.origin or "").startswith(EMBEDDED)]
    if embedded:
        if requested is not None and requested > 1:
            log.info("workers=%d: %s %s served by the embedded model: asking in one process", requested,
                     ", ".join(embedded), "is" if len(embedded) == 1 else "are")
        return 1
    if requested is None:
        in_flight = sum(int(e.concurrency) for e in endpoints if not isinstance(e, ReplayEndpoint))
        n = min(cores(), pending // MIN_SAMPLES_PER_WORKER, -(-in_flight // REQUESTS_PER_WORKER))
    else:
        n = int(requested)
    return max(1, min(n, pending, *(int(e.concurrency) for e in endpoints)))


def shares(total: int, n: int) -> list[int]:
    """`total` split into n near-equal whole parts (each at least 1)."""
    return [max(1, total // n + (1 if i < total % n else 0)) for i in range(n)]


@dataclass
class _Child:
    index: int
    process: Any
    conn: Connection
    control: Connection
    usage: dict[str, dict[str, Any]] = field(default_factory=dict)
    final: dict[str, Any] | None = None
    failed: BaseException | None = None
    open: bool = True


class Pool:
    """The worker processes of one run (`run` starts and waits for them)."""

    def __init__(self, n: int, config: dict[str, Any], run_dir: Path, built: Built) -> None:
        self.n, self.config, self.run_dir, self.built = n, config, Path(run_dir), built
        self.children: list[_Child] = []
        self.unwritten: OSError | None = None
        """A record this process could not write (disk full): the run stops; later records are dropped."""

    # ------------------------------------------------------------------------------- the live figures
    def retries(self) -> int:
        """Retries so far, all workers together (the progress line)."""
        return sum(int(u.get("retries") or 0) for c in self.children for u in c.usage.values())

    def level(self) -> str:
        """`in flight name n/ceiling` for the endpoints held below their ceiling, all workers together."""
        low = []
        for e in self.built.endpoints():
            current = sum(int(c.usage.get(e.name, {}).get("level") or 0) for c in self.children)
            if self.children and 0 < current < int(e.concurrency):
                low.append(f"{e.name} {current}/{e.concurrency}")
        return f"in flight {', '.join(low)}" if low else ""

    def usage_summary(self, built: Built) -> dict[str, Any]:
        """results.json `usage`: each endpoint's usage added up over the workers (`final` from those that
        finished, the last figures sent by any that did not), with the entry's own ceiling."""
        out: list[tuple[str, str, dict[str, Any]]] = []
        for role, e in built.roles():
            # A child's usage is keyed by name too: of two roles of one name, each takes its own figures.
            parts = [(c.usage[e.name].get("by_role") or {}).get(role, c.usage[e.name]) for c in self.children
                     if e.name in c.usage]
            levels = [p.get("concurrency") or {} for p in parts]
            # This process's own preflight request (runner/run/build.py) is part of the usage, not of the levels.
            own = [{**e.usage(), "served_models": sorted(e.served_models)}] if parts and \
                (e.stats.requests or e.stats.cache_hits) else []
            merged = merge_usage([{e.name: {k: v for k, v in p.items() if k not in ("level", "concurrency")}}
                                  for p in parts + own]).get(e.name, {})

            def total(key: str, levels: list[dict[str, Any]] = levels) -> int | None:
                values = [lv[key] for lv in levels if lv.get(key) is not None]
                return sum(values) if values else None

            usage = {**(e.usage() if not parts else {}), **merged}
            usage["concurrency"] = {"ceiling": int(e.concurrency), "adaptive": e.adaptive, "final": total("final"),
                                    "lowest": total("lowest"), "peak_in_flight": total("peak_in_flight") or 0}
            usage.setdefault("rate_limited", 0)
            served = sorted(set(usage.pop("served_models", None) or []))
            out.append((role, e.name, {"role": role, "model": e.model, **usage, "served_models": served}))
        return by_name(out)

    # ------------------------------------------------------------------------------------ the run
    async def run(self, pending: deque[Job], records: Mapping[str, TaskRecords], store: SampleStore,
                  display: Display, previous: Mapping[str, Mapping[str, Any]]) -> None:
        """Start the workers with their shares of `pending`, write the records they send as they come, and
        return once all have finished; raise what stopped one of them (after stopping the others)."""
        specs = [_spec(job, previous) for job in pending]
        pending.clear()  # the workers load their own samples: these can go
        context = multiprocessing.get_context("spawn")
        # The run's budget is one ledger in shared memory: every worker reserves from it (runner/models/budget.py).
        budget = self.built.budget
        spent = budget.share(context) if budget is not None and budget.limited else None
        ceilings = {e.name: shares(int(e.concurrency), self.n) for e in self.built.endpoints()}
        base = {"config": self.config, "run_dir": str(self.run_dir),
                "log_level": logging.getLogger().getEffectiveLevel()}
        try:
            with _children_ignore_ctrl_c():
                for i in range(self.n):
                    conn, child_conn = context.Pipe(duplex=False)
                    child_control, control = context.Pipe(duplex=False)
                    spec = {**base, "index": i, "concurrency": {name: parts[i] for name, parts in ceilings.items()}}
                    process = context.Process(target=worker_child.main, args=(spec, child_conn, child_control, spent),
                                              name=f"runner-worker-{i + 1}", daemon=True)
                    process.start()
                    child_conn.close()  # this process keeps only its own ends: a worker's exit closes its pipe
                    child_control.close()
                    self.children.append(_Child(i, process, conn, control))
            # The jobs go over the control pipe once every worker runs, not with the process's arguments:
            # multiprocessing writes those into a pipe it also holds open for reading, so a worker that dies
            # before reading them (a failed import, a script without `if __name__ == "__main__"`) left
            # this process blocked on that write for good. Here a dead worker's pipe is broken instead, and
            # `_serve` reports the crash.
            for child in self.children:
                with contextlib.suppress(OSError):
                    child.control.send(specs[child.index::self.n])
            del specs
            await self._serve(records, store, display)
        finally:
            self._reap()
        if any((c.final or {}).get("budget") for c in self.children) and self.built.budget is not None:
            self.built.budget.stopped = True

    async def _serve(self, records: Mapping[str, TaskRecords], store: SampleStore, display: Display) -> None:
        """Receive until every worker has ended. Waiting in the event loop, not beside it: Ctrl-C reaches a
        run as the cancellation of its task (asyncio.run's handler), which stops the workers here."""
        loop = asyncio.get_running_loop()
        ready = asyncio.Event()
        watched = {c.index: (c.conn.fileno(), c.process.sentinel) for c in self.children}
        for fds in watched.values():
            for fd in fds:
                loop.add_reader(fd, ready.set)
        error: BaseException | None = None
        deadline: float | None = None
        try:
            while any(c.open for c in self.children):
                # Not asyncio.wait_for: on Python 3.11 it returns the result, swallowing the cancellation, when a
                # message arrives as Ctrl-C does (gh-86296), and the run went on to its end.
                tick = loop.call_later(1.0, ready.set)
                try:
                    await ready.wait()
                finally:
                    tick.cancel()
                ready.clear()
                for child in [c for c in self.children if c.open]:
                    self._receive(child, records, store, display)
                    if not child.open:
                        for fd in watched.pop(child.index):
                            loop.remove_reader(fd)
                    problem = child.failed if child.failed is not None else self.unwritten if \
                        self.unwritten is not None else None if child.open or child.final is not None \
                        else self._crashed(child)
                    if problem is not None and error is None:
                        error, deadline = problem, time.monotonic() + STOP_GRACE_S
                        self._stop()
                if deadline is not None and time.monotonic() > deadline:
                    break
        except (asyncio.CancelledError, KeyboardInterrupt):
            self._stop()
            self._drain(records, store, display)
            raise
        finally:
            for fds in watched.values():
                for fd in fds:
                    loop.remove_reader(fd)
        if error is not None:
            raise error

    def _receive(self, child: _Child, records: Mapping[str, TaskRecords], store: SampleStore,
                 display: Display) -> None:
        """Handle what `child` has sent (a bounded number of messages, so no worker starves the others)."""
        for _ in range(64):
            try:
                if not child.conn.poll():
                    return
                message = child.conn.recv()
            except (EOFError, OSError):
                child.open = False
                child.process.join(timeout=5)
                return
            kind = message[0]
            if kind == "records":
                for task, line, small, is_error in message[1]:
                    if self.unwritten is None:  # once the disk refused one, the workers stop: their usage counts
                        try:
                            records[task].add(small, store.append_line(task, line))
                        except OSError as exc:
                            self.unwritten = exc
                        display.advance(task, error=is_error)
                child.usage = message[2]
            elif kind == "log":
                logging.getLogger(message[2]).log(message[1], "%s", message[3])
            else:
                child.final = message[-1]
                child.usage = child.final.get("usage") or child.usage
                if kind == "failed":
                    module, name, text = message[1]
                    child.failed = _error(module, name, text, worker=child.index + 1)

    def _crashed(self, child: _Child) -> WorkerCrash:
        code = child.process.exitcode
        how = f"was killed by signal {-code}" if code is not None and code < 0 else f"exited with status {code}"
        return WorkerCrash(f"worker process {child.index + 1} of {self.n} (pid {child.process.pid}) {how} before "
                           f"finishing its samples; every record it finished is saved in {self.run_dir / 'samples'}; "
                           f"re-run with hydra.run.dir={self.run_dir} to ask the rest (or workers=1 to ask them "
                           "in one process)")

    def _stop(self) -> None:
        for child in self.children:
            with contextlib.suppress(OSError):  # it has ended already
                child.control.send("stop")

    def _drain(self, records: Mapping[str, TaskRecords], store: SampleStore, display: Display) -> None:
        """After a stop: keep what the workers still send for a short while (a second Ctrl-C ends it)."""
        deadline = time.monotonic() + STOP_GRACE_S
        try:
            while any(c.open for c in self.children) and time.monotonic() < deadline:
                live = [c for c in self.children if c.open]
                wait([c.conn for c in live], timeout=0.5)
                for child in live:
                    self._receive(child, records, store, display)
        except (KeyboardInterrupt, Exception):  # noqa: BLE001 - stopping already: what was received is kept
            pass

    def _reap(self) -> None:
        for child in self.children:
            child.process.join(timeout=0 if child.open else 5)
            if child.process.is_alive():  # SIGKILL: a worker ignores SIGTERM, which is its parent's to handle
                child.process.kill()
                child.process.join()
            child.conn.close()
            child.control.close()


def _spec(job: Job, previous: Mapping[str, Mapping[str, Any]]) -> worker_child.JobSpec:
    again = previous.get(job.task.name)
    if not isinstance(again, PreviousRecords) or not again.offsets:  # no earlier record: no need to read the row
        return (job.task.name, job.index, job.epoch, job.fingerprint, -1)
    offset = again.offsets.get(record_key(job.sample.id, job.epoch), -1)
    return (job.task.name, job.index, job.epoch, job.fingerprint, offset)


def _error(module: str, name: str, message: str, worker: int) -> BaseException:
    """The worker's error as this process raises it: a runner error as itself (its exit status and line)."""
    import runner.errors as errors

    cls = getattr(errors, name, None) if module == errors.__name__ else None
    if isinstance(cls, type) and issubclass(cls, RunnerError):
        return cls(message)
    return WorkerCrash(f"worker process {worker} failed: {name}: {message} (run with workers=1 to see it in one "
                       "process; RUNNER_DEBUG=1 shows the traceback)")


@contextlib.contextmanager
def _children_ignore_ctrl_c() -> Iterator[None]:
    """While workers start, SIGINT is ignored: a spawned process inherits that and never installs Python's
    KeyboardInterrupt, so Ctrl-C at the terminal stops the run through this process alone."""
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
    try:
        yield
    finally:
        if main:
            signal.signal(signal.SIGINT, previous)


def plain_config(cfg: Any) -> dict[str, Any]:
    """The composed config as plain data a worker rebuilds the run from: resolved here (Hydra's resolvers
    exist only in this process), with any `${` left in a value escaped so it stays text over there."""
    from omegaconf import OmegaConf

    def escape(node: Any) -> Any:
        if isinstance(node, str):
            return node.replace("${", "\\${")
        if isinstance(node, dict):
            return {k: escape(v) for k, v in node.items()}
        if isinstance(node, list):
            return [escape(v) for v in node]
        return node

    plain = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=False)
    assert isinstance(plain, dict)
    escaped: dict[str, Any] = escape(plain)
    return escaped

