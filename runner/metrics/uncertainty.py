"""Every metric with its interval, every panel with its reliability: a task's results block completed.

The sample is the unit (runner/metrics/samples.py `per_sample` says what a sample's value is, its epochs
reduced by the task's reducer). A metric that is the mean of the samples' own values gets Wilson's interval when
those values are 0/1, else the expanded percentile bootstrap of their mean; any other metric (F1, a median,
corpus BLEU, win rates, ...) the expanded percentile bootstrap that recomputes it with the task's own
aggregation on resampled samples (all their epochs together). All bootstraps are seeded, so the same records
give the same intervals (`runner.rescore` reproduces them). Where bench/bench_coverage.py found that no method
holds 94 % coverage at the task's n, `reliable` says false beside the interval (docs/statistics.md).
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from runner.errors import RunnerError
from runner.metrics.core import defined, stderr
from runner.metrics.results import judge_names
from runner.metrics.samples import Samples, per_sample
from runner.types import TaskResult

if TYPE_CHECKING:
    import numpy as np

    from runner.tasks.base import BaseTask

# numpy (and the bootstraps and kappas built on it) is imported only where a task needs a bootstrap or has
# two judges: a run whose every interval is Wilson's (accuracy over 0/1 scores) never pays its import.

Record = Mapping[str, Any]
log = logging.getLogger("runner")

Z95 = 1.959963984540054
"""scipy.special.ndtri(0.975): the two-sided 95 % normal quantile of scipy's Wilson interval."""

RELIABLE_FROM = {"wilson": 5, "mean": 100, "other": 10, "kappa": 30}
"""The smallest n (samples) at which each kind of 95 % interval covered at least 94 % of the time in
bench/bench_coverage.py, over n = 5, 10, 30, 100 (docs/statistics.md); below it, `reliable` is false."""


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


def is_count(metric: str) -> bool:
    """A metric that counts (VAKRA's `num_samples`, `num_correct`): it has no interval, since resampling the
    samples it counts says nothing about it (an interval [10, 10] on `num_samples` would claim certainty)."""
    return metric.startswith(("num_", "n_"))


BINARY_REDUCERS = ("mode", "max", "min", "pass_at_k")
"""Reducers that keep a sample's 0/1 score 0/1 over its epochs (a mean, a median of an even count or a pass@j
estimate make fractions)."""


def intervals(task: BaseTask, samples: Samples, *, n_boot: int, seed: int,
              epochs: int = 1) -> tuple[dict[str, list[float] | None], dict[str, bool]]:
    """A 95 % interval for every metric (None where the metric is None), and whether each is reliable.

    Wilson's interval is for a design whose per-sample values are 0/1 (one epoch, or a reducer that keeps them
    so): chosen by the design, never by the draw, so a data set whose epochs happened to agree gets the same
    method and `reliable` as the rest of its population (issue 44, point 5)."""
    metrics = samples.metrics
    binary_design = epochs <= 1 or samples.reducer in BINARY_REDUCERS
    out: dict[str, list[float] | None] = {m: None for m in metrics}
    reliable: dict[str, bool] = {}
    means: dict[str, list[float]] = {}
    others: list[str] = []
    n = samples.n
    for metric, value in metrics.items():
        if value is None or not n or is_count(metric):
            continue
        values = samples.values.get(metric)
        if values is None:
            others.append(metric)
            reliable[metric] = n >= RELIABLE_FROM["other"]
            continue
        # Over the samples that have a value (a sample without one is no 0 and no 1: it is left out).
        given = defined(values)
        if not given:
            continue
        if binary_design and all(v in (0.0, 1.0) for v in given):
            out[metric] = _as_list(wilson95(int(sum(given)), len(given)))
            reliable[metric] = len(given) >= RELIABLE_FROM["wilson"]
        else:
            means[metric] = [math.nan if v is None else v for v in values]
            reliable[metric] = len(given) >= RELIABLE_FROM["mean"]
    if means or others:
        import numpy as np

        from runner.metrics.intervals import bootstrap_means, bootstrap_statistic
    if means:
        matrix = np.array([means[m] for m in means], dtype=np.float64).T
        for metric, interval in zip(means, bootstrap_means(matrix, None, n_boot, seed, expand=True), strict=True):
            out[metric] = _as_list(interval)
    if others:
        records, clusters = samples.stat_records()

        def statistic(indices: np.ndarray[Any, Any]) -> dict[str, float | None]:
            # Every draw counts, a sample drawn k times k times: the records are each sample's epochs (pooled,
            # clusters resampled whole) or each sample's reduced record (another reducer), never regrouped by id
            # (which made a resample of 8 samples hold 5.3 distinct on average, and the interval too narrow).
            picked = [records[int(i)] for i in indices]
            result = task.aggregate(picked).metrics
            return {m: result.get(m) for m in others}

        for metric, interval in bootstrap_statistic(len(records), statistic, clusters, n_boot, seed,
                                                    expand=True).items():
            out[metric] = _as_list(interval)
    return out, {m: r for m, r in reliable.items() if out.get(m) is not None}


