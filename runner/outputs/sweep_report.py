"""One comparison across runs: `report/comparison.csv` and `.md`, `report/pairs.csv` and `.md` (+ charts)
for a sweep or any folder.

`python -m runner.report DIR` reads every `results.json` below DIR; a -m sweep writes the report
into its sweep dir when it ends (a Hydra callback, conf/config.yaml `hydra.callbacks`). The paired
comparisons are runner/outputs/pairs.py.
"""

from __future__ import annotations

import argparse
import csv
import json
import logging
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import OmegaConf

from runner.outputs.pairs import PAIR_COLUMNS, Job, job_label, pair_rows
from runner.outputs.pairs import markdown as pairs_markdown
from runner.untrusted import csv_cell, md_cell

log = logging.getLogger("runner.report")

COLUMNS = ["model", "benchmark", "task", "metric", "value", "stderr", "ci_low", "ci_high", "n"]


def find_results(root: Path) -> list[Path]:
    """Every results.json below `root` (not inside a report folder), in path order."""
    return sorted(p for p in root.rglob("results.json") if "report" not in p.relative_to(root).parts[:-1])


def rows_of(results: dict[str, Any], model: str | None = None) -> list[dict[str, Any]]:
    """One row per task metric, its 95 % interval taken from the task's `ci` in results.json (none when the
    run has none for it); `model` names the job (the report's label), else results.json's model."""
    rows = []
    for task, block in (results.get("tasks") or {}).items():
        if not isinstance(block, dict):
            continue
        errs = block.get("stderr") or {}
        intervals = dict(block.get("ci") or {})
        metrics = dict(block.get("metrics") or {})
        stats = block.get("judge_stats")
        if isinstance(stats, dict) and "fleiss_kappa" in stats:  # the panel's reliability beside its scores
            metrics["fleiss_kappa"] = stats["fleiss_kappa"]
            intervals["fleiss_kappa"] = stats.get("fleiss_kappa_ci")
        for metric, value in metrics.items():
            interval = intervals.get(metric)
            low, high = interval if isinstance(interval, (list, tuple)) and len(interval) == 2 else (None, None)
            se = errs.get(metric)
            rows.append({"model": model or results.get("model"), "benchmark": results.get("benchmark"),
                         "task": task, "metric": metric, "value": value,
                         "stderr": float(se) if isinstance(se, (int, float)) else None,
                         "ci_low": low, "ci_high": high, "n": block.get("n")})
    return rows


def cost_of(results: dict[str, Any]) -> dict[str, Any]:
    """Tokens and cost of a run, the model under test and the judges apart."""
    out = {"model": results.get("model"), "benchmark": results.get("benchmark"), "model_cost": 0.0,
           "judge_cost": 0.0, "prompt_tokens": 0, "completion_tokens": 0, "cache_hits": 0,
           "duration_s": (results.get("run") or {}).get("duration_s"), "demo": bool(results.get("demo"))}
    roles = set()
    # An entry in two roles (the model judging itself) has each role's figures in by_role.
    every = [u for usage in (results.get("usage") or {}).values()
             for u in (usage.get("by_role") or {"": usage}).values()]
    for usage in every:
        side = "model_cost" if usage.get("role") == "model" else "judge_cost"
        roles.add(side)
        cost = usage.get("cost_usd", usage.get("cost", 0.0))  # null: a price that is not known
        out[side] = None if cost is None or out[side] is None else out[side] + cost
        out["prompt_tokens"] += usage.get("prompt_tokens", 0)
        out["completion_tokens"] += usage.get("completion_tokens", 0)
        out["cache_hits"] += usage.get("cached_requests", usage.get("cache_hits", 0))
    for side in {"model_cost", "judge_cost"} - roles:  # no such endpoint (a judge-only run): no cost at all
        out[side] = NONE
    return out


NONE = "—"
"""A cost column of a run that has no such endpoint (no model under test, or no judge)."""


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4f}"
    return "" if value is None else str(value)


