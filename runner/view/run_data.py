"""What the viewer reads from disk: a run dir's results.json and latest sample records, and the run dirs
of a sweep. Reads only; never writes into the run."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.errors import DataError
from runner.run.store import latest, read_records

SKIPPED_DIRS = frozenset({"report", "view", "samples", ".hydra", "wandb", "mcp_logs"})
"""Folders below a sweep dir that never hold a job's run dir (walking them would only cost time)."""


@dataclass
class Run:
    """One run dir as the viewer sees it: results.json (empty when the run never wrote one) and, per task,
    its latest records in id order."""

    dir: Path
    results: dict[str, Any]
    tasks: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """The run's model name, else its folder name (judge-only benchmarks name no model)."""
        return str(self.results.get("model") or self.dir.name)


def is_run_dir(path: Path) -> bool:
    """A folder the runner wrote: results.json, or a samples folder (a run stopped before results.json)."""
    return (path / "results.json").is_file() or any((path / "samples").glob("*.jsonl"))


def run_dirs_below(root: Path) -> list[Path]:
    """Every run dir strictly below `root` (a sweep's jobs), in path order; a run dir's own subfolders are
    not searched (a job never nests another)."""
    found: list[Path] = []
    stack = [root]
    while stack:
        folder = stack.pop()
        for child in sorted((p for p in folder.iterdir() if p.is_dir() and p.name not in SKIPPED_DIRS),
                            reverse=True):
            if is_run_dir(child):
                found.append(child)
            else:
                stack.append(child)
    return sorted(found)


def read_results(run_dir: Path) -> dict[str, Any]:
    """results.json as a dict ({} when the run has none yet)."""
    path = run_dir / "results.json"
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DataError(f"{path} cannot be read as JSON ({exc}); restore it, or run "
                        f"`python -m runner.rescore {run_dir} --write` to rebuild its tasks") from exc
    if not isinstance(data, dict):
        raise DataError(f"{path} is not a JSON object; restore it or remove it to view the samples alone")
    return data


def read_samples(path: Path) -> list[dict[str, Any]]:
    """The latest record per sample of one samples file, in id order (then epoch), read as the runner reads it."""
    return latest(read_records(path).values())


def read_run(run_dir: Path) -> Run:
    """A run dir's results and records; tasks in results.json's order, then any other samples file."""
    results = read_results(run_dir)
    files = {p.stem: p for p in sorted((run_dir / "samples").glob("*.jsonl"))}
    names = [t for t in (results.get("tasks") or {}) if t in files] + \
        [t for t in files if t not in (results.get("tasks") or {})]
    return Run(dir=run_dir, results=results, tasks={name: read_samples(files[name]) for name in names})


def kind_of(path: Path) -> str:
    """`run` or `sweep`; a DataError (exit 2) naming what was expected for anything else."""
    if not path.is_dir():
        raise DataError(f"{path} is not a directory; give a run dir (with results.json or samples/) or a "
                        "sweep dir (with run dirs below it)")
    if is_run_dir(path):
        return "run"
    if (path / "multirun.yaml").is_file() or run_dirs_below(path):
        return "sweep"
    raise DataError(f"{path} is neither a run dir (no results.json, no samples/*.jsonl) nor a sweep dir (no run "
                    "dir below it); give the hydra.run.dir of a run or the hydra.sweep.dir of a sweep")
