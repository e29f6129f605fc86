"""Agreement between judges (CONTRACT.md, "Statistics": `judge_stats`).

Fleiss' kappa (any number of raters, as `statsmodels.stats.inter_rater.fleiss_kappa` on the aggregated
table) and Cohen's kappa (two raters, as `sklearn.metrics.cohen_kappa_score`), both None where undefined,
and the `judge_stats` block with seeded, vectorised bootstrap intervals. Both kappas are computed from
category counts, so a bootstrap resample only needs those counts summed over the resampled items
(`intervals.resampled_sums`), and the undefined cases are exact integer tests.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from itertools import combinations
from typing import Any

import numpy as np
import numpy.typing as npt

from runner.metrics.intervals import (
    FloatArray,
    IntArray,
    cluster_ids,
    expanded_level,
    percentile_intervals,
    resampled_sums,
)


def _codes(columns: Sequence[Sequence[Hashable | None]]) -> tuple[IntArray, int]:
    """Category codes (items x columns; -1 for None) over the union of the labels, and the category count."""
    numbers: dict[Hashable, int] = {}
    n_items = len(columns[0]) if columns else 0
    codes = np.full((n_items, len(columns)), -1, dtype=np.int64)
    for j, column in enumerate(columns):
        for i, label in enumerate(column):
            if label is not None:
                codes[i, j] = numbers.setdefault(label, len(numbers))
    return codes, len(numbers)


BoolArray = npt.NDArray[np.bool_]


def _one_hot(codes: IntArray, n_categories: int, mask: BoolArray) -> FloatArray:
    """Rows of 0/1 indicators of `codes` (a 1-D array), zero where `mask` is False."""
    out = np.zeros((codes.shape[0], n_categories))
    rows = np.flatnonzero(mask)
    out[rows, codes[rows]] = 1.0
    return out


def _fleiss(table_sums: FloatArray, agreement_sums: FloatArray, n_items: FloatArray, n_raters: int) -> FloatArray:
    """Fleiss' kappa per row from summed category counts (rows x K), summed per-item agreements
    sum_k n_ik (n_ik - 1) (rows,) and item counts (rows,); NaN where undefined (no item, one category)."""
    ratings = n_items * n_raters
    # 1 - P_e = (ratings^2 - sum_k count_k^2) / ratings^2: integers, so "undefined" is an exact zero.
    spread = ratings * ratings - (table_sums * table_sums).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        p_mean = agreement_sums / (n_items * n_raters * (n_raters - 1))
        p_expected = 1.0 - spread / (ratings * ratings)
        kappa = (p_mean - p_expected) / (1.0 - p_expected)
    return np.where((n_items > 0) & (spread > 0), kappa, np.nan)


def _cohen(agree_sums: FloatArray, a_sums: FloatArray, b_sums: FloatArray, n_items: FloatArray) -> FloatArray:
    """Cohen's kappa per row from summed agreements (rows,), each rater's summed category counts (rows x K)
    and item counts (rows,); NaN where undefined (no item, or a rater who used one category only)."""
    # 1 - p_e = (n^2 - sum_k a_k b_k) / n^2: integers, so "undefined" is an exact zero.
    spread = n_items * n_items - (a_sums * b_sums).sum(axis=1)
    # A rater who gave one category only (sum_k a_k^2 = n^2) says nothing about agreement: sklearn's kappa is
    # then exactly 0, a number that reads as "chance agreement"; here it is undefined.
    varied = ((n_items * n_items - (a_sums * a_sums).sum(axis=1)) > 0) & (
        (n_items * n_items - (b_sums * b_sums).sum(axis=1)) > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        p_observed = agree_sums / n_items
        p_expected = 1.0 - spread / (n_items * n_items)
        kappa = (p_observed - p_expected) / (1.0 - p_expected)
    return np.where((n_items > 0) & (spread > 0) & varied, kappa, np.nan)


def _value(x: float) -> float | None:
    return None if np.isnan(x) else float(x)


def fleiss_kappa(labels: Sequence[Sequence[Hashable]]) -> float | None:
    """Fleiss' kappa of `labels` (items x raters, every rater one label per item).

    None when undefined: no items, fewer than two raters, or a single category used throughout.
    """
    if not labels:
        return None
    n_raters = len(labels[0])
    if any(len(row) != n_raters for row in labels):
        raise ValueError("every item needs a label from every rater")
    if n_raters < 2:
        return None
    codes, n_categories = _codes([[row[j] for row in labels] for j in range(n_raters)])
    table = _item_table(codes, n_categories)
    agreements = (table * (table - 1.0)).sum(axis=1)
    kappa = _fleiss(table.sum(axis=0)[None, :], np.array([agreements.sum()]), np.array([float(len(labels))]), n_raters)
    return _value(float(kappa[0]))


def _item_table(codes: IntArray, n_categories: int) -> FloatArray:
    """Items x categories table of how many raters gave each category (codes: items x raters, all valid)."""
    table = np.zeros((codes.shape[0], n_categories))
    for column in codes.T:
        table[np.arange(codes.shape[0]), column] += 1.0
    return table


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float | None:
    """Cohen's kappa between raters `a` and `b` (one label each per item).

    None when undefined: no items, or a rater who used one category only (sklearn's
    `cohen_kappa_score` gives 0 when one rater is constant and NaN when both are; neither is a measure of
    agreement).
    """
    if len(a) != len(b):
        raise ValueError(f"raters labelled {len(a)} and {len(b)} items")
    if not a:
        return None
    codes, n_categories = _codes([list(a), list(b)])
    everything = np.ones(len(a), dtype=bool)
    one_a = _one_hot(codes[:, 0], n_categories, everything)
    one_b = _one_hot(codes[:, 1], n_categories, everything)
    agree = float((codes[:, 0] == codes[:, 1]).sum())
    kappa = _cohen(np.array([agree]), one_a.sum(axis=0)[None, :], one_b.sum(axis=0)[None, :], np.array([float(len(a))]))
    return _value(float(kappa[0]))


def pair_name(a: str, b: str) -> str:
    """The contract's name for a pair of judges: both names, sorted, joined by `|`."""
    return "|".join(sorted((a, b)))


