"""What each job of a -m sweep ended with, gathered in the process that launched the sweep.

A job returns its outcome (runner/__main__.py `_job`: its exit status as a plain run's, and why when not 0),
and the launcher hands it back here: in this very process for the basic launcher, through Ray, submitit's
result file or joblib for the others. A job that died without a result (cancelled, killed, out of memory, its
node lost, a Ray worker crash past its retries, a time limit) has no outcome of its own: its launcher makes a
`lost` one and writes why into the job's error.txt, so the comparison report names it too.

The sweep's exit status is the worst of its jobs' (`sweep_status`): 0 only when every job exited 0; a job
stopped by a signal or lost counts as a failed job (1).
"""

from __future__ import annotations

import contextlib
import shlex
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hydra.core.utils import JobReturn, JobStatus
from omegaconf import DictConfig, OmegaConf


@dataclass
class Outcome:
    """One job's end: `status` is what the job alone would have exited with (0, 1, 2, 3, 4, 128 + a signal)."""

    num: int
    run_dir: str
    status: int = 0
    error: str | None = None
    lost: bool = False
    overrides: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Outcome:
        return cls(**{k: data[k] for k in ("num", "run_dir", "status", "error", "lost", "overrides") if k in data})

    def line(self, root: Path) -> str:
        """`<job dir>: <why>`, as the report lists a failed job."""
        return f"{_relative(root, Path(self.run_dir))}: {self.error or f'exit status {self.status}'}"


_OUTCOMES: dict[int, Outcome] = {}


def reset() -> None:
    """A new sweep starts: forget the last one's jobs."""
    _OUTCOMES.clear()


def record(outcome: Outcome | dict[str, Any] | None) -> None:
    """Keep a job's outcome (a dict when it comes back from another process)."""
    if isinstance(outcome, dict):
        outcome = Outcome.from_dict(outcome)
    if outcome is not None:
        _OUTCOMES[outcome.num] = outcome


def outcomes() -> list[Outcome]:
    """The outcomes of this process's sweep, by job number."""
    return [_OUTCOMES[num] for num in sorted(_OUTCOMES)]


def sweep_status(found: list[Outcome]) -> int:
    """The worst of the jobs' statuses: a job stopped by a signal, or lost, is a failed job (1)."""
    return max((1 if o.status >= 128 else o.status for o in found), default=0)


def job_dir(sweep_config: DictConfig) -> Path:
    """The run dir of a job whose config the launching process composed (Hydra's sweep dir and subdir)."""
    hydra = sweep_config.hydra
    base = Path(str(hydra.sweep.dir)).absolute()
    try:
        return base / str(hydra.sweep.subdir)
    except Exception:  # noqa: BLE001 - a subdir that cannot be resolved here: the job number still names it
        return base / f"{hydra.job.num}_?"


def task_overrides(sweep_config: DictConfig) -> list[str]:
    """The job's own overrides, and the sweep's hydra.searchpath (a job resumed alone needs the user's files)."""
    return job_overrides(OmegaConf.select(sweep_config, "hydra.overrides", default=None))


def job_overrides(overrides: Any) -> list[str]:
    """`hydra.overrides` (task and hydra lists) as a job resumed alone needs them."""
    if overrides is None:
        return []
    searchpath = [str(o) for o in overrides.get("hydra") or [] if str(o).lstrip("+~").startswith("hydra.searchpath")]
    return [str(o) for o in overrides.get("task") or []] + searchpath


def lost(sweep_config: DictConfig, why: str, since: float) -> Outcome:
    """The outcome of a job that died without a result; its error.txt says why (unless the job wrote its own
    since `since`, the launch: e.g. 'stopped by SIGTERM', which says more)."""
    from runner.config.redact import redact_text

    run_dir = job_dir(sweep_config)
    error_file = run_dir / "error.txt"
    text = f"lost: {why}; its finished samples are kept; re-run the sweep (same hydra.sweep.dir) to resume it"
    own = None
    with contextlib.suppress(OSError):
        if error_file.stat().st_mtime >= since:
            own = error_file.read_text(encoding="utf-8").strip()
    if own:
        text = f"{own} (lost: {why})"
    else:
        with contextlib.suppress(OSError):
            run_dir.mkdir(parents=True, exist_ok=True)
            error_file.write_text(redact_text(text) + "\n", encoding="utf-8")
    return Outcome(num=int(sweep_config.hydra.job.num), run_dir=str(run_dir), status=1, error=redact_text(text),
                   lost=True, overrides=task_overrides(sweep_config))