def markdown(rows: list[dict[str, Any]], costs: list[dict[str, Any]], failed: list[str]) -> str:
    """Models side by side per benchmark/task/metric, then cost per model."""
    models = list(dict.fromkeys(r["model"] for r in rows))
    table: dict[tuple[str, str, str], dict[str, dict[str, Any]]] = defaultdict(dict)
    for r in rows:
        table[(r["benchmark"], r["task"], r["metric"])][r["model"]] = r
    lines = ["# Comparison", "", "| benchmark | task | metric | " + " | ".join(md_cell(m) for m in models) + " |",
             "|---|---|---|" + "---|" * len(models)]
    for (bench, task, metric), by_model in table.items():
        cells = []
        for m in models:
            cell = by_model.get(m)
            if cell is None:
                cells.append("")
            elif cell["ci_low"] is not None and isinstance(cell["value"], (int, float)):
                cells.append(f"{cell['value']:.3f} [{cell['ci_low']:.3f}, {cell['ci_high']:.3f}]")
            else:
                cells.append(_fmt(cell["value"]))
        lines.append(f"| {md_cell(bench)} | {md_cell(task)} | {md_cell(metric)} | " + " | ".join(cells) + " |")
    lines += ["", "Intervals: 95 %, from each task's `ci` in results.json (Wilson for a proportion of 0/1 sample "
              "scores, else a seeded bootstrap). Paired differences between models: pairs.md.", "",
              "## Cost", "", "| model | benchmark | model cost ($) | judge cost ($) | prompt tokens | "
              "completion tokens | cache hits | duration (s) |", "|---|---|---|---|---|---|---|---|"]
    for c in costs:
        duration = c["duration_s"]
        lines.append(f"| {md_cell(c['model'])} | {md_cell(c['benchmark'])} | {_fmt(c['model_cost']) or 'unknown'} | "
                     f"{_fmt(c['judge_cost']) or 'unknown'} | "
                     f"{c['prompt_tokens']} | {c['completion_tokens']} | {c['cache_hits']} | "
                     f"{f'{duration:.1f}' if isinstance(duration, (int, float)) else ''} |")
    demo = [c["model"] for c in costs if c.get("demo")]
    if demo:
        lines += ["", f"Demo runs ({', '.join(demo)}): the embedded SmolLM2-135M model answered or judged them; "
                  "their numbers show the pipeline works, not what a model can do."]
    if failed:
        lines += ["", "## Failed jobs", ""] + [f"- {md_cell(f)}" for f in failed]
    return "\n".join(lines) + "\n"


def failed_jobs(root: Path) -> list[str]:
    """`<job dir>: <reason>` for every job of the sweep that stopped with an error (secrets masked: the
    reason is an error text, which may quote an endpoint's address or a provider's reply)."""
    from runner.config.redact import redact_text

    return [redact_text(f"{p.parent.relative_to(root)}: {p.read_text(encoding='utf-8').strip()}")
            for p in sorted(root.rglob("error.txt"))]


def read_jobs(root: Path) -> list[Job]:
    """Every run below `root` with a readable results.json (an unreadable one is logged and left out), each
    labelled so that no two runs share a label (`distinct_labels`)."""
    jobs = []
    for path in find_results(root):
        try:
            results = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            log.warning("report: %s left out: %s", path, exc)
            continue
        if isinstance(results, dict):
            jobs.append(Job(run_dir=path.parent, label=job_label(root, path, results), results=results))
    distinct_labels(root, jobs)
    return jobs


def distinct_labels(root: Path, jobs: list[Job]) -> None:
    """Runs that share a label (two jobs of one model entry, say `-m model=openai-compatible
    model.model=a,b`) are told apart by the overrides in which they differ, e.g. `openai-compatible
    (model.model=a)`, else by their run dir; runs of the same label and benchmark would merge otherwise."""
    groups: dict[str, list[Job]] = defaultdict(list)
    for job in jobs:
        groups[job.label].append(job)
    for label, group in groups.items():
        if len(group) < 2:
            continue
        given = [_overrides(job.run_dir) for job in group]
        varied = [k for k in dict.fromkeys(k for g in given for k in g) if len({g.get(k) for g in given}) > 1]
        for job, overrides in zip(group, given, strict=True):
            parts = [f"{k}={overrides[k]}" for k in varied if k in overrides]
            job.label = f"{label} ({', '.join(parts)})" if parts else f"{label} ({_relative(root, job.run_dir)})"
        if len({job.label for job in group}) < len(group):  # the overrides do not tell them apart
            for job in group:
                job.label = f"{label} ({_relative(root, job.run_dir)})"


