"""Per-sample values: the one place that decides what "a sample's value of a metric" is.

With `epochs>1` a samples file holds one record per sample and epoch, and those records are not independent
draws: every statistic (intervals, standard errors, judge kappas, a sweep's paired differences, audits) must
treat the sample as the unit. A task's `reducer` says how a sample's epochs combine before its metrics:

- `mean` (the default): a sample's value of a metric that is a mean of per-record values is its mean over the
  sample's epochs; a metric that is no such mean (F1, a median, a win rate) is computed over every epoch's
  records and resampled by sample;
- `mode`: the majority of the epochs' extracted answers (ties to the answer reached first; an epoch that read
  no answer does not vote); the sample then counts as its first epoch giving that answer, as if the mode
  answer alone had been scored;
- `max`, `min`, `median`: of each per-record score over the epochs;
- `pass_at_k`: 1 when any epoch passed (score 1), i.e. pass@k with k = the sample's epochs; `pass_at_<j>`
  (j a whole number) is the unbiased pass@j estimate 1 - C(n-c, j)/C(n, j) over n epochs of which c passed.

With one record per sample every reducer is the identity, so one-epoch numbers never change.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from runner.errors import ConfigError
from runner.metrics.core import defined_mean
from runner.metrics.results import per_sample_columns
from runner.run.store import record_key

if TYPE_CHECKING:
    from runner.tasks.base import BaseTask

Record = Mapping[str, Any]

REDUCERS = ("mean", "mode", "max", "min", "median", "pass_at_k")
"""What a task's `reducer:` may name (`pass_at_<j>`, j a whole number, too)."""
VALUE_REDUCERS = ("max", "min", "median")
_PASS_AT = re.compile(r"pass_at_(k|[1-9][0-9]*)")


def check_reducer(value: Any, where: str) -> str | None:
    """The reducer named in YAML, checked (None: not set); a ConfigError naming the choices otherwise."""
    if value is None:
        return None
    name = str(value).strip()
    if name in REDUCERS or _PASS_AT.fullmatch(name):
        return name
    raise ConfigError(f"{where}: reducer '{value}' is not one of {', '.join(REDUCERS)} (or pass_at_<j>, j a "
                      "whole number); it says how a sample's epochs combine before its metrics")


def sample_key(record: Record) -> str:
    """The sample a record belongs to, whatever its epoch (ids compare as text, as the samples files key them)."""
    return record_key(record["id"])


def _epoch(record: Record) -> int:
    epoch = record.get("epoch") or 0
    return epoch if isinstance(epoch, int) and not isinstance(epoch, bool) else 0


def group(records: Sequence[Record]) -> tuple[list[str], list[list[Record]]]:
    """(sample keys in order of first appearance, each sample's records in epoch order)."""
    groups: dict[str, list[Record]] = {}
    for record in records:
        groups.setdefault(sample_key(record), []).append(record)
    return list(groups), [sorted(g, key=_epoch) for g in groups.values()]


def _answer_key(answer: Any) -> str | None:
    return None if answer is None else json.dumps(answer, sort_keys=True, default=str)


def mode_index(answers: Sequence[Any]) -> int | None:
    """The place of the first answer equal to the most common one (ties: the one reached first); answers that
    are None do not vote; None when none is given."""
    counts: dict[str, int] = {}
    first: dict[str, int] = {}
    for i, answer in enumerate(answers):
        key = _answer_key(answer)
        if key is not None:
            counts[key] = counts.get(key, 0) + 1
            first.setdefault(key, i)
    if not counts:
        return None
    best = max(counts.values())
    return min(first[k] for k, c in counts.items() if c == best)


def mode_answer(answers: Sequence[Any]) -> Any:
    """The majority answer (`mode_index`), None when no answer was given."""
    at = mode_index(answers)
    return None if at is None else answers[at]


def pass_at(values: Sequence[float], k: int | None) -> float:
    """pass@k over a sample's epoch values (a value of 1 passes): 1 - C(n-c, k)/C(n, k); k None or above n: n."""
    n = len(values)
    c = sum(1 for v in values if v >= 1.0)
    k = n if k is None or k > n else k
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def value_reducer(reducer: str) -> Callable[[Sequence[float]], float]:
    """How one score's epoch values combine into the sample's value (every reducer but `mode`)."""
    if reducer == "mean":
        return lambda v: math.fsum(v) / len(v)
    if reducer in VALUE_REDUCERS:
        return {"max": max, "min": min, "median": statistics.median}[reducer]  # type: ignore[return-value]
    found = _PASS_AT.fullmatch(reducer)
    if found is None:
        raise ValueError(f"no value reducer '{reducer}'")
    k = None if found.group(1) == "k" else int(found.group(1))
    return lambda v: pass_at(v, k)


