"""`launcher=joblib`: a sweep's jobs as local processes (hydra-joblib-launcher 1.2.0's own launch, conf/launcher/
joblib.yaml), with every job's outcome handed back to the launching process (outcomes.py).

Each job returns its outcome through joblib. A worker process that dies (killed, out of memory) makes joblib drop
the answers of every job of the batch: then each job's run dir says how it ended (its results.json or error.txt
written since the launch), and a job that left neither is lost.
"""

from __future__ import annotations

import functools
import importlib
import logging
from collections.abc import Sequence
from typing import Any

from hydra.core.utils import JobReturn
from omegaconf import DictConfig, open_dict

from runner.launchers import outcomes

log = logging.getLogger("runner")

# The plugin is a core dependency, imported by name as the other launchers' are (they are extras).
_Plugin: Any = importlib.import_module("hydra_plugins.hydra_joblib_launcher.joblib_launcher").JoblibLauncher


class JoblibLauncher(_Plugin):  # type: ignore[misc]
    """hydra_joblib_launcher's JoblibLauncher whose jobs' outcomes come back to the launching process."""

    def _config(self, overrides: Sequence[str], num: int) -> DictConfig:
        sweep_config: DictConfig = self.hydra_context.config_loader.load_sweep_config(self.config, list(overrides))
        with open_dict(sweep_config):
            sweep_config.hydra.job.num = num
        return sweep_config

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        since = outcomes.now()
        try:
            returns: Sequence[JobReturn] = super().launch(job_overrides, initial_job_idx)
        except Exception as exc:  # noqa: BLE001 - loky's TerminatedWorkerError, or any other loss of the pool
            why = f"its joblib worker process died ({type(exc).__name__}: {' '.join(str(exc).split())[:200]})"
            log.error("the joblib pool lost its answers: %s; each job's run dir says how it ended", why)
            lost = []
            for num, overrides in enumerate(job_overrides, start=initial_job_idx):
                cfg = self._config(overrides, num)
                found = outcomes.from_files(cfg, since) or outcomes.lost(cfg, why, since)
                outcomes.record(found)
                lost.append(outcomes.as_return(found, cfg))
            return lost
        return [outcomes.settle(ret, functools.partial(self._config, overrides, num))
                for num, (ret, overrides) in enumerate(zip(returns, job_overrides, strict=True), start=initial_job_idx)]