def _overrides(run_dir: Path) -> dict[str, str]:
    """The run's command-line overrides (`.hydra/overrides.yaml`) as {key: value}; {} when not saved."""
    try:
        from omegaconf import OmegaConf

        items = OmegaConf.load(run_dir / ".hydra" / "overrides.yaml")
    except Exception:  # noqa: BLE001 - a run started from Python has none; its run dir names it
        return {}
    pairs = (str(item).partition("=") for item in items)
    return {key.lstrip("+~"): value for key, _, value in pairs if key and not key.startswith("hydra.")}


def _relative(root: Path, run_dir: Path) -> str:
    try:
        return str(run_dir.relative_to(root))
    except ValueError:
        return str(run_dir)


def _write_csv(path: Path, columns: list[str], rows: list[dict[str, Any]]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns)
        writer.writeheader()
        # Model names, tasks and notes come from configs and data: never a formula in a spreadsheet.
        writer.writerows({k: csv_cell(v) for k, v in row.items()} for row in rows)


def write_report(root: Path, failed: list[str] | None = None) -> dict[str, Any]:
    """Write `root/report/comparison.{csv,md}`, `pairs.{csv,md}` and charts; return what was written. `failed`
    names the jobs that failed or were lost (`<job dir>: <why>`); None: the error.txt files below `root`."""
    root = Path(root)
    jobs = read_jobs(root)
    rows = [row for job in jobs for row in rows_of(job.results, job.label)]
    costs = [{**cost_of(job.results), "model": job.label} for job in jobs]
    out_dir = root / "report"
    out_dir.mkdir(parents=True, exist_ok=True)
    _write_csv(out_dir / "comparison.csv", COLUMNS, rows)
    failed = failed_jobs(root) if failed is None else failed
    (out_dir / "comparison.md").write_text(markdown(rows, costs, failed), encoding="utf-8")
    charts = _charts(rows, out_dir)
    try:
        pairs, notes = pair_rows(jobs)
    except Exception as exc:  # noqa: BLE001 - the comparison tables are written; a pairing bug must not hide them
        log.warning("report: paired comparisons failed: %s", exc)
        pairs, notes = [], [f"paired comparisons failed: {type(exc).__name__}: {exc}"]
    _write_csv(out_dir / "pairs.csv", PAIR_COLUMNS, pairs)
    forest = _pairs_chart(pairs, out_dir)
    if forest is not None:
        charts["pairs"] = forest
    (out_dir / "pairs.md").write_text(pairs_markdown(pairs, notes, forest), encoding="utf-8")
    log.info("comparison of %d run(s) written to %s", len(jobs), out_dir)
    return {"dir": out_dir, "rows": rows, "costs": costs, "failed": failed, "charts": charts,
            "pairs": pairs, "pair_notes": notes, "runs": len(jobs)}


def _pairs_chart(pairs: list[dict[str, Any]], out_dir: Path) -> Path | None:
    try:
        from runner.outputs.charts import forest_plot
    except ImportError:  # the charts module is optional for the tables
        return None
    return forest_plot(pairs, out_dir / "pairs.png")


def _charts(rows: list[dict[str, Any]], out_dir: Path) -> dict[str, Path]:
    try:
        from runner.outputs import charts
    except ImportError:  # the charts module is optional for the tables
        return {}
    made: dict[str, Path] = {}
    for name, fn in (("tasks", "comparison_bars"), ("judge_agreement", "judge_agreement_bars")):
        draw = getattr(charts, fn, None)
        if draw is not None:
            path = draw(rows, out_dir / f"{name}.png")
            if path is not None:
                made[name] = path
    return made


