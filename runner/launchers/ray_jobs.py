"""`launcher=ray`: a sweep's jobs as Ray tasks, on a local Ray instance or an existing cluster
(`launcher.address=ray://HOST:PORT` or `auto`, conf/launcher/ray.yaml).

hydra-ray-launcher 1.2.2's own launch, with what a real cluster needs:

- it connects itself, never passing `object_store_memory` (or other settings of a new instance) to an
  existing cluster: the released plugin always did, which Ray refuses (hydra issue #2893);
- a job runs as in the submitting shell: with its folder (the sweep dir is made absolute here, and the job
  changes to the submitter's folder, runner/launchers/in_job.py) and with the environment variables the
  config reads (every `${oc.env:NAME}` of every job's config) plus RUNNER_*, WANDB_*, HF_*, HUGGING_FACE_*,
  LITELLM_* and those named in RUNNER_PASS_ENV (comma-separated), passed with the job's own arguments and set
  in its process (in_job.WithEnv): never in a config, a log line or a file (names are logged, values never;
  credential values are masked). Not through Ray's runtime_env, whose agent logs it, values and all;
- every job is waited for: a job whose worker died past Ray's retries (`max_retries`), whose node was lost
  or that was cancelled is a lost job (outcomes.py) and the others still finish.
"""

from __future__ import annotations

import importlib
import logging
import os
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hydra.core.utils import JobReturn
from omegaconf import DictConfig, OmegaConf, open_dict

from runner.errors import EndpointError
from runner.launchers import outcomes
from runner.launchers.in_job import WithEnv

log = logging.getLogger("runner")

# The plugin is part of the `cluster` extra: imported by name, so runner/ type-checks without it.
_Plugin: Any = importlib.import_module("hydra_plugins.hydra_ray_launcher.ray_launcher").RayLauncher

PASSED_PREFIXES = ("RUNNER_", "WANDB_", "HF_", "HUGGING_FACE_", "LITELLM_")
"""Environment variables every job gets from the submitting shell, besides those its config reads."""
LOCAL_OBJECT_STORE = 78_643_200
"""What the plugin gives a local Ray instance it starts (75 MB: small machines, CI)."""
_NEW_INSTANCE_ONLY = ("num_cpus", "num_gpus", "object_store_memory", "resources", "labels", "_system_config",
                      "include_dashboard", "dashboard_host", "dashboard_port", "_memory", "_temp_dir")
_ENV_REFERENCE = re.compile(r"\$\{oc\.env:\s*([A-Za-z_][A-Za-z0-9_]*)")
CONNECT_ATTEMPTS = 3
"""How often the Ray client asks again when the head could not start its per-client server: the head's proxy
forks that server while its own gRPC threads run, and the fork sometimes dies at once (seen on a loaded CI
machine: "Other threads are currently calling into gRPC, skipping fork() handlers"); the next one starts."""
_SERVER_START_FAILED = "Starting Ray client server failed"


def env_names(tree: Any) -> set[str]:
    """Every NAME of `${oc.env:NAME...}` in a plain config tree (its values unresolved)."""
    if isinstance(tree, dict):
        return set().union(*(env_names(v) for v in tree.values())) if tree else set()
    if isinstance(tree, list):
        return set().union(*(env_names(v) for v in tree)) if tree else set()
    return set(_ENV_REFERENCE.findall(tree)) if isinstance(tree, str) else set()


def passed_env(configs: Sequence[DictConfig]) -> dict[str, str]:
    """The submitting shell's variables the jobs get: those the configs read, and the runner's own families."""
    from runner.config.redact import is_secret_env, remember

    read: set[str] = {n.strip() for n in os.environ.get("RUNNER_PASS_ENV", "").split(",") if n.strip()}
    for cfg in configs:
        read |= env_names(OmegaConf.to_container(cfg, resolve=False))
    names = read | {name for name in os.environ if name.startswith(PASSED_PREFIXES)}
    passed = {name: os.environ[name] for name in sorted(names) if name in os.environ}
    for name, value in passed.items():
        if name in read or is_secret_env(name):  # a key read through ${oc.env:...}, say: masked wherever
            remember(value)  # this process prints it
    return passed


