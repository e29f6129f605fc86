"""`python -m runner.rescore RUN_DIR`: recompute every task's metrics from the samples files alone.

Useful after editing records by hand, after a crash before results.json was written, or to check a
results file. Reads the run's saved config (for the task classes) and `samples/<task>.jsonl`; sends
no request.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from runner.benchmarks.base import Benchmark, Task
from runner.config import instantiate, register
from runner.errors import RunnerError
from runner.metrics.uncertainty import with_uncertainty
from runner.store import SampleStore, latest, write_json


def load_run(run_dir: Path) -> tuple[Any, list[Task], dict[str, list[dict[str, Any]]]]:
    """A finished run dir read back: its config, its tasks (built from that config, as the run built them)
    and each task's latest records (one per sample id, in id order); sends nothing."""
    cfg, _, tasks, records = _load(run_dir)
    return cfg, tasks, records


def _load(run_dir: Path) -> tuple[Any, Benchmark, list[Task], dict[str, list[dict[str, Any]]]]:
    register()
    saved, results = run_dir / ".hydra" / "config.yaml", run_dir / "results.json"
    if saved.exists():
        cfg = OmegaConf.load(saved)
    elif results.exists():  # runs started from Python (not the CLI) have no .hydra folder
        cfg = OmegaConf.create(json.loads(results.read_text(encoding="utf-8"))["config"])
    else:
        raise RunnerError(f"neither {saved} nor {results} exists; RUN_DIR must be a runner run directory")
    benchmark = instantiate(cfg.benchmark, "benchmark")
    store = SampleStore(run_dir)
    tasks = [t for t in benchmark.build_tasks() if store.path(t.name).exists()]
    return cfg, benchmark, tasks, {t.name: latest(store.load(t.name).values()) for t in tasks}


def rescore(run_dir: Path) -> dict[str, Any]:
    """Per-task results blocks recomputed from the run's samples files (intervals and judge statistics
    too, with the run's seed and stats.n_boot: the same numbers)."""
    return rescored(run_dir)[0]


def rescored(run_dir: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(per-task results blocks, the `summary` block) recomputed from the run's samples files, so the
    summary's headline values and macro average agree with the tasks they come from."""
    cfg, benchmark, tasks, records = _load(run_dir)
    seed, n_boot = int(cfg.get("seed", 0)), int(OmegaConf.select(cfg, "stats.n_boot", default=1000))
    epochs = int(cfg.get("epochs", 1) or 1)
    # The data a run was scored on is known only when it loads them: kept from its results.json.
    path = run_dir / "results.json"
    before = json.loads(path.read_text(encoding="utf-8")).get("tasks", {}) if path.exists() else {}
    results = {t.name: replace(with_uncertainty(t, records[t.name], t.aggregate(records[t.name]), n_boot=n_boot,
                                                seed=seed, epochs=epochs),
                               data=(before.get(t.name) or {}).get("data")) for t in tasks}
    return {name: r.to_dict() for name, r in results.items()}, benchmark.summary(tasks, results)


def main(argv: list[str] | None = None) -> int:
    """CLI entry point: print the recomputed blocks; --write updates results.json."""
    parser = argparse.ArgumentParser(prog="python -m runner.rescore", description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--write", action="store_true",
                        help="replace the tasks and summary blocks of results.json")
    args = parser.parse_args(argv)
    try:
        tasks, summary = rescored(args.run_dir)
    except RunnerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.write:
        path = args.run_dir / "results.json"
        results = json.loads(path.read_text()) if path.exists() else {}
        results["tasks"] = tasks
        results["summary"] = {**(results.get("summary") or {}), **summary}
        write_json(path, results)
    print(json.dumps(tasks, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