def _ci(interval: tuple[float, float] | None, point: float | None) -> list[float] | None:
    return None if interval is None or point is None else [interval[0], interval[1]]


def judge_stats(
    verdicts: Mapping[str, Sequence[Hashable | None]], n_boot: int, seed: int, level: float = 0.95, *,
    clusters: Sequence[Hashable] | None = None, expand: bool = False,
) -> dict[str, Any]:
    """The contract's `judge_stats` block for two or more judges.

    `verdicts[judge][i]` is the judge's valid label on item i, or None where its reply was invalid. Fleiss'
    kappa is over the items every judge labelled, each pair's Cohen's kappa over the items both judges
    labelled; `invalid_rate` is each judge's share of None. `clusters` (one key per item: its sample, when a
    sample's epochs are several items) makes the sample the unit: `n` counts the samples with an item every
    judge labelled, and the bootstrap resamples samples. The intervals are percentile bootstrap intervals
    (`expand`: expanded, n = the samples) from resampling the task's samples (valid or not) with `seed`, each
    kappa computed in a resample over its valid items there; all of them come from one draw of resampled
    indices. A kappa that is undefined (one category only) is None and so is its interval.
    """
    judges = sorted(verdicts)
    if len(judges) < 2:
        raise ValueError(f"judge_stats needs two or more judges, got {len(judges)}")
    n_items = len(verdicts[judges[0]])
    if any(len(verdicts[j]) != n_items for j in judges):
        raise ValueError("every judge needs a verdict (or None) for every item")
    codes, n_categories = _codes([verdicts[j] for j in judges])
    ids, n_units = cluster_ids(clusters, n_items)
    if n_categories == 0:  # no judge gave a valid verdict: every kappa is undefined
        names = [pair_name(a, b) for a, b in combinations(judges, 2)]
        return {"n": 0, "fleiss_kappa": None, "fleiss_kappa_ci": None, "cohen_kappa": dict.fromkeys(names),
                "cohen_kappa_ci": dict.fromkeys(names),
                "invalid_rate": {j: (1.0 if n_items else None) for j in judges}}
    valid = codes >= 0
    all_valid: BoolArray = np.logical_and.reduce(valid, axis=1)

    # One block of per-item columns whose resampled sums give every kappa: Fleiss' table, per-item
    # agreements and validity, then each pair's agreement, two one-hot blocks and validity.
    table = _item_table(np.where(valid, codes, 0), n_categories) * all_valid[:, None]
    blocks: list[FloatArray] = [
        table,
        (table * (table - 1.0)).sum(axis=1)[:, None],
        all_valid[:, None].astype(np.float64),
    ]
    pairs = list(combinations(range(len(judges)), 2))
    for i, j in pairs:
        both = valid[:, i] & valid[:, j]
        blocks += [
            (both & (codes[:, i] == codes[:, j]))[:, None].astype(np.float64),
            _one_hot(codes[:, i], n_categories, both),
            _one_hot(codes[:, j], n_categories, both),
            both[:, None].astype(np.float64),
        ]
    units = np.hstack(blocks)
    point_sums = units.sum(axis=0)[None, :]
    if clusters is not None:  # every kappa is a function of sums: a sample's items enter as their sums
        per_unit = np.zeros((n_units, units.shape[1]))
        np.add.at(per_unit, ids, units)
        units = per_unit
    boot_sums = resampled_sums(units, n_boot, seed)

    def kappas(sums: FloatArray) -> tuple[FloatArray, list[FloatArray]]:
        k = n_categories
        fleiss = _fleiss(sums[:, :k], sums[:, k], sums[:, k + 1], len(judges))
        cohens = []
        for p in range(len(pairs)):
            at = k + 2 + p * (2 * k + 2)
            cohens.append(
                _cohen(
                    sums[:, at],
                    sums[:, at + 1 : at + 1 + k],
                    sums[:, at + 1 + k : at + 1 + 2 * k],
                    sums[:, at + 1 + 2 * k],
                )
            )
        return fleiss, cohens

    fleiss_point, cohen_points = kappas(point_sums)
    fleiss_boot, cohen_boots = kappas(boot_sums)
    at = expanded_level(n_units, level) if expand else level
    intervals = percentile_intervals(np.column_stack([fleiss_boot, *cohen_boots]), [at] * (1 + len(pairs)))
    fleiss = _value(float(fleiss_point[0]))
    names = [pair_name(judges[i], judges[j]) for i, j in pairs]
    cohen = {name: _value(float(c[0])) for name, c in zip(names, cohen_points, strict=True)}
    counted = len(set(ids[all_valid].tolist()))
    return {
        "n": counted,
        "fleiss_kappa": fleiss,
        "fleiss_kappa_ci": _ci(intervals[0], fleiss),
        "cohen_kappa": cohen,
        "cohen_kappa_ci": {name: _ci(intervals[1 + p], cohen[name]) for p, name in enumerate(names)},
        "invalid_rate": {
            judge: (float((~valid[:, j]).sum()) / n_items if n_items else None) for j, judge in enumerate(judges)
        },
    }
