"""`launcher=slurm`: a sweep's jobs as a Slurm job array through submitit (conf/launcher/slurm.yaml).

hydra-submitit-launcher 1.2.0's own submission, then its own wait replaced: the plugin waited for each job in
turn through `sacct` and raised at the first that ended without a result (the launching process died and the
other jobs ran on, unwatched), and without accounting (no slurmdbd, so no sacct) it waited forever. Here:

- a job is done when its result file is there; a job that has left Slurm's queue (`squeue`) without one, for
  GRACE_S seconds (longer on a network filesystem, whose files show up late), is lost: `scontrol` (or
  `sacct` when there is accounting) says how it ended, and the others are still waited for. Slurm with or
  without accounting works alike;
- a requeued job (submitit's requeue on its signal, up to `max_num_timeout` times after a time limit) is back
  in the queue and waited for;
- when `squeue` itself keeps failing for SQUEUE_GIVE_UP_S seconds, the jobs not done are lost, in one line each.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import logging
import re
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from hydra.core.utils import JobReturn, JobStatus
from omegaconf import DictConfig, OmegaConf, open_dict

from runner.launchers import outcomes
from runner.run.mounts import network_fs

log = logging.getLogger("runner")

# The plugin is part of the `cluster` extra: imported by name, so runner/ type-checks without it.
_Plugin: Any = importlib.import_module("hydra_plugins.hydra_submitit_launcher.submitit_launcher").SlurmLauncher

POLL_S = 1.0
"""How often result files are looked for."""
QUEUE_POLL_S = 5.0
"""How often Slurm's queue is asked which jobs are still in it."""
GRACE_S = 5.0
"""How long a job that left the queue may take to show its result file (local filesystem)."""
NETWORK_GRACE_S = 60.0
"""The same on a network filesystem (NFS caches a folder's listing for up to a minute)."""
SQUEUE_GIVE_UP_S = 600.0
"""How long `squeue` may keep failing (slurmctld down) before the jobs not done count as lost."""


def _run(args: list[str]) -> subprocess.CompletedProcess[str] | None:
    try:
        return subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        log.debug("%s: %s", args[0], exc)
        return None


def in_queue(job_ids: list[str]) -> set[str] | None:
    """The ids among `job_ids` (array tasks `123_4`) still pending or running; None when squeue fails."""
    arrays = sorted({job_id.split("_")[0] for job_id in job_ids})
    proc = _run(["squeue", "-h", "-r", "-o", "%i", "-j", ",".join(arrays)])
    if proc is None:
        return None
    if proc.returncode != 0:
        return set() if "Invalid job id" in proc.stderr else None  # Slurm has forgotten them all
    return set(proc.stdout.split())


def final_state(job_id: str) -> str:
    """How Slurm says job `job_id` ended (`CANCELLED`, `OUT_OF_MEMORY`, `TIMEOUT`, `NODE_FAIL`, ...)."""
    proc = _run(["scontrol", "show", "job", "-o", job_id])
    if proc is not None and proc.returncode == 0:
        state = re.search(r"\bJobState=(\S+)", proc.stdout)
        reason = re.search(r"\bReason=(\S+)", proc.stdout)
        if state:
            why = reason.group(1) if reason and reason.group(1) not in ("None", "(null)") else ""
            return state.group(1) + (f" ({why})" if why else "")
    proc = _run(["sacct", "-n", "-X", "-P", "-o", "State", "-j", job_id])  # with accounting only
    if proc is not None and proc.returncode == 0 and proc.stdout.strip():
        return proc.stdout.split()[0]
    return "in a state Slurm no longer knows"


def _has_result(job: Any) -> bool:
    folder = job.paths.folder
    with contextlib.suppress(OSError):
        folder.chmod(folder.stat().st_mode)  # NFS: refresh the folder's cached listing (as submitit does)
    return bool(job.paths.result_pickle.exists())


def _outcome(job: Any, config: Callable[[], DictConfig], since: float) -> tuple[outcomes.Outcome, JobReturn | None]:
    """A finished job's outcome from its result file (and its JobReturn, None when it had none)."""
    try:
        ret = job.results()[0]
    except Exception as exc:  # noqa: BLE001 - submitit's FailedJobError: an error outside the runner's code
        lines = [line for line in str(exc).splitlines() if line.strip() and not line.startswith("-")]
        why = lines[-3] if len(lines) >= 3 else type(exc).__name__
        return outcomes.lost(config(), f"Slurm job {job.job_id} failed ({why.strip()[:200]})", since), None
    value = getattr(ret, "_return_value", None)
    if getattr(ret, "status", None) == JobStatus.COMPLETED and isinstance(value, dict) and "status" in value:
        return outcomes.Outcome.from_dict(value), ret
    return outcomes.from_return(ret, config()), ret


