"""How a -m sweep's jobs run and what each ended with (docs/sweeps.md).

conf/launcher/*.yaml name these classes as `hydra.launcher._target_`: each is the Hydra launcher plugin's own
class, launching jobs as it does, with what a sweep on a cluster needs added: every job's outcome comes back
to the launching process (outcomes.py), a job that died without a result is a lost job and the others still
finish (ray_jobs.py, slurm_jobs.py, joblib_jobs.py), and a Ray job runs with the submitter's folder and the
environment variables its config reads (ray_jobs.py). in_job.py is what a job does in the process that runs it.
"""

from __future__ import annotations

import importlib

PLUGINS = {
    "hydra_plugins.runner_launchers.RayLauncher": ("runner.launchers.ray_jobs", "RayLauncher"),
    "hydra_plugins.runner_launchers.SlurmLauncher": ("runner.launchers.slurm_jobs", "SlurmLauncher"),
    "hydra_plugins.runner_launchers.JoblibLauncher": ("runner.launchers.joblib_jobs", "JoblibLauncher"),
}
"""conf/launcher/*.yaml's `hydra.launcher._target_` names, and the classes they are. Hydra instantiates a
launcher only from its plugin registry and only under a `hydra_plugins.` name; these classes live in the
runner package (where a job's process unpickles them), so they are entered in the registry under these names."""


def register_plugin(target: str | None) -> None:
    """Enter the runner's launcher named `target` in Hydra's plugin registry (before Hydra instantiates the
    sweep's launcher: runner/outputs/sweep_report.py `SweepReport.on_multirun_start`); other names: nothing."""
    if target not in PLUGINS:
        return
    from hydra.core.plugins import Plugins

    module, name = PLUGINS[target]
    Plugins.instance().class_name_to_class[target] = getattr(importlib.import_module(module), name)
