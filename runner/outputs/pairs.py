"""Paired comparisons of the models of a sweep: `report/pairs.csv` and `.md` (+ a forest plot).

Per task, its headline metric (the first metric the task reports in results.json) and each pair of jobs
that ran it: `diff` = model_a's value - model_b's over the samples both have (paired by sample id), with
`runner.metrics.paired.paired_difference` (exact McNemar test and its matching interval for 0/1 scores, else
a paired bootstrap interval and the p-value that inverts it), `n_boot` and `seed` from model_a's job config.
Per-sample values are `runner.metrics.samples.per_sample`'s (each sample once, its epochs reduced by the
task's reducer; runs read back with `runner.run.rescore.load_run`); a task whose headline metric has none
(corpus BLEU, win rates, VAKRA's domain mean, ...) is skipped with a note. Never raises on a run it cannot
read: it notes it and goes on.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

from runner.untrusted import md_cell

log = logging.getLogger("runner.report")

PAIR_COLUMNS = ["task", "metric", "model_a", "model_b", "n", "diff", "ci_low", "ci_high", "p_value", "test",
                "ci_method", "reliable", "note"]
"""The contract's columns, then how the interval was made, whether its coverage holds at this n, and a note
where the interval and the p-value disagree about 0 (runner/metrics/paired.py)."""
FEW = 10
"""Below this many paired samples a difference says nothing: pairs.md says so."""


def job_label(root: Path, results_path: Path, results: dict[str, Any]) -> str:
    """How a job is named in the report: its results.json `model`, else its run dir (relative to root)."""
    model = results.get("model")
    if model:
        return str(model)
    run_dir = results_path.parent
    try:
        rel = run_dir.relative_to(root)
    except ValueError:
        rel = run_dir
    return str(rel) if str(rel) != "." else run_dir.name


@dataclass
class Job:
    """One run dir of the folder, with its results.json."""

    run_dir: Path
    label: str
    results: dict[str, Any]


class _Unavailable(Exception):
    """A run's per-sample scores cannot be read (its config or samples are gone or unreadable)."""


class _SampleScores:
    """Per-sample values of a task metric per run dir, each run read back once (`load_run`)."""

    def __init__(self) -> None:
        self._runs: dict[Path, tuple[Any, dict[str, tuple[Any, list[dict[str, Any]]]]] | str] = {}

    def _load(self, run_dir: Path) -> tuple[Any, dict[str, tuple[Any, list[dict[str, Any]]]]]:
        if run_dir not in self._runs:
            try:
                from runner.run.rescore import load_run

                cfg, tasks, records = load_run(run_dir)
                self._runs[run_dir] = (cfg, {t.name: (t, records[t.name]) for t in tasks})
            except Exception as exc:  # noqa: BLE001 - any unreadable run is a note, never a crashed report
                self._runs[run_dir] = f"{type(exc).__name__}: {exc}"
        loaded = self._runs[run_dir]
        if isinstance(loaded, str):
            raise _Unavailable(loaded)
        return loaded

    def stats_config(self, run_dir: Path) -> tuple[int, int]:
        """(n_boot, seed) of the run's config."""
        from omegaconf import OmegaConf

        cfg, _ = self._load(run_dir)
        return (int(OmegaConf.select(cfg, "stats.n_boot", default=1000) or 1000),
                int(OmegaConf.select(cfg, "seed", default=0) or 0))

    def values(self, run_dir: Path, task: str, metric: str) -> dict[str, float] | None:
        """{sample: value} over the task's scored samples, each sample once (its epochs reduced by the task's
        reducer: runner/metrics/samples.py); None when `metric` has no per-sample value."""
        from runner.metrics.samples import per_sample

        _, tasks = self._load(run_dir)
        if task not in tasks:
            raise _Unavailable(f"no samples/{task}.jsonl")
        built, records = tasks[task]
        samples = per_sample(built, records)
        values = samples.values.get(metric)
        if not values:
            return None
        # A sample without a value of the metric (none of its epochs has one) pairs with nothing.
        return {k: v for k, v in zip(samples.keys, values, strict=True) if v is not None}


def _headline(block: dict[str, Any]) -> str | None:
    return next(iter(block.get("metrics") or {}), None)


def _named(jobs: list[Job]) -> list[tuple[str, Job]]:
    """Jobs with labels unique within a task: a repeated label gets its run dir added."""
    counts: dict[str, int] = defaultdict(int)
    for job in jobs:
        counts[job.label] += 1
    return [(f"{j.label} ({j.run_dir.name})" if counts[j.label] > 1 else j.label, j) for j in jobs]


