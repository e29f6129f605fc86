"""Every metric with its interval, every panel with its reliability: a task's results block completed.

A metric that is the mean of the samples' own values (`BaseTask.sample_scores`) gets Wilson's interval when
those values are 0/1, else a bootstrap of the mean; any other metric (F1, corpus BLEU, win rates, ...) a
bootstrap that recomputes it with the task's own aggregation on resampled samples. All bootstraps are
seeded, so the same records give the same intervals (`runner.rescore` reproduces them).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from runner.metrics.core import stderr
from runner.metrics.results import judge_names
from runner.types import TaskResult

if TYPE_CHECKING:
    import numpy as np

    from runner.tasks.base import BaseTask

# numpy (and the bootstraps and kappas built on it) is imported only where a task needs a bootstrap or has
# two judges: a run whose every interval is Wilson's (accuracy over 0/1 scores) never pays its import.

Record = Mapping[str, Any]

Z95 = 1.959963984540054
"""scipy.special.ndtri(0.975): the two-sided 95 % normal quantile of scipy's Wilson interval."""


def wilson95(successes: int, n: int) -> tuple[float, float]:
    """`runner.metrics.intervals.wilson(successes, n)` (95 %), in scipy's own arithmetic (Newcombe 1998, as
    scipy.stats.binomtest(...).proportion_ci(method="wilson") computes it), so the same numbers to the last
    bit without importing scipy.stats for one formula: ~75 MB of a run's peak memory and ~0.5 s."""
    p = successes / n
    denom = 2 * (n + Z95**2)
    center = (2 * n * p + Z95**2) / denom
    delta = Z95 / denom * math.sqrt(4 * n * p * (1 - p) + Z95**2)
    return (0.0 if successes == 0 else center - delta), (1.0 if successes == n else center + delta)


def _as_list(interval: tuple[float, float] | None) -> list[float] | None:
    return None if interval is None else [float(interval[0]), float(interval[1])]


def _mean_values(own: Sequence[Mapping[str, float]], metric: str, value: float) -> list[float] | None:
    """The samples' own values of `metric` when it is exactly their mean, else None."""
    values: list[float] = []
    for scores in own:
        v = scores.get(metric)
        if v is None or not math.isfinite(v):
            return None
        values.append(v)
    return values if values and math.isclose(sum(values) / len(values), value, abs_tol=1e-9) else None


def intervals(task: BaseTask, scored: Sequence[Record], metrics: Mapping[str, float | None], *, n_boot: int,
              seed: int, clusters: Sequence[Hashable] | None = None) -> dict[str, list[float] | None]:
    """A 95 % interval for every metric (None where the metric is None)."""
    out: dict[str, list[float] | None] = {m: None for m in metrics}
    means: dict[str, list[float]] = {}
    others: list[str] = []
    own = [task.sample_scores(record) for record in scored]
    for metric, value in metrics.items():
        if value is None or not scored:
            continue
        values = _mean_values(own, metric, float(value))
        if values is None:
            others.append(metric)
        elif clusters is None and all(v in (0.0, 1.0) for v in values):  # 0/1 scores (a NaN is neither)
            out[metric] = _as_list(wilson95(int(sum(values)), len(values)))
        else:
            means[metric] = values
    if means or others:
        import numpy as np

        from runner.metrics.intervals import bootstrap_means, bootstrap_statistic
    if means:
        matrix = np.array([means[m] for m in means], dtype=np.float64).T
        for metric, interval in zip(means, bootstrap_means(matrix, clusters, n_boot, seed), strict=True):
            out[metric] = _as_list(interval)
    if others:
        def statistic(indices: np.ndarray[Any, Any]) -> dict[str, float | None]:
            result = task.aggregate([scored[int(i)] for i in indices]).metrics
            return {m: result.get(m) for m in others}

        for metric, interval in bootstrap_statistic(len(scored), statistic, clusters, n_boot, seed).items():
            out[metric] = _as_list(interval)
    return out


def panel_stats(scored: Sequence[Record], *, n_boot: int, seed: int) -> dict[str, Any] | None:
    """Kappas and invalid rates of a task judged by two or more judges (None otherwise)."""
    names = judge_names(scored)
    if len(names) < 2:
        return None
    from runner.metrics.agreement import judge_stats

    verdicts: dict[str, list[Hashable | None]] = {n: [] for n in names}
    for record in scored:
        given = {j.get("judge"): j for j in record.get("judgements") or []}
        for name in names:
            j = given.get(name)
            ok = j is not None and j.get("status") == "ok" and j.get("verdict") is not None
            verdicts[name].append(str(j["verdict"]) if ok and j is not None else None)
    return judge_stats(verdicts, n_boot=n_boot, seed=seed)


def with_uncertainty(task: BaseTask, records: Sequence[Record], result: TaskResult, *, n_boot: int,
                     seed: int, epochs: int = 1) -> TaskResult:
    """`result` with `ci` for every metric and, where two or more judges graded, `judge_stats`; with
    several epochs, the intervals resample samples (all their epochs together: they are not independent)
    and each metric's value on each epoch and its spread across epochs."""
    scored = [r for r in records if r.get("status") != "error"]
    clusters = [str(r["id"]) for r in scored] if epochs > 1 else None
    result = replace(result, ci=intervals(task, scored, result.metrics, n_boot=n_boot, seed=seed, clusters=clusters),
                     judge_stats=panel_stats(scored, n_boot=n_boot, seed=seed), epochs=epochs)
    if epochs <= 1:
        return result
    per_epoch = [task.aggregate([r for r in records if int(r.get("epoch") or 0) == e]).metrics for e in range(epochs)]
    by_epoch = {m: [p.get(m) for p in per_epoch] for m in result.metrics}
    return replace(result, by_epoch=by_epoch, epoch_sd={m: _sd(v) for m, v in by_epoch.items()},
                   stderr=_clustered_stderr(task, scored, result.stderr))


def _clustered_stderr(task: BaseTask, scored: Sequence[Record], stderrs: Mapping[str, float]) -> dict[str, float]:
    """Standard errors over the samples' means across their epochs (records of one sample are not
    independent draws): the stderr of the per-sample means."""
    sums: dict[str, dict[str, list[float]]] = {}
    for record in scored:
        for metric, value in task.sample_scores(record).items():
            sums.setdefault(metric, {}).setdefault(str(record["id"]), []).append(float(value))
    out = {}
    for metric in stderrs:
        groups = sums.get(metric)
        if groups:
            out[metric] = stderr([sum(v) / len(v) for v in groups.values()])
    return out


def _sd(values: Sequence[float | None]) -> float | None:
    """The sample standard deviation of the values (None if any is missing or there are fewer than two)."""
    if len(values) < 2 or any(v is None for v in values):
        return None
    xs = [float(v) for v in values if v is not None]
    mean = sum(xs) / len(xs)
    return math.sqrt(sum((x - mean) ** 2 for x in xs) / (len(xs) - 1))
