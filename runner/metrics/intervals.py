"""Confidence intervals for the metrics a task reports (CONTRACT.md, "Statistics").

Pure functions on numpy arrays: Wilson for a proportion of independent 0/1 scores, else a seeded percentile
bootstrap, resampling whole clusters when samples are not independent (several samples of one item, for
example). Every bootstrap here draws, from `numpy.random.default_rng(seed)`, one (n_boot x n_units) matrix of
resampled unit indices (drawn in blocks of rows to bound memory; the numbers are those of a single draw), so
a fixed seed gives the same interval on every run (for a given numpy version: Generator streams may change
between numpy releases).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
Interval = tuple[float, float]

# Resampled index matrices are drawn this many elements at a time (8 MB of int64).
_BLOCK_ELEMENTS = 1 << 20
# Up to this many columns a gather-and-sum beats building the count matrix and multiplying.
_GATHER_MAX_COLUMNS = 4


def _check_level(level: float) -> None:
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")


def _check_n_boot(n_boot: int) -> None:
    if n_boot < 1:
        raise ValueError(f"n_boot must be at least 1, got {n_boot}")


def is_binary(values: npt.ArrayLike) -> bool:
    """True when `values` is non-empty and every value is 0 or 1 (booleans count; NaN does not)."""
    array = np.asarray(values, dtype=np.float64)
    return bool(array.size) and bool(np.all((array == 0.0) | (array == 1.0)))


def wilson(successes: int, n: int, level: float = 0.95) -> Interval | None:
    """Wilson score interval for `successes` out of `n` independent trials; None when n == 0."""
    _check_level(level)
    if n < 0 or not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n, got successes={successes}, n={n}")
    if n == 0:
        return None
    from scipy import stats  # imported on use: scipy.stats takes ~0.5 s to import

    ci = stats.binomtest(int(successes), int(n)).proportion_ci(confidence_level=level, method="wilson")
    return float(ci.low), float(ci.high)


def cluster_ids(clusters: Sequence[Hashable] | None, n: int) -> tuple[IntArray, int]:
    """Map each of the `n` samples to a cluster number 0..k-1 (in order of first appearance), and k.

    With no `clusters` every sample is its own cluster.
    """
    if clusters is None:
        return np.arange(n, dtype=np.int64), n
    if len(clusters) != n:
        raise ValueError(f"clusters has {len(clusters)} entries for {n} samples")
    numbers: dict[Hashable, int] = {}
    ids = np.fromiter((numbers.setdefault(c, len(numbers)) for c in clusters), dtype=np.int64, count=n)
    return ids, len(numbers)


def resample_blocks(n_units: int, n_boot: int, seed: int) -> Iterator[IntArray]:
    """Row blocks of the (n_boot x n_units) matrix of unit indices drawn with replacement.

    The blocks, stacked, equal `default_rng(seed).integers(0, n_units, (n_boot, n_units))`.
    """
    _check_n_boot(n_boot)
    rng = np.random.default_rng(seed)
    rows = max(1, _BLOCK_ELEMENTS // max(n_units, 1))
    for start in range(0, n_boot, rows):
        yield rng.integers(0, n_units, size=(min(rows, n_boot - start), n_units), dtype=np.int64)


def resampled_sums(units: FloatArray, n_boot: int, seed: int) -> FloatArray:
    """Column sums of `units` (n_units x c) over each bootstrap resample of its rows: (n_boot x c).

    Every statistic here that is linear in the resample counts (means, proportions, kappa's margins) is
    computed from these sums, so one seeded draw serves all of a block's columns.
    """
    n_units, n_cols = units.shape
    out = np.empty((n_boot, n_cols), dtype=np.float64)
    if n_units == 0:
        out.fill(0.0)
        return out
    columns = np.ascontiguousarray(units.T)
    row = 0
    for block in resample_blocks(n_units, n_boot, seed):
        rows = block.shape[0]
        if n_cols <= _GATHER_MAX_COLUMNS:
            for j in range(n_cols):
                out[row : row + rows, j] = columns[j][block].sum(axis=1)
        else:
            flat = block + (np.arange(rows, dtype=np.int64) * n_units)[:, None]
            counts = np.bincount(flat.ravel(), minlength=rows * n_units).reshape(rows, n_units)
            out[row : row + rows] = counts.astype(np.float64) @ units
        row += rows
    return out


def expanded_level(n_units: int, level: float = 0.95) -> float | None:
    """The percentile level that gives a bootstrap of `n_units` units the coverage of `level`: Hesterberg's
    expanded percentile interval (2015, "What teachers should know about the bootstrap", section 5.2).

    A percentile bootstrap of a mean is too narrow at small n: it uses the plug-in spread (divided by n, not
    n - 1) and normal quantiles, not Student's t. Its tails at (1 - level') / 2 with
    (1 - level') / 2 = Phi(-sqrt(n / (n - 1)) * t_{(1 - level) / 2, n - 1}) correct both, and keep what the
    bootstrap does well (a bounded, skewed statistic keeps its shape). None below two units (no spread).
    """
    _check_level(level)
    if n_units < 2:
        return None
    from scipy import special

    # t quantile via the incomplete beta inverse (scipy.special, cheaper to import than scipy.stats).
    df, tail = n_units - 1, (1.0 - level) / 2.0
    t = math.sqrt(df * (1.0 / special.betaincinv(df / 2.0, 0.5, 2.0 * tail) - 1.0))
    return 1.0 - 2.0 * float(special.ndtr(-math.sqrt(n_units / df) * t))


def percentile_intervals(samples: FloatArray, level: float | Sequence[float | None] = 0.95) -> list[Interval | None]:
    """Percentile interval of each column of `samples` (n_boot x m; NaN = undefined in that resample), at
    `level` (one for every column, or one per column: None gives that column no interval).

    None for a column undefined (NaN) in more than half of the resamples.
    """
    levels: list[float | None] = [level] * samples.shape[1] if isinstance(level, (int, float)) else list(level)
    result: list[Interval | None] = []
    for column, at in zip(samples.T, levels, strict=True):
        defined = column[~np.isnan(column)]
        if at is None or defined.size == 0 or 2 * defined.size < column.size:
            result.append(None)
            continue
        if not 0.0 < at <= 1.0:  # 1: the whole range of the resamples (an expanded level at n = 2)
            raise ValueError(f"level must be in (0, 1], got {at}")
        alpha = (1.0 - at) / 2.0
        low, high = np.percentile(defined, [100.0 * alpha, 100.0 * (1.0 - alpha)])
        result.append((float(low), float(high)))
    return result


def _cluster_sums(data: FloatArray, ids: IntArray, n_clusters: int, *, clustered: bool) -> FloatArray:
    """Per-cluster column sums of `data` (the data itself when every sample is its own cluster)."""
    if not clustered:
        return data
    sums = np.zeros((n_clusters, data.shape[1]))
    np.add.at(sums, ids, data)
    return sums


def bootstrap_means(
    values: npt.ArrayLike,
    clusters: Sequence[Hashable] | None,
    n_boot: int,
    seed: int,
    level: float = 0.95,
    *,
    expand: bool = False,
) -> list[Interval | None]:
    """Percentile bootstrap intervals of the column means of `values` (n_samples x n_metrics, or 1-D);
    `expand`: Hesterberg's expanded percentile interval (`expanded_level`, n = the units resampled: samples, or
    clusters), None below two units.

    NaN marks a sample without that metric: each column's mean is over its non-NaN entries, in the data and
    in every resample. With `clusters` (one key per sample) whole clusters are resampled and the statistic
    is the resampled sample mean (cluster means weighted by cluster sizes). None for a column with no value,
    or undefined in more than half of the resamples (every drawn cluster NaN); [None] * n_metrics when empty.
    """
    _check_level(level)
    _check_n_boot(n_boot)
    data = np.asarray(values, dtype=np.float64)
    if data.ndim == 1:
        data = data[:, None]
    if data.ndim != 2:
        raise ValueError(f"values must be 1-D or 2-D, got shape {data.shape}")
    n_samples, n_metrics = data.shape
    if n_samples == 0:
        return [None] * n_metrics
    ids, n_clusters = cluster_ids(clusters, n_samples)
    present = ~np.isnan(data)
    sums = _cluster_sums(np.where(present, data, 0.0), ids, n_clusters, clustered=clusters is not None)
    any_missing = not bool(present.all())
    if any_missing:
        counts = _cluster_sums(present.astype(np.float64), ids, n_clusters, clustered=clusters is not None)
        units = np.hstack([sums, counts])
    elif clusters is not None:
        units = np.hstack([sums, np.bincount(ids, minlength=n_clusters).astype(np.float64)[:, None]])
    else:
        units = sums
    boot = resampled_sums(units, n_boot, seed)
    boot_sums = boot[:, :n_metrics]
    if any_missing:
        boot_counts = boot[:, n_metrics:]
    elif clusters is not None:
        boot_counts = np.repeat(boot[:, n_metrics:], n_metrics, axis=1)
    else:
        boot_counts = np.full_like(boot_sums, float(n_samples))
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(boot_counts > 0, boot_sums / boot_counts, np.nan)
    if expand:
        units_with = (_cluster_sums(present.astype(np.float64), ids, n_clusters, clustered=clusters is not None)
                      > 0).sum(axis=0)
        intervals = percentile_intervals(means, [expanded_level(int(k), level) for k in units_with])
    else:
        intervals = percentile_intervals(means, level)
    return [None if not present[:, j].any() else intervals[j] for j in range(n_metrics)]


def _defined(value: Any) -> float:
    """A statistic's value as a float, NaN for None/NaN."""
    if value is None:
        return float("nan")
    return float(value)


