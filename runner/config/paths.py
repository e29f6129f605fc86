"""Where the runner's Hydra config tree is, in a clone and once installed: the one place that knows."""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent  # runner/, this file being runner/config/paths.py


def conf_dir() -> Path:
    """`runner/conf` inside an installed package (setup.py ships the clone's top-level conf/ there), else
    the clone's own conf/ beside the package: `python -m runner` from a clone and an editable install."""
    installed = PACKAGE / "conf"
    return installed if installed.is_dir() else PACKAGE.parent / "conf"


def name_problem(name: object) -> str | None:
    """Why `name` (a task's, a benchmark's, a model's or a judge's) cannot be part of a file name, or None.

    Names from configs and data files become file and folder names in the run dir (samples/<task>.jsonl,
    MUGEN's <Task_Name>/, VAKRA's predictions/<capability>/<domain>.json, win_rate/results_<task>.csv), so
    a separator, NUL or a leading dot (`..`, `.hidden`) would put a file elsewhere or out of sight."""
    text = str(name)
    if not text:
        return "is empty"
    for bad, what in (("/", "'/'"), ("\\", "'\\'"), ("\0", "a NUL character")):
        if bad in text:
            return f"contains {what}"
    if text.startswith("."):
        return "starts with '.'"
    return None


def inside(root: Path, *parts: str) -> Path:
    """`root/parts...`, or a ConfigError when that path would leave `root` (a name holding `..`, a separator
    or an absolute path). Checked on the text, not by resolving links: a run dir the user placed behind a
    symbolic link stays usable, and a name from data cannot make links."""
    import os

    from runner.errors import ConfigError

    path = Path(root, *parts)
    base = os.path.normpath(root)
    if any("\0" in p or Path(p).is_absolute() for p in parts) or \
            os.path.commonpath([base, os.path.normpath(path)]) != base or os.path.normpath(path) == base:
        shown = "/".join(parts).replace("\0", "\\0")
        raise ConfigError(f"'{shown}' would be written outside {root}: a task, benchmark, model or judge name "
                          "used as a file name must not contain '/', '\\', NUL or start with '.'; rename it")
    return path
