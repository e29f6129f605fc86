"""Paired comparison of two models on the same samples (CONTRACT.md, "Statistics": `pairs.csv`).

`diff` is model a's mean score minus model b's over the samples both have (each sample once: with epochs, its
value reduced over them, runner/metrics/samples.py). The interval and the p-value of a row come from one
family, so they agree about 0 (docs/statistics.md):

- 0/1 scores on both sides, `test` = `mcnemar_exact`: the exact McNemar test (the two-sided binomial test of
  the discordant pairs at 1/2) and, as its interval (`ci_method` = `mcnemar_exact`), the difference
  pi * (2 theta - 1) over theta in the Clopper-Pearson 95 % interval of the share theta of discordant pairs a
  wins (the interval the test inverts) and pi, the share of discordant pairs, in its Clopper-Pearson 80 %
  interval (`SHARE_LEVEL`): it excludes 0 exactly when p < 0.05, and covered the difference at least 94 % of
  the time in simulation;
- otherwise `test` = `paired_bootstrap`: the expanded percentile bootstrap of the mean paired difference
  (`ci_method` = `expanded_percentile`, runner/metrics/intervals.py `expanded_level`) and the p-value that
  inverts it: the level at which the expanded interval would just reach 0. Resampling counts can still put
  the two a hair apart; the row's `note` then says so.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from runner.metrics.intervals import FloatArray, expanded_level, is_binary, percentile_intervals, resampled_sums

# Per-sample scores: a sequence of floats or a 1-D array.
Scores = Sequence[float] | FloatArray

SHARE_LEVEL = 0.8
"""The level of the discordant share's interval in `mcnemar_interval`: the lowest of 0.5, 0.8, 0.95 and 0.99 at
which the interval covered at least 94 % at n = 5 ... 100 in bench/bench_coverage.py (0.5 fell to 90 %)."""

RELIABLE_FROM = {"mcnemar_exact": 5, "paired_bootstrap": 100}
"""The smallest n at which each family's 95 % interval covered at least 94 % in bench/bench_coverage.py
(docs/statistics.md); below it a row is `reliable: false`."""


def _pair_arrays(a: Scores, b: Scores) -> tuple[FloatArray, FloatArray]:
    x, y = np.asarray(a, dtype=np.float64).reshape(-1), np.asarray(b, dtype=np.float64).reshape(-1)
    if x.size != y.size:
        raise ValueError(f"paired scores need equal lengths, got {x.size} and {y.size}")
    return x, y


def _discordant(x: FloatArray, y: FloatArray) -> tuple[int, int]:
    """(pairs a won, pairs b won) of paired 0/1 scores."""
    return int(((x == 1) & (y == 0)).sum()), int(((x == 0) & (y == 1)).sum())


def mcnemar_exact(a: Scores, b: Scores) -> float:
    """p-value of the exact McNemar test on paired 0/1 scores.

    The two-sided binomial test of the discordant pairs (a 0, b 1 against a 1, b 0) at p = 0.5; 1.0 when
    there is no discordant pair.
    """
    x, y = _pair_arrays(a, b)
    if x.size and not (is_binary(x) and is_binary(y)):
        raise ValueError("mcnemar_exact needs 0/1 scores")
    wins, losses = _discordant(x, y)
    if wins + losses == 0:
        return 1.0
    from scipy import stats  # imported on use: scipy.stats takes ~0.5 s to import

    return float(stats.binomtest(losses, wins + losses, 0.5).pvalue)


def _clopper_pearson(k: int, n: int, level: float) -> tuple[float, float]:
    from scipy import stats

    ci = stats.binomtest(k, n).proportion_ci(confidence_level=level, method="exact")
    return float(ci.low), float(ci.high)


def mcnemar_interval(a: Scores, b: Scores, level: float = 0.95) -> tuple[float, float]:
    """The interval of mean(a) - mean(b) that matches the exact McNemar test (module docstring)."""
    x, y = _pair_arrays(a, b)
    n = int(x.size)
    wins, losses = _discordant(x, y)
    m = wins + losses
    share_low, share_high = _clopper_pearson(m, n, SHARE_LEVEL)
    theta_low, theta_high = _clopper_pearson(wins, m, level) if m else (0.0, 1.0)
    low, high = 2.0 * theta_low - 1.0, 2.0 * theta_high - 1.0
    return (low * (share_high if low < 0 else share_low), high * (share_high if high > 0 else share_low))


def _bootstrap_p(boot: FloatArray, diff: float, n: int, scale: float) -> float:
    """The p-value that inverts the expanded percentile interval: twice the Student tail at the level where
    the interval's end reaches 0 (the share of resampled differences at or beyond 0, counting the observed one).

    A resampled difference that is 0 in exact arithmetic counts as reaching 0 (a tie is no evidence either
    way). Summed in floating point it may come out as 1e-17 or -1e-17 depending on the order of the additions,
    so differences within `scale` x 1e-9 of 0 are 0 here (`scale`: the largest |difference| of one sample)."""
    from scipy import special

    tol = 1e-9 * max(scale, 1e-300)
    if abs(diff) <= tol:
        return 1.0
    beyond = int((boot <= tol).sum()) if diff > 0 else int((boot >= -tol).sum())
    share = min(0.5, (beyond + 1) / (boot.size + 1))
    t = float(special.ndtri(share)) * math.sqrt((n - 1) / n)
    return min(1.0, 2.0 * float(special.stdtr(n - 1, t)))


def paired_difference(a: Scores, b: Scores, n_boot: int, seed: int, level: float = 0.95) -> dict[str, Any]:
    """`n, diff, ci_low, ci_high, p_value, test, ci_method, reliable, note` for a's scores against b's on the
    same samples.

    A pair with a NaN on either side (a sample one model lacks) is dropped; `n` counts the rest and `diff` is
    mean(a) - mean(b) over them. `reliable` is False below the n at which the family's interval holds its
    coverage (`RELIABLE_FROM`); `note` says when the interval and the p-value disagree about 0. With no pair
    (or one non-binary pair: no spread) the figures are None.
    """
    x, y = _pair_arrays(a, b)
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    n = int(x.size)
    binary = is_binary(x) and is_binary(y)
    test = "mcnemar_exact" if binary else "paired_bootstrap"
    row: dict[str, Any] = {"n": n, "diff": None, "ci_low": None, "ci_high": None, "p_value": None, "test": test,
                           "ci_method": "mcnemar_exact" if binary else "expanded_percentile",
                           "reliable": n >= RELIABLE_FROM[test], "note": ""}
    if n == 0:
        return row
    differences = x - y
    row["diff"] = float(differences.mean())
    if binary:
        row["ci_low"], row["ci_high"] = mcnemar_interval(x, y, level)
        row["p_value"] = mcnemar_exact(x, y)
    elif n >= 2:
        boot = resampled_sums(differences[:, None], n_boot, seed)[:, 0] / n
        interval = percentile_intervals(boot[:, None], [expanded_level(n, level)])[0]
        if interval is not None:
            row["ci_low"], row["ci_high"] = interval
        row["p_value"] = _bootstrap_p(boot, row["diff"], n, float(np.abs(differences).max()))
    if row["ci_low"] is not None and row["p_value"] is not None:
        excludes = not row["ci_low"] <= 0.0 <= row["ci_high"]
        if excludes != (row["p_value"] < 1.0 - level):
            row["note"] = (f"the interval {'excludes' if excludes else 'includes'} 0 while p "
                           f"{'>=' if excludes else '<'} {1.0 - level:.2f}: the two sit on the edge, within the "
                           "precision of the resampling (more stats.n_boot narrows it)")
    return row