class SweepReport(Callback):
    """Hydra callback: when a -m sweep ends, write its comparison report and log it to W&B."""

    failed: list[str] = []
    """`<job dir>: <why>` for each job of the last sweep that failed or was lost."""
    root: Path | None = None
    """The last sweep's dir."""

    def on_multirun_start(self, config: Any, **kwargs: Any) -> None:
        """Before the launcher logs each job's overrides (`#0 : model.api_key=...`): every log message of the
        launching process is masked from here on, whatever handlers Hydra configures between jobs."""
        from runner.config.redact import install_log_redaction
        from runner.launchers import register_plugin
        from runner.launchers.outcomes import reset

        install_log_redaction()
        reset()
        register_plugin(OmegaConf.select(config, "hydra.launcher._target_"))  # runner/launchers/__init__.py
        SweepReport.failed, SweepReport.root = [], None

    def on_job_start(self, config: Any, **kwargs: Any) -> None:
        """The sweeper writes multirun.yaml (the sweep's config and overrides as typed) before the first
        job; each job masks it as it starts, so a key stays there only until then, not until the sweep ends
        (atomic and idempotent: jobs of a parallel launcher may do it at once, and read it meanwhile)."""
        if "MULTIRUN" not in str(OmegaConf.select(config, "hydra.mode")):
            return
        from runner.config.redact import install_log_redaction, redact_yaml_file

        install_log_redaction()
        redact_yaml_file(Path(str(config.hydra.sweep.dir)) / "multirun.yaml")

    def on_multirun_end(self, config: Any, **kwargs: Any) -> None:
        """Write the report into the sweep dir (all launchers call this in the launching process). The jobs'
        outcomes came back to this process (runner/launchers/): the failed and lost ones are named in the report;
        with a launcher that hands back none, the jobs' error.txt files name them."""
        from runner.launchers.outcomes import outcomes

        root = Path(config.hydra.sweep.dir).absolute()
        SweepReport.root = root
        if not root.exists():
            return
        from runner.config.redact import redact_yaml_file

        redact_yaml_file(root / "multirun.yaml")  # it holds the sweep's overrides as typed
        if config.get("dry_run"):  # nothing was run: the sum of the jobs' plans is the report
            from runner.run.plan_report import print_sweep_plan

            print_sweep_plan(root)
            return
        found = outcomes()
        report = write_report(root, failed=[job.line(root) for job in found if job.status] if found else None)
        SweepReport.failed = report["failed"]
        print(f"\nSweep comparison ({report['runs']} run(s); {report['dir']}):\n", flush=True)
        print((report["dir"] / "comparison.md").read_text(encoding="utf-8"), flush=True)
        _track(config, report, group=sweep_group(str(config.hydra.sweep.dir)))


def sweep_group(sweep_dir: str) -> str:
    """The W&B group of a sweep's runs: its sweep dir, readable."""
    return "sweep-" + "-".join(Path(sweep_dir).parts[-2:])


def _track(config: Any, report: dict[str, Any], group: str) -> None:
    from omegaconf import OmegaConf

    from runner.config import instantiate

    tracker_cfg = OmegaConf.select(config, "tracker")
    if tracker_cfg is None or "NullTracker" in str(tracker_cfg.get("_target_", "")):
        return
    tracker = instantiate(tracker_cfg, "tracker")
    failed = True
    try:
        tracker.start(run_dir=report["dir"], name=f"{group}-report", config={}, group=group, tags=["report"],
                      job_type="report")
        rows = [[r[c] for c in COLUMNS] for r in report["rows"]]
        pairs = [[r[c] for c in PAIR_COLUMNS] for r in report["pairs"]]
        tracker.log_extra(tables={"comparison": (COLUMNS, rows), "pairs": (PAIR_COLUMNS, pairs)},
                          images={f"charts/{k}": v for k, v in report["charts"].items()})
        failed = False
    finally:
        tracker.finish({}, failed=failed)


def main(argv: list[str] | None = None, prog: str = "python -m runner.report") -> int:
    """`python -m runner.report DIR`."""
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    parser.add_argument("dir", type=Path, help="a sweep dir, or any folder holding run dirs")
    args = parser.parse_args(argv)
    if not args.dir.is_dir():
        print(f"error: {args.dir} is not a directory; give a sweep dir or a folder of run dirs", file=sys.stderr)
        return 2
    report = write_report(args.dir)
    if not report["runs"]:
        print(f"error: no results.json below {args.dir}; nothing to compare", file=sys.stderr)
        return 2
    print((report["dir"] / "comparison.md").read_text(encoding="utf-8"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