def bootstrap_statistic(
    n_items: int,
    statistic: Callable[[IntArray], dict[str, float | None]],
    clusters: Sequence[Hashable] | None,
    n_boot: int,
    seed: int,
    level: float = 0.95,
    *,
    expand: bool = False,
) -> dict[str, Interval | None]:
    """Percentile bootstrap intervals of any metric computed from an array of item indices (`expand`: the
    expanded percentile interval, n = the units resampled, items or clusters; None below two).

    `statistic(indices)` returns {metric: value or None} for the items `indices` (with repeats) of the
    `n_items` items; it is called once on `arange(n_items)` for the point estimate and once per resample.
    With `clusters` whole clusters are resampled (their items concatenated). An interval is None where the
    point is None or the statistic is None/NaN (or absent) in more than half of the resamples. With no items
    the statistic is called once on an empty array, only for its keys, and every interval is None.
    """
    _check_level(level)
    _check_n_boot(n_boot)
    point = statistic(np.arange(n_items, dtype=np.int64))
    keys = list(point)
    if n_items == 0:
        return dict.fromkeys(keys)
    ids, n_clusters = cluster_ids(clusters, n_items)
    order = np.argsort(ids, kind="stable")
    sizes = np.bincount(ids, minlength=n_clusters)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    samples = np.full((n_boot, len(keys)), np.nan)
    row = 0
    for block in resample_blocks(n_clusters, n_boot, seed):
        for drawn in block:
            if clusters is None:
                indices = drawn
            else:
                lengths = sizes[drawn]
                # Items of each drawn cluster in turn: the cluster's start, offset by the position in it.
                offsets = np.repeat(starts[drawn] - np.cumsum(lengths) + lengths, lengths)
                indices = order[offsets + np.arange(int(lengths.sum()))]
            values = statistic(indices)
            samples[row] = [_defined(values.get(key)) for key in keys]
            row += 1
    at = expanded_level(n_clusters, level) if expand else level
    intervals = percentile_intervals(samples, [at] * len(keys))
    return {
        key: None if point[key] is None or np.isnan(_defined(point[key])) else intervals[j]
        for j, key in enumerate(keys)
    }