def connect(init: DictConfig, names: list[str]) -> None:
    """`ray.init` from conf/launcher/ray.yaml's `init`; one line when it fails. `names`: the variables the jobs
    get (logged, their values never)."""
    ray = importlib.import_module("ray")

    if ray.is_initialized():
        return
    kwargs: dict[str, Any] = dict(OmegaConf.to_container(init, resolve=True))  # type: ignore[arg-type]
    address = kwargs.get("address")
    if address:  # an existing cluster has its own resources: ray.init refuses them (hydra issue #2893)
        for key in _NEW_INSTANCE_ONLY:
            kwargs.pop(key, None)
    elif kwargs.get("object_store_memory") is None:
        kwargs["object_store_memory"] = LOCAL_OBJECT_STORE
    where = f"the Ray cluster at {address}" if address else "a local Ray instance"
    log.info("Ray: connecting to %s; the jobs get %d environment variable(s) of this shell: %s", where,
             len(names), ", ".join(names) or "none")
    try:
        _init(ray, kwargs)
    except Exception as exc:  # noqa: BLE001 - ConnectionError, AuthenticationError, ValueError, RuntimeError
        text = " ".join(str(exc).split())[:300]
        hint = ("its token authentication is on: export RAY_AUTH_MODE=token with the cluster's token in "
                "~/.ray/auth_token (or RAY_AUTH_TOKEN)" if "auth" in text.lower() else
                "is its head running, and is the address right (launcher.address=ray://HEAD:10001 for the Ray "
                "client, auto for a cluster started on this machine)?")
        raise EndpointError(f"launcher=ray: could not connect to {where} ({type(exc).__name__}: {text}); "
                            f"{hint}; no job was started") from None


def _init(ray: Any, kwargs: dict[str, Any], pause: float = 1.0) -> None:
    """`ray.init`, asked again (after a second, then two) only when the head says it could not start the
    client's server: no other failure changes by asking again."""
    for attempt in range(1, CONNECT_ATTEMPTS + 1):
        try:
            ray.init(**kwargs)
            return
        except Exception as exc:
            if _SERVER_START_FAILED not in str(exc) or attempt == CONNECT_ATTEMPTS:
                raise
            log.warning("Ray: the head could not start this client's server (attempt %d of %d); asking again",
                        attempt, CONNECT_ATTEMPTS)
            ray.shutdown()
            time.sleep(pause * attempt)


def _lost_reason(exc: BaseException) -> str:
    name = type(exc).__name__
    first = " ".join(str(exc).split())[:240]
    if "WorkerCrashed" in name:
        return (f"its Ray worker died ({name}: killed, or out of memory) and Ray's retries are used up "
                "(hydra.launcher.ray.remote.max_retries)")
    if "NodeDied" in name or "node" in first.lower() and "died" in first.lower():
        return f"the Ray node running it died ({name})"
    if "Cancelled" in name:
        return f"its Ray task was cancelled ({name})"
    return f"Ray gave no result ({name}: {first})"


class RayLauncher(_Plugin):  # type: ignore[misc]
    """hydra_ray_launcher's RayLauncher with the launch described in this module's docstring."""

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        from hydra.core.singleton import Singleton
        from hydra.core.utils import configure_log, filter_overrides, setup_globals

        ray = importlib.import_module("ray")
        launch_job_on_ray = importlib.import_module("hydra_plugins.hydra_ray_launcher._launcher_util").launch_job_on_ray

        setup_globals()
        assert self.config is not None and self.hydra_context is not None and self.task_function is not None
        configure_log(self.config.hydra.hydra_logging, self.config.hydra.verbose)
        sweep_dir = Path(str(self.config.hydra.sweep.dir)).absolute()  # the submitter's, not the worker's
        sweep_dir.mkdir(parents=True, exist_ok=True)
        log.info("Ray launcher: %d job(s), sweep dir %s", len(job_overrides), sweep_dir)
        configs = []
        for idx, overrides in enumerate(job_overrides, start=initial_job_idx):
            log.info("\t#%d : %s", idx, " ".join(filter_overrides(overrides)))
            sweep_config = self.hydra_context.config_loader.load_sweep_config(self.config, list(overrides))
            with open_dict(sweep_config):
                sweep_config.hydra.job.id = f"job_id_for_{idx}"
                sweep_config.hydra.job.num = idx
                sweep_config.hydra.sweep.dir = str(sweep_dir)
            configs.append(sweep_config)
        env = passed_env([self.config, *configs])
        connect(self.ray_cfg.init, sorted(env))
        since = outcomes.now()
        task = WithEnv(self.task_function, env)
        refs = [launch_job_on_ray(self.hydra_context, self.ray_cfg.remote, cfg, task, Singleton.get_state())
                for cfg in configs]
        returns = []
        for ref, cfg in zip(refs, configs, strict=True):  # each in turn: one lost job never stops the wait
            try:
                ret = ray.get(ref)
                found = outcomes.from_return(ret, cfg)
            except ray.exceptions.RayError as exc:
                found = outcomes.lost(cfg, _lost_reason(exc), since)
                ret = outcomes.as_return(found, cfg)
                log.error("job %d lost: %s", found.num, found.error)
            outcomes.record(found)
            returns.append(ret)
        return returns