def _numeric(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def reduce_scores(group_records: Sequence[Record], reducer: str) -> dict[str, Any]:
    """The sample's record with each numeric score reduced over its epochs (the rest: its first epoch's)."""
    combine = value_reducer(reducer)
    first = dict(group_records[0])
    scores = dict(_scores(first))
    # Every score any epoch gave: an epoch without one (or with a null) is left out of its reduction.
    names = dict.fromkeys(name for r in group_records for name in _scores(r))
    for name in names:
        values = [float(_scores(r)[name]) for r in group_records if _numeric(_scores(r).get(name))]
        if values:
            scores[name] = combine(values)
    first["scores"] = scores
    return first


def _scores(record: Record) -> Mapping[str, Any]:
    scores = record.get("scores")
    return scores if isinstance(scores, Mapping) else {}


@dataclass
class Samples:
    """A task's scored records as samples: what every statistic of the task resamples and pairs."""

    reducer: str
    """The reducer in force (`mean` where the task sets none)."""
    keys: list[str]
    """Each sample's key (`sample_key`), in order of first appearance."""
    groups: list[list[Record]]
    """Each sample's scored records, in epoch order."""
    records: list[Record]
    """One record per sample: its representative (`mode`), its first with the scores reduced (the others)."""
    values: dict[str, list[float | None]]
    """Per metric that is a mean of per-record values: each sample's value, reduced over its epochs (None: the
    sample has no value of it, in none of its epochs; left out of the mean, its interval and its pairs)."""
    metrics: dict[str, float | None]
    """The task's metrics with its epochs reduced (what results.json reports)."""
    pooled: bool
    """Metrics that are no mean are computed over every epoch's records (`mean`), resampled by sample."""

    @property
    def n(self) -> int:
        """The number of samples (the unit of every interval and test)."""
        return len(self.keys)

    @property
    def single(self) -> bool:
        """One record per sample: nothing to reduce."""
        return all(len(g) == 1 for g in self.groups)

    def stat_records(self) -> tuple[list[Record], list[str] | None]:
        """The records a metric that is no mean is recomputed on in a bootstrap, and their clusters (None:
        each record is its own sample)."""
        if self.pooled and not self.single:
            return [r for g in self.groups for r in g], [k for k, g in zip(self.keys, self.groups, strict=True)
                                                        for _ in g]
        return list(self.records), None


def _mean_metrics(task: BaseTask, records: Sequence[Record], metrics: Mapping[str, float | None]) -> list[str]:
    """The metrics that are exactly the mean of the records' own values (`BaseTask.sample_scores`), over the
    records that have one (a record without a value is left out of that mean)."""
    columns = per_sample_columns([task.sample_scores(r) for r in records])
    out = []
    for metric, value in metrics.items():
        mean = defined_mean(columns.get(metric, ()))
        if value is not None and mean is not None and math.isclose(mean, float(value), abs_tol=1e-9):
            out.append(metric)
    return out


def task_reducer(task: BaseTask) -> str:
    """The task's reducer (`mean` where it sets none)."""
    return str(getattr(task, "reducer", None) or "mean")


def per_sample(task: BaseTask, records: Sequence[Record], metrics: Mapping[str, float | None] | None = None,
               reducer: str | None = None) -> Samples:
    """The task's scored records (errors are left out here) as samples, reduced by the task's reducer.

    `metrics` is `task.aggregate(records).metrics` when the caller has it (computed otherwise). Every consumer
    of per-sample values (results.json's metrics, intervals and standard errors, judge statistics, a sweep's
    pairs, audits) goes through here, so they agree on what a sample's value is.
    """
    scored = [r for r in records if r.get("status") != "error"]
    reducer = reducer or task_reducer(task)
    keys, groups = group(scored)
    if metrics is None:
        metrics = task.aggregate(scored).metrics if scored else {}
    mean_metrics = _mean_metrics(task, scored, metrics)
    single = all(len(g) == 1 for g in groups)
    if single:
        reduced: list[Record] = [g[0] for g in groups]
    elif reducer == "mode":
        reduced = []
        for g in groups:
            at = mode_index([r.get("answer") for r in g])
            reduced.append(g[0 if at is None else at])
    else:
        reduced = [reduce_scores(g, reducer) for g in groups]
    values: dict[str, list[float | None]] = {m: [] for m in mean_metrics}
    combine = None if single or reducer == "mode" else value_reducer(reducer)
    for g, rep in zip(groups, reduced, strict=True):
        if combine is None:
            own = per_sample_columns([task.sample_scores(rep)])
            for m in mean_metrics:
                values[m].append(own.get(m, [None])[0])
        else:
            owns = per_sample_columns([task.sample_scores(r) for r in g])
            for m in mean_metrics:
                defined = [v for v in owns.get(m, ()) if v is not None]
                values[m].append(float(combine(defined)) if defined else None)
    pooled = reducer == "mean"
    out: dict[str, float | None] = dict(metrics)
    if not single:
        if not pooled:  # every metric of the reduced records (the task's own aggregation), then the means
            out = {**dict.fromkeys(metrics), **task.aggregate(reduced).metrics}
            out = {m: out.get(m) for m in metrics}
        for m, vals in values.items():
            out[m] = defined_mean(vals)
    return Samples(reducer=reducer, keys=keys, groups=groups, records=reduced, values=values, metrics=out,
                   pooled=pooled)
