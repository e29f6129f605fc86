"""A sweep's page data: its jobs (each linked to its own page), the comparison table, the paired
differences and the charts of `report/` (written first when the sweep has no report yet)."""

from __future__ import annotations

import base64
import csv
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from runner.view.run_data import read_results, run_dirs_below

log = logging.getLogger("runner.view")

REPORT = "report"
_NUMERIC_PAIR_COLUMNS = ("n", "diff", "ci_low", "ci_high", "p_value")


def _float(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        return None


def read_pairs(path: Path) -> list[dict[str, Any]]:
    """report/pairs.csv as rows, its numbers as numbers ([] when there is none)."""
    if not path.is_file():
        return []
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    return [{k: _float(v) if k in _NUMERIC_PAIR_COLUMNS else v for k, v in row.items()} for row in rows]


CHART_ORDER = ("tasks.png", "pairs.png", "judge_agreement.png")
"""The report's charts in reading order (the headline metrics first); any other PNG follows by name."""


def charts(folder: Path) -> list[dict[str, str]]:
    """Every PNG of report/, inline as a data: URI (the page loads no file)."""
    found = sorted(folder.glob("*.png"), key=lambda p: (CHART_ORDER.index(p.name) if p.name in CHART_ORDER
                                                         else len(CHART_ORDER), p.name))
    return [{"name": p.name, "src": "data:image/png;base64," + base64.b64encode(p.read_bytes()).decode("ascii")}
            for p in found]


def _labels(jobs: list[tuple[Path, dict[str, Any]]], root: Path) -> list[str]:
    """Each job's name in the report (its model, else its run dir); the run dir is added where two agree."""
    from runner.outputs.pairs import job_label

    labels = [job_label(root, run_dir / "results.json", results) for run_dir, results in jobs]
    return [f"{label} ({run_dir.name})" if labels.count(label) > 1 else label
            for label, (run_dir, _) in zip(labels, jobs, strict=True)]


def comparison(jobs: list[tuple[Path, dict[str, Any]]], labels: list[str], hrefs: list[str]) -> dict[str, Any]:
    """The report's rows (runner.report.rows_of, the numbers of comparison.csv) pivoted: one row per
    benchmark, task and metric, one column per job that has results."""
    from runner.outputs.sweep_report import rows_of

    columns: list[dict[str, Any]] = []
    table: dict[tuple[Any, Any, Any], list[dict[str, Any] | None]] = {}
    with_results = [(job, label, href) for job, label, href in zip(jobs, labels, hrefs, strict=True) if job[1]]
    for i, ((_, results), label, href) in enumerate(with_results):
        columns.append({"label": label, "href": href})
        for row in rows_of(results, label):
            cells = table.setdefault((row["benchmark"], row["task"], row["metric"]), [None] * len(with_results))
            cells[i] = {"value": row["value"], "ci_low": row["ci_low"], "ci_high": row["ci_high"], "n": row["n"]}
    rows = [{"benchmark": b, "task": t, "metric": m, "cells": cells} for (b, t, m), cells in table.items()]
    return {"columns": columns, "rows": rows}


def _job(run_dir: Path, results: dict[str, Any], label: str, href: str, root: Path) -> dict[str, Any]:
    from runner.outputs.sweep_report import cost_of

    summary = results.get("summary")
    summary = summary if isinstance(summary, dict) else {}
    cost = cost_of(results) if results else {}
    return {"label": label, "href": href, "dir": run_dir.relative_to(root).as_posix(),
            "benchmark": results.get("benchmark"), "model": results.get("model"), "judges": results.get("judges"),
            "n_samples": summary.get("n_samples"), "n_errors": summary.get("n_errors"),
            "n_invalid": summary.get("n_invalid"), "model_cost": cost.get("model_cost"),
            "judge_cost": cost.get("judge_cost"), "duration_s": cost.get("duration_s"),
            "demo": bool(results.get("demo")), "stopped": results.get("stopped")}


def sweep_data(root: Path, page_dir: Path, job_page: Callable[[Path], Path]) -> dict[str, Any]:
    """The sweep page's data; `job_page(run_dir)` writes a job's own page and returns its path."""
    from runner.outputs.sweep_report import failed_jobs, write_report
    from runner.view.page import relative_href

    jobs = [(run_dir, read_results(run_dir)) for run_dir in run_dirs_below(root)]
    report = root / REPORT
    if any(results for _, results in jobs) and not (report / "comparison.csv").is_file():
        log.info("view: %s has no report yet; writing it", root)
        write_report(root)
    labels = _labels(jobs, root)
    hrefs = [relative_href(job_page(run_dir), page_dir) for run_dir, _ in jobs]
    return {"kind": "sweep", "dir": str(root),
            "jobs": [_job(run_dir, results, label, href, root)
                     for (run_dir, results), label, href in zip(jobs, labels, hrefs, strict=True)],
            "comparison": comparison(jobs, labels, hrefs), "pairs": read_pairs(report / "pairs.csv"),
            "charts": charts(report), "failed": failed_jobs(root)}
