"""`python -m runner.rescore RUN_DIR`: recompute every task's metrics from the samples files alone.

Useful after editing records by hand, after a crash before results.json was written, or to check a
results file. Reads the run's saved config and `samples/<task>.jsonl`; sends no request.

It scores exactly the records results.json describes: those of the samples the run's configuration selects
(its tasks, `limit`, data) whose fingerprint is the one that configuration gives them, found as the run finds
them (runner/run/pipeline.py `plan`, which reads the run's data). Records made with another configuration (the
rest of an interrupted `resume=refresh`) or of samples outside the selection (a later run with a lower
`limit`, tasks no longer selected) are left out and counted, on stderr and, with --write, in results.json's
`rescore.left_out`.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from runner.benchmarks.base import Benchmark, summarize
from runner.config import allow_code, instantiate, register
from runner.errors import RunnerError
from runner.metrics.uncertainty import scored_result
from runner.run.store import SampleStore, key_of, latest, record_key, write_json
from runner.tasks.base import BaseTask, Context, Loaded


def load_run(run_dir: Path) -> tuple[Any, list[BaseTask], dict[str, list[dict[str, Any]]]]:
    """A finished run dir read back: its config, its tasks (built from that config, as the run built them)
    and each task's latest records (one per sample id, in id order, whatever configuration made them: it
    loads no data); sends nothing."""
    cfg = _config(run_dir)
    benchmark = instantiate(cfg.benchmark, "benchmark")
    store = SampleStore(run_dir)
    tasks = [t for t in benchmark.build_tasks() if store.path(t.name).exists()]
    return cfg, tasks, {t.name: latest(store.load(t.name).values()) for t in tasks}


def _config(run_dir: Path) -> DictConfig:
    """The run's own config, with its own `allow_code` in force: a run scored by a user's scorer is read back
    with it (as the run itself, runner/run/build.py, did)."""
    register()
    saved, results = run_dir / ".hydra" / "config.yaml", run_dir / "results.json"
    if saved.exists():
        cfg = OmegaConf.load(saved)
    elif results.exists():  # runs started from Python (not the CLI) have no .hydra folder
        cfg = OmegaConf.create(json.loads(results.read_text(encoding="utf-8"))["config"])
    else:
        raise RunnerError(f"neither {saved} nor {results} exists; RUN_DIR must be a runner run directory")
    assert isinstance(cfg, DictConfig)
    allow_code(list(OmegaConf.select(cfg, "allow_code", default=None) or []))
    return cfg


@dataclass
class Selection:
    """What the run's configuration selects, read back: its tasks, their loaded data, the records to score."""

    cfg: DictConfig
    benchmark: Benchmark
    tasks: list[BaseTask]
    loaded: dict[str, Loaded]
    records: dict[str, list[dict[str, Any]]]
    model: Any = None
    """The model entry the run was built with (each task's effective request params come from it)."""
    left_out: dict[str, dict[str, int]] = field(default_factory=dict)
    """Per samples file, the latest records not scored: `other_configuration` (their sample is selected, with
    another fingerprint) and `not_selected` (their sample or task is not in the run's selection)."""


def select(run_dir: Path) -> Selection:
    """The run's objects built from its config as the run built them (nothing started, no request), and each
    selected task's latest records that the configuration's fingerprints select (in id order)."""
    from runner.run.build import build
    from runner.run.pipeline import plan

    cfg = _config(run_dir)
    # Built as the run was, minus what would touch anything: no cache, no tracker, the rejudged model's
    # replies not read (a replayed model has the same fingerprints as the model it replays).
    quiet = OmegaConf.merge(cfg, {"cache": {"enabled": False}, "rejudge": None})
    assert isinstance(quiet, DictConfig)
    OmegaConf.update(quiet, "tracker", {"_target_": "runner.outputs.tracking.base.NullTracker"}, merge=False)
    built = build(quiet, run_dir)
    epochs = int(cfg.get("epochs", 1) or 1)
    ctx = Context(model=built.model, panel=built.panel, seed=int(cfg.get("seed", 0)), run_dir=run_dir, epochs=epochs)
    with tempfile.TemporaryDirectory() as empty:
        # Planned against an empty run dir, every selected sample (and epoch) is a job carrying the
        # fingerprint the run gives it; the rows that cannot be samples are the loaded data's `bad`.
        planned = plan(built, SampleStore(Path(empty)), ctx, resume="refresh")
    wanted: dict[str, dict[str, str | None]] = {t.name: {} for t in built.tasks}
    for job in planned.jobs:
        wanted[job.task.name][record_key(job.sample.id, job.epoch)] = job.fingerprint
    store = SampleStore(run_dir)
    tasks = [t for t in built.tasks if store.path(t.name).exists()]
    out = Selection(cfg, built.benchmark, tasks, planned.loaded, {}, model=built.model)
    for task in tasks:
        fingerprints = wanted[task.name]
        for bad_id, _ in planned.loaded[task.name].bad:  # their error records carry no fingerprint
            fingerprints.setdefault(record_key(bad_id), None)
        kept, other, outside = [], 0, 0
        for record in store.load(task.name).values():
            key = key_of(record)
            if key not in fingerprints:
                outside += 1
            elif fingerprints[key] is not None and record.get("fingerprint") != fingerprints[key]:
                other += 1
            else:
                kept.append(record)
        out.records[task.name] = latest(kept)
        if other or outside:
            out.left_out[task.name] = {"other_configuration": other, "not_selected": outside}
    for path in sorted(store.dir.glob("*.jsonl")):
        if path.stem not in wanted:  # a task the configuration no longer selects
            out.left_out[path.stem] = {"other_configuration": 0, "not_selected": len(store.load(path.stem))}
    return out