class SlurmLauncher(_Plugin):  # type: ignore[misc]
    """hydra_submitit_launcher's SlurmLauncher with the wait described in this module's docstring."""

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        jobs = self._submit(job_overrides, initial_job_idx)
        return self._wait(jobs, job_overrides, initial_job_idx)

    def _submit(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> list[Any]:
        """The plugin's own launch up to the submission (hydra_submitit_launcher 1.2.0, unchanged)."""
        from hydra.core.singleton import Singleton
        from hydra.core.utils import filter_overrides

        submitit = importlib.import_module("submitit")
        base_queue = importlib.import_module("hydra_plugins.hydra_submitit_launcher.config").BaseQueueConf

        assert self.config is not None
        params = self.params
        init_params = {"folder": params["submitit_folder"], "slurm_max_num_timeout": params["max_num_timeout"]}
        executor = submitit.AutoExecutor(cluster=self._EXECUTOR, **init_params)
        baseparams = set(OmegaConf.structured(base_queue).keys())
        executor.update_parameters(**{key if key in baseparams else f"{self._EXECUTOR}_{key}": value
                                      for key, value in params.items()
                                      if key not in ("submitit_folder", "max_num_timeout")})
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        log.info("Slurm launcher: %d job(s), sweep dir %s", len(job_overrides), sweep_dir.absolute())
        sweep_dir.mkdir(parents=True, exist_ok=True)
        job_params = []
        for idx, overrides in enumerate(job_overrides, start=initial_job_idx):
            log.info("\t#%d : %s", idx, " ".join(filter_overrides(overrides)))
            job_params.append((list(overrides), "hydra.sweep.dir", idx, f"job_id_for_{idx}", Singleton.get_state()))
        jobs: list[Any] = executor.map_array(self, *zip(*job_params, strict=True))
        log.info("Slurm launcher: submitted %s", ", ".join(job.job_id for job in jobs))
        return jobs

    def _config(self, overrides: Sequence[str], num: int) -> DictConfig:
        """A job's config as its job composes it (to name its run dir when it left none)."""
        assert self.config is not None and self.hydra_context is not None
        sweep_config: DictConfig = self.hydra_context.config_loader.load_sweep_config(self.config, list(overrides))
        with open_dict(sweep_config):
            sweep_config.hydra.job.num = num
        return sweep_config

    def _wait(self, jobs: list[Any], job_overrides: Sequence[Sequence[str]], first: int) -> list[JobReturn]:
        since = outcomes.now()
        grace = NETWORK_GRACE_S if jobs and network_fs(jobs[0].paths.folder) else GRACE_S
        pending = dict(enumerate(jobs))
        returns: dict[int, JobReturn] = {}
        gone: dict[int, float] = {}  # job -> when it was first seen out of the queue without a result
        failing_since: float | None = None
        next_check = 0.0

        def finish(i: int, found: outcomes.Outcome, ret: JobReturn | None) -> None:
            outcomes.record(found)
            returns[i] = ret or outcomes.as_return(found, self._config(job_overrides[i], first + i))
            pending.pop(i)
            if found.lost:
                log.error("job %d lost: %s", found.num, found.error)

        try:
            while pending:
                for i, job in list(pending.items()):
                    if _has_result(job):
                        finish(i, *_outcome(job, functools.partial(self._config, job_overrides[i], first + i), since))
                if not pending or time.monotonic() < next_check:
                    time.sleep(POLL_S if pending else 0)
                    continue
                next_check = time.monotonic() + QUEUE_POLL_S
                queued = in_queue([job.job_id for job in pending.values()])
                now = time.monotonic()
                if queued is None:
                    failing_since = failing_since or now
                    if now - failing_since < SQUEUE_GIVE_UP_S:
                        log.warning("squeue does not answer; the sweep waits for its jobs (up to %.0f s)",
                                    SQUEUE_GIVE_UP_S - (now - failing_since))
                        continue
                    queued = set()  # Slurm has not answered for long: what is not done is lost
                else:
                    failing_since = None
                for i, job in list(pending.items()):
                    if job.job_id in queued:
                        gone.pop(i, None)
                    elif now - gone.setdefault(i, now) >= grace and not _has_result(job):
                        state = final_state(job.job_id) if failing_since is None else "unknown (squeue fails)"
                        why = f"Slurm job {job.job_id} ended {state} without a result"
                        finish(i, outcomes.lost(self._config(job_overrides[i], first + i), why, since), None)
        except KeyboardInterrupt:
            ids = sorted({job.job_id.split("_")[0] for job in pending.values()})
            log.warning("the sweep's Slurm jobs not done keep running (scancel %s stops them)", " ".join(ids))
            raise
        return [returns[i] for i in range(len(jobs))]
