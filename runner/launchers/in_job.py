"""What a sweep's job does in a process that is not the one that launched the sweep (a joblib, Ray or Slurm
worker): it works in the submitter's folder, and the signals a scheduler sends before it kills a job stop
the run as Ctrl-C does, so that what is done is written (records, usage, cost) and a re-run resumes it.

- SIGTERM: `scancel`, a node drained, Slurm's time limit (then SIGKILL after KillWait), `ray stop`;
- SIGUSR1, SIGUSR2: the signals `sbatch --signal` asks for before a time limit; submitit's requeue signal
  (USR2 by default, SUBMITIT_PREEMPT_SIGNAL) is handed back to submitit once the books are written, so it
  requeues the job (`hydra.launcher.max_num_timeout` times at most after a time limit) and the requeued job
  resumes where this one stopped;
- SIGHUP, as in a plain run.

submitit itself ignores SIGTERM (it waits for its own signal): the job would go on sending requests through
Slurm's grace period and be killed with its books open. Here the first of these signals stops it at once.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any

log = logging.getLogger("runner")

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2)

Handler = Callable[[int, FrameType | None], Any]


def _requeues(handler: Any) -> bool:
    """Whether `handler` is submitit's checkpoint-and-requeue handler (not its SIGTERM `bypass`)."""
    owner = getattr(handler, "__self__", None)
    return type(owner).__module__.startswith("submitit") and getattr(handler, "__name__", "") in (
        "checkpoint_and_try_requeue", "checkpoint_and_exit")


class RemoteJob:
    """`with RemoteJob(cwd, stop):` runs the job in `cwd` (the submitter's folder) with `stop` handling the
    signals above (and Ctrl-C's own handler on SIGINT, so an asyncio run can be cancelled); both are put
    back when the job ends (a joblib worker runs the next job next)."""

    def __init__(self, cwd: str | None, stop: Handler) -> None:
        self.cwd = cwd
        self.stop = stop
        self.previous: dict[signal.Signals, Any] = {}
        self.old_cwd: str | None = None

    def __enter__(self) -> RemoteJob:
        self.old_cwd = os.getcwd()
        if self.cwd and self.cwd != self.old_cwd:
            if os.path.isdir(self.cwd):
                os.chdir(self.cwd)  # relative paths (cache.dir, data, pricing_file) mean what they meant there
            else:
                log.warning("the sweep was launched from %s, which this node (%s) does not have: relative paths "
                            "resolve in %s; use a filesystem every node shares", self.cwd, os.uname().nodename,
                            self.old_cwd)
        try:
            for sig in STOP_SIGNALS:
                self.previous[sig] = signal.signal(sig, self.stop)
            self.previous[signal.SIGINT] = signal.signal(signal.SIGINT, signal.default_int_handler)
        except ValueError:  # not the main thread: the launcher's own handling stays
            log.debug("the job does not run in its process's main thread: signals keep their handlers")
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        for sig, handler in self.previous.items():
            with contextlib.suppress(ValueError, TypeError):
                signal.signal(sig, handler)
        if self.old_cwd is not None:
            with contextlib.suppress(OSError):
                os.chdir(self.old_cwd)

    def hand_back(self, sig: signal.Signals | None) -> str | None:
        """Once the run's books are written: give `sig` to submitit when its handler requeues the job (it
        checkpoints, runs `scontrol requeue` and exits this process). Returns why it did not requeue (it
        said so), or None when there was nothing to hand back."""
        handler = self.previous.get(sig) if sig is not None else None
        if sig is None or handler is None or not _requeues(handler):
            return None
        log.info("handing %s to submitit: it requeues the job, which resumes this run", sig.name)
        try:
            handler(int(sig), None)
        except Exception as exc:  # noqa: BLE001 - submitit says why it did not requeue (timed out too often)
            return " ".join(str(exc).split())[:200]
        return None


class WithEnv:
    """A sweep job's task function with the submitting shell's environment variables it needs (runner/launchers/
    ray_jobs.py `passed_env`), set in the job's own process before it runs. They travel inside the task's
    arguments (held in memory), not in Ray's runtime_env: Ray's runtime-env agent writes a runtime_env, values
    and all, to its log file."""

    def __init__(self, task: Callable[[Any], Any], env: dict[str, str]) -> None:
        self.task = task
        self.env = env

    def __call__(self, cfg: Any) -> Any:
        os.environ.update(self.env)  # a fresh worker process per job (max_calls: 1): nothing outlives the job
        return self.task(cfg)

    def __repr__(self) -> str:  # never the values, should anything print the task
        return f"WithEnv({getattr(self.task, '__name__', self.task)!r}, names={sorted(self.env)})"