def panel_stats(scored: Sequence[Record], *, n_boot: int, seed: int,
                samples: Samples | None = None) -> dict[str, Any] | None:
    """Kappas and invalid rates of a task judged by two or more judges (None otherwise); every judged reply is
    an item, the sample (all its epochs) the unit resampled and counted in `n`."""
    names = judge_names(scored)
    if len(names) < 2:
        return None
    from runner.metrics.agreement import judge_stats

    items = [r for g in samples.groups for r in g] if samples is not None else list(scored)
    clusters = [k for k, g in zip(samples.keys, samples.groups, strict=True) for _ in g] if samples else None
    verdicts: dict[str, list[Hashable | None]] = {n: [] for n in names}
    for record in items:
        given = {j.get("judge"): j for j in record.get("judgements") or []}
        for name in names:
            j = given.get(name)
            ok = j is not None and j.get("status") == "ok" and j.get("verdict") is not None
            verdicts[name].append(str(j["verdict"]) if ok and j is not None else None)
    block = judge_stats(verdicts, n_boot=n_boot, seed=seed, clusters=clusters, expand=True)
    block["reliable"] = block["n"] >= RELIABLE_FROM["kappa"]
    return block


def scored_result(task: BaseTask, records: Sequence[Record], *, n_boot: int, seed: int,
                  epochs: int = 1) -> TaskResult:
    """The task's results block (`task.aggregate`, then `with_uncertainty`), or, when computing it fails, a block
    with the counts the records give and `failed` naming why: one task that cannot be aggregated must not lose
    the other tasks' results (the run writes what it can and exits 1). A RunnerError (bad config) still stops."""
    # Counted from the records alone, so a task whose metrics fail still says how many replies were cut.
    cut = sum(1 for r in records if r.get("status") != "error" and r.get("finish_reason") == "length")
    try:
        result = with_uncertainty(task, records, task.aggregate(records), n_boot=n_boot, seed=seed, epochs=epochs)
        return replace(result, n_truncated=cut)
    except RunnerError:
        raise
    except Exception as exc:  # noqa: BLE001 - named in results.json and the closing line, never a lost run
        why = f"{type(exc).__name__}: {exc}"
        log.error("task %s: its metrics could not be computed (%s); its records are kept in samples/%s.jsonl, "
                  "the other tasks' results are written", task.name, why, task.name, exc_info=_debug())
        scored = [r for r in records if r.get("status") != "error"]
        return TaskResult(n=len(records), n_invalid=sum(r.get("status") == "invalid" for r in scored),
                          invalid_ids=[r.get("id") for r in scored if r.get("status") == "invalid"], metrics={},
                          n_errors=len(records) - len(scored),
                          error_ids=[r.get("id") for r in records if r.get("status") == "error"], epochs=epochs,
                          n_truncated=cut, failed=why)


def _debug() -> bool:
    return bool(os.environ.get("RUNNER_DEBUG"))  # not HYDRA_FULL_ERROR: runner/__main__.py sets that itself


def with_uncertainty(task: BaseTask, records: Sequence[Record], result: TaskResult, *, n_boot: int,
                     seed: int, epochs: int = 1) -> TaskResult:
    """`result` with its epochs reduced (the task's `reducer`), `ci` and `reliable` for every metric, standard
    errors over samples and, where two or more judges graded, `judge_stats`; with several epochs, each metric's
    value on each epoch's records alone and its spread across epochs."""
    scored = [r for r in records if r.get("status") != "error"]
    samples = per_sample(task, scored, result.metrics)
    ci, reliable = intervals(task, samples, n_boot=n_boot, seed=seed, epochs=epochs)
    errs = {m: stderr(defined(samples.values[m])) if m in samples.values else e for m, e in result.stderr.items()}
    missing = _missing_per_sample(task, samples, result.n_missing)
    reducer = getattr(task, "reducer", None) or ("mean" if epochs > 1 else None)
    out = replace(result, metrics=samples.metrics, ci=ci, reliable=reliable, stderr=errs, n_missing=missing,
                  epochs=epochs, reducer=reducer,
                  judge_stats=panel_stats(scored, n_boot=n_boot, seed=seed, samples=samples))
    if epochs <= 1:
        return out
    per_epoch = [task.aggregate([r for r in records if int(r.get("epoch") or 0) == e]).metrics for e in range(epochs)]
    by_epoch = {m: [p.get(m) for p in per_epoch] for m in out.metrics}
    return replace(out, by_epoch=by_epoch, epoch_sd={m: _sd(v) for m, v in by_epoch.items()})


def _missing_per_sample(task: BaseTask, samples: Samples, per_record: Mapping[str, int]) -> dict[str, int]:
    """`n_missing` counted per sample: a sample is missing a value when none of its epochs has one (also for a
    metric with no value anywhere, which is no mean over samples and so not in `samples.values`)."""
    out = {m: len(v) - len(defined(v)) for m, v in samples.values.items() if len(defined(v)) < len(v)}
    for metric in per_record:
        if metric not in samples.values:
            count = sum(all(task.sample_scores(r).get(metric) is None for r in g) for g in samples.groups)
            if count:
                out[metric] = count
    return out


def _sd(values: Sequence[float | None]) -> float | None:
    """The sample standard deviation of the values (None if any is missing or there are fewer than two)."""
    if len(values) < 2 or any(v is None for v in values):
        return None
    xs = [float(v) for v in values if v is not None]
    mean = sum(xs) / len(xs)
    return math.sqrt(sum((x - mean) ** 2 for x in xs) / (len(xs) - 1))
