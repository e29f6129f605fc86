"""Paired comparison of two models on the same samples (CONTRACT.md, "Statistics": `pairs.csv`).

`diff` is model a's mean score minus model b's over the samples both have; its interval is a seeded
percentile bootstrap of the paired differences; the p-value is the exact McNemar test for 0/1 scores, else a
two-sided paired bootstrap test.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from runner.metrics.intervals import FloatArray, is_binary, percentile_intervals, resampled_sums

# Per-sample scores: a sequence of floats or a 1-D array.
Scores = Sequence[float] | FloatArray


def _pair_arrays(a: Scores, b: Scores) -> tuple[FloatArray, FloatArray]:
    x, y = np.asarray(a, dtype=np.float64).reshape(-1), np.asarray(b, dtype=np.float64).reshape(-1)
    if x.size != y.size:
        raise ValueError(f"paired scores need equal lengths, got {x.size} and {y.size}")
    return x, y


def mcnemar_exact(a: Scores, b: Scores) -> float:
    """p-value of the exact McNemar test on paired 0/1 scores.

    The two-sided binomial test of the discordant pairs (a 0, b 1 against a 1, b 0) at p = 0.5; 1.0 when
    there is no discordant pair.
    """
    x, y = _pair_arrays(a, b)
    if x.size and not (is_binary(x) and is_binary(y)):
        raise ValueError("mcnemar_exact needs 0/1 scores")
    b01 = int(((x == 0) & (y == 1)).sum())
    b10 = int(((x == 1) & (y == 0)).sum())
    if b01 + b10 == 0:
        return 1.0
    from scipy import stats  # imported on use: scipy.stats takes ~0.5 s to import

    return float(stats.binomtest(b01, b01 + b10, 0.5).pvalue)


def paired_difference(a: Scores, b: Scores, n_boot: int, seed: int, level: float = 0.95) -> dict[str, Any]:
    """`n, diff, ci_low, ci_high, p_value, test` for a's scores against b's on the same samples.

    A pair with a NaN on either side (a sample one model lacks) is dropped; `n` counts the rest and `diff` is
    mean(a) - mean(b) over them. The interval is the percentile bootstrap of the mean paired difference.
    `test` is "mcnemar_exact" when both sides are 0/1, else "paired_bootstrap", whose p-value is twice the
    share of resampled mean differences on the far side of 0 (counting the observed one, so never 0; 1.0
    when diff is 0), capped at 1. With no pair everything but `n` and `test` is None.
    """
    x, y = _pair_arrays(a, b)
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    n = int(x.size)
    binary = is_binary(x) and is_binary(y)
    test = "mcnemar_exact" if binary else "paired_bootstrap"
    if n == 0:
        return {"n": 0, "diff": None, "ci_low": None, "ci_high": None, "p_value": None, "test": test}
    differences = x - y
    diff = float(differences.mean())
    boot = resampled_sums(differences[:, None], n_boot, seed)[:, 0] / n
    interval = percentile_intervals(boot[:, None], level)[0]
    low, high = interval if interval is not None else (None, None)
    if binary:
        p_value = mcnemar_exact(x, y)
    elif diff == 0.0:
        p_value = 1.0
    else:
        beyond = int((boot <= 0.0).sum()) if diff > 0 else int((boot >= 0.0).sum())
        p_value = min(1.0, 2.0 * (beyond + 1) / (n_boot + 1))
    return {"n": n, "diff": diff, "ci_low": low, "ci_high": high, "p_value": p_value, "test": test}