def pair_rows(jobs: list[Job]) -> tuple[list[dict[str, Any]], list[str]]:
    """The pairs.csv rows and the notes for pairs.md (skipped tasks, unreadable runs, too few samples)."""
    groups: dict[tuple[str, str], list[Job]] = defaultdict(list)
    for job in jobs:
        for task, block in (job.results.get("tasks") or {}).items():
            if isinstance(block, dict):
                groups[(str(job.results.get("benchmark")), str(task))].append(job)
    scores = _SampleScores()
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    for (_, task), members in groups.items():
        if len(members) < 2:
            continue
        metric = _headline(members[0].results["tasks"][task])
        if metric is None:
            notes.append(f"`{task}`: reports no metric; not compared.")
            continue
        named = _named(members)
        values: dict[str, dict[str, float]] = {}
        for name, job in named:
            reported = job.results["tasks"][task].get("metrics") or {}
            if reported.get(metric) is None:
                why = "has no scored sample" if metric in reported else "does not report it"
                notes.append(f"`{task}`: {name} {why} (`{metric}`); left out of its pairs.")
                continue
            try:
                found = scores.values(job.run_dir, task, metric)
            except _Unavailable as exc:
                notes.append(f"`{task}`: per-sample scores of {name} ({job.run_dir}) unreadable ({exc}); "
                             "left out of its pairs.")
                continue
            if found is None:
                values = {}
                notes.append(f"`{task}`: its headline metric `{metric}` has no per-sample value (it is not a "
                             "mean over samples); no paired comparison.")
                break
            values[name] = found
        by_name = dict(named)
        for a, b in combinations([n for n, _ in named if n in values], 2):
            n_boot, seed = scores.stats_config(by_name[a].run_dir)
            rows.append(_compare(task, metric, a, b, values[a], values[b], n_boot, seed))
            if rows[-1]["n"] < FEW:
                notes.append(f"`{task}` {a} vs {b}: n = {rows[-1]['n']} paired samples (< {FEW}) is too few "
                             "to say anything; read the difference as no evidence either way.")
    return rows, notes


def _compare(task: str, metric: str, a: str, b: str, va: dict[str, float], vb: dict[str, float], n_boot: int,
             seed: int) -> dict[str, Any]:
    from runner.metrics.paired import paired_difference

    common = [k for k in va if k in vb]
    result = paired_difference([va[k] for k in common], [vb[k] for k in common], n_boot=n_boot, seed=seed)
    return {"task": task, "metric": metric, "model_a": a, "model_b": b, **result}


def _fmt(value: Any, digits: int = 3) -> str:
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return "—" if value is None else str(value)


def markdown(rows: list[dict[str, Any]], notes: list[str], chart: Path | None) -> str:
    """pairs.md: the table, how to read it, and the notes."""
    lines = ["# Paired comparisons", "",
             "Per task, its headline metric (the first it reports) and each pair of models: `diff` = model_a − "
             "model_b over the `n` samples both have (each sample once: with epochs, its value over them as the "
             "task reduces them). Interval and p come from one family, so they agree about 0: for 0/1 scores the "
             "exact McNemar test and the interval it inverts (`mcnemar_exact`); otherwise the expanded percentile "
             "bootstrap of the paired differences and the p-value that inverts it (`paired_bootstrap`, "
             "`stats.n_boot` resamples, seeded with `seed`, from model_a's job). `unreliable`: below the n at which "
             "the interval holds its coverage (docs/statistics.md).", ""]
    if rows:
        lines += ["| task | metric | model_a | model_b | n | diff | 95 % CI | p | test |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for r in rows:
            ci = "—" if r["ci_low"] is None else f"[{r['ci_low']:+.3f}, {r['ci_high']:+.3f}]"
            diff = "—" if r["diff"] is None else f"{r['diff']:+.3f}"
            few = " (too few)" if r["n"] < FEW else ""
            few += "" if r.get("reliable", True) else " unreliable"
            lines.append(f"| {md_cell(r['task'])} | {md_cell(r['metric'])} | {md_cell(r['model_a'])} | "
                         f"{md_cell(r['model_b'])} | {r['n']}{few} | "
                         f"{diff} | {ci} | {_fmt(r['p_value'], 4)} | {r['test']} |")
    else:
        lines.append("No task has two or more models with per-sample scores to compare.")
    if chart is not None:
        lines += ["", f"![differences with their 95 % intervals]({chart.name})"]
    if notes:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in notes]
    edge = [f"- `{r['task']}` {r['model_a']} vs {r['model_b']}: {r['note']}." for r in rows if r.get("note")]
    if edge:
        lines += ([] if notes else ["", "## Notes", ""]) + edge
    return "\n".join(lines) + "\n"