def rescore(run_dir: Path) -> dict[str, Any]:
    """Per-task results blocks recomputed from the run's samples files (intervals and judge statistics
    too, with the run's seed and stats.n_boot: the same numbers)."""
    return rescored(run_dir)[0]


def rescored(run_dir: Path) -> tuple[dict[str, Any], dict[str, Any], dict[str, dict[str, int]]]:
    """(per-task results blocks, the `summary` block, the records left out per samples file) recomputed from
    the records the run's configuration selects, so the summary's headline values and macro average agree
    with the tasks they come from."""
    sel = select(run_dir)
    cfg, tasks, records = sel.cfg, sel.tasks, sel.records
    seed, n_boot = int(cfg.get("seed", 0)), int(OmegaConf.select(cfg, "stats.n_boot", default=1000))
    epochs = int(cfg.get("epochs", 1) or 1)
    # Reduced, with intervals, as the run made them (runner/run/pipeline.py): the same numbers from disk.
    results = {t.name: replace(scored_result(t, records[t.name], n_boot=n_boot, seed=seed, epochs=epochs),
                               data=sel.loaded[t.name].data, params=_params(t, sel.model),
                               params_dropped=_params(t, sel.model, "dropped_params")) for t in tasks}
    return ({name: r.to_dict() for name, r in results.items()}, summarize(sel.benchmark, tasks, results),
            sel.left_out)


def _params(task: BaseTask, model: Any, which: str = "model_params") -> dict[str, Any] | None:
    """The task's request params sent (or, `dropped_params`, left out), as the run records them (None for a task
    whose class says none)."""
    made = getattr(task, which, None)
    return None if made is None else made(model)


def left_out_line(left_out: dict[str, dict[str, int]]) -> str | None:
    """One line saying which records were not scored and why; None when every record was."""
    if not left_out:
        return None
    parts = [f"{task}: {n['other_configuration']} made with another configuration, {n['not_selected']} outside "
             "the run's selection" for task, n in left_out.items()]
    total = sum(sum(n.values()) for n in left_out.values())
    return (f"rescore: left out {total} record(s) that results.json does not describe ({'; '.join(parts)}); "
            "only the run's current configuration and selection are scored")


def main(argv: list[str] | None = None, prog: str = "python -m runner.rescore") -> int:
    """CLI entry point: print the recomputed blocks; --write updates results.json."""
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--write", action="store_true",
                        help="replace the tasks and summary blocks of results.json (and note the records "
                             "left out in its rescore block)")
    args = parser.parse_args(argv)
    try:
        tasks, summary, left_out = rescored(args.run_dir)
    except RunnerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    line = left_out_line(left_out)
    if line:
        print(line, file=sys.stderr)
    failed = [f"{name} ({block['failed']})" for name, block in tasks.items() if block.get("failed")]
    if summary.get("failed"):
        failed.append(f"the summary ({summary['failed']})")
    if args.write:
        path = args.run_dir / "results.json"
        results = json.loads(path.read_text()) if path.exists() else {}
        results["tasks"] = tasks
        results["summary"] = {**(results.get("summary") or {}), **summary}
        results["rescore"] = {"left_out": left_out}
        write_json(path, results)
    print(json.dumps(tasks, indent=2))
    if failed:  # the other tasks' figures are printed (and written): what could not be computed is named
        print(f"error: rescore: the metrics of {'; '.join(failed)} could not be computed; RUNNER_DEBUG=1 shows "
              "the traceback", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
