"""Where the runner's Hydra config tree is, in a clone and once installed: the one place that knows."""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent


def conf_dir() -> Path:
    """`runner/conf` inside an installed package (setup.py ships the clone's top-level conf/ there), else
    the clone's own conf/ beside the package: `python -m runner` from a clone and an editable install."""
    installed = PACKAGE / "conf"
    return installed if installed.is_dir() else PACKAGE.parent / "conf"
