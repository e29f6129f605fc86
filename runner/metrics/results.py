"""From sample records (the JSONL lines) to a task's results block: counts, invalid and error ids, metrics."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from runner.metrics.core import stderr
from runner.types import TaskResult

Records = Sequence[Mapping[str, Any]]


def task_result(records: Records, metrics: Callable[[Records], Mapping[str, float | None]],
                zero: Mapping[str, Any],
                per_sample: Callable[[Mapping[str, Any]], dict[str, float]] | None = None) -> TaskResult:
    """Count and score a task's records.

    `n` counts every sample of the task. Samples whose model call failed (status `error`) have no reply
    to score: they are left out of the metrics, counted in `n_errors`/`error_ids`, and re-asked when the
    run is resumed. Samples with an invalid judgement (status `invalid`) stay in the metrics, scored as a
    fail by that judge, and are listed in `invalid_ids`. With no scored sample every metric named in
    `zero` is None (null): a figure over nothing is absent, never 0.

    `per_sample` maps a record to its per-sample values of the metrics that are means over samples;
    their standard errors go into `stderr` (the report turns them into 95 % intervals).
    """
    scored = [r for r in records if r.get("status") != "error"]
    errors = [r["id"] for r in records if r.get("status") == "error"]
    invalid = [r["id"] for r in scored if r.get("status") == "invalid"]
    values: dict[str, Any] = dict(metrics(scored)) if scored else dict.fromkeys(zero)
    errs: dict[str, float] = {}
    if per_sample is not None and scored:
        rows = [per_sample(r) for r in scored]
        errs = {m: stderr([row[m] for row in rows]) for m in rows[0]}
    return TaskResult(n=len(records), n_invalid=len(invalid), invalid_ids=invalid, metrics=values,
                      n_errors=len(errors), error_ids=errors, stderr=errs)


def judge_names(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """Judge names in first-seen order across the records."""
    names: dict[str, None] = {}
    for r in records:
        for j in r.get("judgements", []):
            names.setdefault(j["judge"], None)
    return list(names)