def from_files(sweep_config: DictConfig, since: float) -> Outcome | None:
    """What a job's run dir says of how it ended since `since` (for a launcher that lost every job's answer at
    once, e.g. joblib's pool when one worker died): None when the job left nothing."""
    run_dir = job_dir(sweep_config)
    num = int(sweep_config.hydra.job.num)
    error_file = run_dir / "error.txt"
    with contextlib.suppress(OSError):
        if error_file.stat().st_mtime >= since:
            return Outcome(num=num, run_dir=str(run_dir), status=1, overrides=task_overrides(sweep_config),
                           error=error_file.read_text(encoding="utf-8").strip())
    with contextlib.suppress(OSError):
        if (run_dir / "results.json").stat().st_mtime >= since:
            return Outcome(num=num, run_dir=str(run_dir), status=0, overrides=task_overrides(sweep_config))
    return None


def from_return(ret: JobReturn, sweep_config: DictConfig) -> Outcome:
    """The outcome a job's Hydra JobReturn carries (`_job` returns it); a job Hydra itself saw fail (an error
    outside the runner's own code) is a failed job naming the error."""
    value = ret._return_value  # noqa: SLF001 - `return_value` would raise the job's error instead of giving it
    if ret.status == JobStatus.FAILED:
        from runner.config.redact import redact_text

        run_dir = job_dir(sweep_config)
        return Outcome(num=int(sweep_config.hydra.job.num), run_dir=str(run_dir), status=1,
                       overrides=task_overrides(sweep_config),
                       error=redact_text(f"internal error: {type(value).__name__}: {value}"))
    if isinstance(value, dict) and "status" in value:
        return Outcome.from_dict(value)
    return Outcome(num=int(sweep_config.hydra.job.num), run_dir=str(job_dir(sweep_config)),
                   overrides=task_overrides(sweep_config))


def settle(ret: JobReturn, config: Callable[[], DictConfig]) -> JobReturn:
    """Keep the outcome a job's JobReturn carries and give back what the sweeper gets: `ret` when the job
    completed, else a completed JobReturn carrying the failure (the sweeper would raise the job's error, which
    stops the whole sweep). `config` makes the job's config, only when it is needed to name the job."""
    value = ret._return_value  # noqa: SLF001 - as in from_return
    if ret.status == JobStatus.COMPLETED and isinstance(value, dict) and "status" in value:
        record(Outcome.from_dict(value))
        return ret
    cfg = config()
    found = from_return(ret, cfg)
    record(found)
    return ret if ret.status == JobStatus.COMPLETED else as_return(found, cfg)


def as_return(outcome: Outcome, sweep_config: DictConfig) -> JobReturn:
    """A completed JobReturn carrying `outcome` (what Hydra's sweeper expects back from a launcher)."""
    ret = JobReturn(overrides=outcome.overrides, cfg=sweep_config, working_dir=outcome.run_dir,
                    status=JobStatus.COMPLETED)
    ret.return_value = outcome.as_dict()
    return ret


_SWEEP_ONLY = ("hydra.sweep.", "hydra.launcher.", "hydra.run.", "hydra.job.", "hydra/launcher=", "launcher=",
               "launcher.")
"""Overrides that only mean something to the sweep (where, and how its jobs run): a job resumed alone drops them."""


def resume_line(outcome: Outcome, root: Path) -> str:
    """One line for a lost job: which, why, and the commands that resume it."""
    from runner.config.redact import redact_text

    alone = " ".join(shlex.quote(redact_text(o)) for o in outcome.overrides
                     if not o.lstrip("+~").startswith(_SWEEP_ONLY))
    return (f"job {outcome.num} ({_relative(root, Path(outcome.run_dir))}) "
            f"{outcome.error or 'lost'}; or resume it alone: runner {alone + ' ' if alone else ''}"
            f"hydra.run.dir={shlex.quote(outcome.run_dir)}")


def _relative(root: Path, path: Path) -> str:
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except (ValueError, OSError):
        return str(path)


def now() -> float:
    """The launch time to compare job files with (a second early: filesystems round mtimes)."""
    return time.time() - 1.0
