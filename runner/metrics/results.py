"""From sample records (the JSONL lines) to a task's results block: counts, invalid and error ids, metrics."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from runner.metrics.core import defined, finite, stderr
from runner.types import TaskResult

Records = Sequence[Mapping[str, Any]]


def task_result(records: Records, metrics: Callable[[Records], Mapping[str, float | None]],
                zero: Mapping[str, Any],
                per_sample: Callable[[Mapping[str, Any]], Mapping[str, float | None]] | None = None) -> TaskResult:
    """Count and score a task's records.

    `n` counts every sample of the task. Samples whose model call failed (status `error`) have no reply
    to score: they are left out of the metrics, counted in `n_errors`/`error_ids`, and re-asked when the
    run is resumed. Samples with an invalid judgement (status `invalid`) stay in the metrics, scored as a
    fail by that judge, and are listed in `invalid_ids`. With no scored sample every metric named in
    `zero` is None (null): a figure over nothing is absent, never 0.

    `per_sample` maps a record to its per-sample values of the metrics that are means over samples;
    their standard errors go into `stderr` (the report turns them into 95 % intervals). A record may lack a
    value (None, or a key only other records have): it is left out of that metric's mean and standard
    error and counted in `n_missing`, never a crash and never a 0.
    """
    scored = [r for r in records if r.get("status") != "error"]
    errors = [r["id"] for r in records if r.get("status") == "error"]
    invalid = [r["id"] for r in scored if r.get("status") == "invalid"]
    values: dict[str, Any] = dict(metrics(scored)) if scored else dict.fromkeys(zero)
    errs: dict[str, float | None] = {}
    missing: dict[str, int] = {}
    if per_sample is not None and scored:
        columns = per_sample_columns([per_sample(r) for r in scored])
        for metric, column in columns.items():
            given = defined(column)
            errs[metric] = stderr(given)
            if len(given) < len(column):
                missing[metric] = len(column) - len(given)
    return TaskResult(n=len(records), n_invalid=len(invalid), invalid_ids=invalid, metrics=values,
                      n_errors=len(errors), error_ids=errors, stderr=errs, n_missing=missing)


def per_sample_columns(rows: Sequence[Mapping[str, float | None]]) -> dict[str, list[float | None]]:
    """Per-sample value maps as one column per metric, aligned with the rows: every metric any row gives (in
    first-seen order), None in a row that has no value for it (the key absent or null)."""
    names: dict[str, None] = {}
    for row in rows:
        names.update(dict.fromkeys(row))
    return {m: [finite(row.get(m)) for row in rows] for m in names}


def judge_names(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """Judge names in first-seen order across the records."""
    names: dict[str, None] = {}
    for r in records:
        for j in r.get("judgements", []):
            names.setdefault(j["judge"], None)
    return list(names)
