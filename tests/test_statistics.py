"""The report's statistics (runner/metrics/intervals.py, agreement.py, paired.py) against textbook values and
the reference implementations in scipy, statsmodels and scikit-learn."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from runner.metrics.agreement import cohen_kappa, fleiss_kappa, judge_stats, pair_name
from runner.metrics.intervals import (
    bootstrap_means,
    bootstrap_statistic,
    expanded_level,
    is_binary,
    percentile_intervals,
    resampled_sums,
    wilson,
)
from runner.metrics.paired import mcnemar_exact, mcnemar_interval, paired_difference

# Fleiss (1971) via Wikipedia's worked example: 10 subjects, 14 raters, 5 categories; kappa = 0.210.
FLEISS_TABLE = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]


def _labels_from_table(table: list[list[int]]) -> list[list[str]]:
    """Items x raters labels whose aggregated table is `table` (categories named c0, c1, ...)."""
    return [[f"c{k}" for k, count in enumerate(row) for _ in range(count)] for row in table]


def _quiet_sklearn_kappa(a: list[object], b: list[object]) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(cohen_kappa_score(a, b))


# --- helpers -------------------------------------------------------------------------------------------------


def test_is_binary() -> None:
    assert is_binary([0, 1, 1, 0])
    assert is_binary(np.array([True, False]))
    assert is_binary([1.0, 1.0])
    assert not is_binary([0, 0.5, 1])
    assert not is_binary([0, 1, float("nan")])
    assert not is_binary([0, 2])
    assert not is_binary([])


def test_resampled_sums_is_one_seeded_index_draw() -> None:
    rng = np.random.default_rng(3)
    for n_cols in (1, 7):  # the gather path and the count-matrix path
        units = rng.random((50, n_cols))
        idx = np.random.default_rng(11).integers(0, 50, size=(300, 50))
        expected = np.stack([units[row].sum(axis=0) for row in idx])
        np.testing.assert_allclose(resampled_sums(units, 300, 11), expected, rtol=1e-12)


def test_percentile_intervals_undefined_in_most_resamples() -> None:
    samples = np.column_stack([np.arange(100.0), np.where(np.arange(100) < 60, np.nan, 1.0)])
    first, second = percentile_intervals(samples, 0.9)
    assert first == pytest.approx((np.percentile(np.arange(100.0), 5), np.percentile(np.arange(100.0), 95)))
    assert second is None


# --- Wilson --------------------------------------------------------------------------------------------------


def test_wilson_hand_computed_12_of_15() -> None:
    interval = wilson(12, 15)
    assert interval is not None
    assert interval[0] == pytest.approx(0.548, abs=5e-4)
    assert interval[1] == pytest.approx(0.930, abs=5e-4)


@pytest.mark.parametrize(("k", "n", "level"), [(0, 10, 0.95), (10, 10, 0.95), (37, 120, 0.95), (5, 9, 0.9)])
def test_wilson_matches_scipy_and_the_formula(k: int, n: int, level: float) -> None:
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=level, method="wilson")
    assert wilson(k, n, level) == pytest.approx((ci.low, ci.high), abs=1e-12)
    z = stats.norm.ppf(0.5 + level / 2)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    assert wilson(k, n, level) == pytest.approx((max(0.0, centre - half), min(1.0, centre + half)), abs=1e-9)


def test_wilson_empty_and_invalid() -> None:
    assert wilson(0, 0) is None
    with pytest.raises(ValueError):
        wilson(5, 4)
    with pytest.raises(ValueError):
        wilson(1, 4, level=1.0)


# --- bootstrap means -----------------------------------------------------------------------------------------


def test_bootstrap_means_reproducible_and_contains_point() -> None:
    values = np.random.default_rng(0).random((200, 3))
    first = bootstrap_means(values, None, 1000, seed=7)
    assert first == bootstrap_means(values, None, 1000, seed=7)
    assert first != bootstrap_means(values, None, 1000, seed=8)
    for interval, mean in zip(first, values.mean(axis=0), strict=True):
        assert interval is not None
        assert interval[0] < mean < interval[1]


def test_bootstrap_means_agrees_with_scipy_for_large_n() -> None:
    data = np.random.default_rng(1).normal(0.3, 1.0, size=2000)
    (ours,) = bootstrap_means(data, None, 4000, seed=2)
    res = stats.bootstrap(
        (data,), np.mean, n_resamples=4000, method="percentile", rng=np.random.default_rng(2), vectorized=True
    )
    theirs = (res.confidence_interval.low, res.confidence_interval.high)
    assert ours is not None
    width = theirs[1] - theirs[0]
    assert ours[0] < data.mean() < ours[1]
    assert theirs[0] < data.mean() < theirs[1]
    assert ours[0] == pytest.approx(theirs[0], abs=0.05 * width)
    assert ours[1] == pytest.approx(theirs[1], abs=0.05 * width)
    # Both are close to the normal-theory interval.
    se = data.std(ddof=1) / math.sqrt(data.size)
    assert ours == pytest.approx((data.mean() - 1.96 * se, data.mean() + 1.96 * se), abs=0.05 * width)


def test_bootstrap_means_nan_columns() -> None:
    rng = np.random.default_rng(4)
    values = rng.random((300, 3))
    values[::3, 1] = np.nan
    values[:, 2] = np.nan
    full, partial, empty = bootstrap_means(values, None, 500, seed=0)
    assert full is not None and partial is not None
    assert partial[0] < np.nanmean(values[:, 1]) < partial[1]
    assert empty is None


def test_bootstrap_means_empty() -> None:
    assert bootstrap_means(np.zeros((0, 2)), None, 100, seed=0) == [None, None]
    assert bootstrap_means([], None, 100, seed=0) == [None]


def test_clustered_bootstrap_resamples_whole_clusters() -> None:
    rng = np.random.default_rng(5)
    clusters = [f"item{i}" for i in rng.integers(0, 40, size=400)]
    values = rng.random((400, 2))
    seed, n_boot = 9, 200
    got = bootstrap_means(values, clusters, n_boot, seed)
    # Reference: the same index draw over clusters (numbered in order of first appearance), the resampled
    # sample mean (cluster means weighted by cluster size).
    order = list(dict.fromkeys(clusters))
    members = {c: [i for i, x in enumerate(clusters) if x == c] for c in order}
    idx = np.random.default_rng(seed).integers(0, len(order), size=(n_boot, len(order)))
    means = np.stack([values[[i for j in row for i in members[order[j]]]].mean(axis=0) for row in idx])
    expected = [tuple(np.percentile(means[:, m], [2.5, 97.5])) for m in range(2)]
    for interval, reference in zip(got, expected, strict=True):
        assert interval == pytest.approx(reference, rel=1e-10)


def test_singleton_clusters_equal_unclustered() -> None:
    values = np.random.default_rng(6).random((100, 2))
    clustered = bootstrap_means(values, list(range(100)), 500, seed=3)
    plain = bootstrap_means(values, None, 500, seed=3)
    for c, p in zip(clustered, plain, strict=True):
        assert c == pytest.approx(p, rel=1e-12)


def test_clustered_wider_on_clustered_data() -> None:
    rng = np.random.default_rng(7)
    cluster_effect = rng.normal(0, 1, size=50)
    clusters = np.repeat(np.arange(50), 20)
    values = cluster_effect[clusters] + rng.normal(0, 0.1, size=1000)
    (plain,) = bootstrap_means(values, None, 1000, seed=0)
    (clustered,) = bootstrap_means(values, clusters.tolist(), 1000, seed=0)
    assert plain is not None and clustered is not None
    assert clustered[1] - clustered[0] > 3 * (plain[1] - plain[0])
    assert clustered[0] < values.mean() < clustered[1]


def test_bootstrap_means_validates() -> None:
    with pytest.raises(ValueError):
        bootstrap_means([1.0, 2.0], ["a"], 10, seed=0)
    with pytest.raises(ValueError):
        bootstrap_means([1.0, 2.0], None, 0, seed=0)


# --- generic bootstrap ---------------------------------------------------------------------------------------


def test_bootstrap_statistic_matches_bootstrap_means() -> None:
    rng = np.random.default_rng(8)
    values = rng.random(300)
    clusters = rng.integers(0, 60, size=300).tolist()

    def mean(indices: np.ndarray) -> dict[str, float | None]:
        return {"mean": float(values[indices].mean())}

    for groups in (None, clusters):
        generic = bootstrap_statistic(300, mean, groups, 400, seed=4)["mean"]
        (direct,) = bootstrap_means(values, groups, 400, seed=4)
        assert generic == pytest.approx(direct, rel=1e-10)


def test_bootstrap_statistic_f1_and_none_rules() -> None:
    rng = np.random.default_rng(9)
    truth = rng.integers(0, 2, size=400)
    pred = np.where(rng.random(400) < 0.8, truth, 1 - truth)

    def statistic(indices: np.ndarray) -> dict[str, float | None]:
        t, p = truth[indices], pred[indices]
        tp = float(((t == 1) & (p == 1)).sum())
        denominator = float((t == 1).sum() + (p == 1).sum())
        return {
            "f1": 2 * tp / denominator if denominator else None,
            "never": None,
            # Defined on the data but (almost surely) in no resample.
            "rare": 1.0 if np.array_equal(indices, np.arange(400)) else None,
        }

    first = bootstrap_statistic(400, statistic, None, 300, seed=1)
    again = bootstrap_statistic(400, statistic, None, 300, seed=1)
    point = statistic(np.arange(400))["f1"]
    f1 = first["f1"]
    assert f1 is not None and point is not None
    assert f1 == again["f1"]
    assert f1[0] < point < f1[1]
    assert first["never"] is None
    assert first["rare"] is None


def test_bootstrap_statistic_empty() -> None:
    def statistic(indices: np.ndarray) -> dict[str, float | None]:
        return {"x": float(indices.size) if indices.size else None}

    assert bootstrap_statistic(0, statistic, None, 100, seed=0) == {"x": None}


# --- Fleiss' kappa -------------------------------------------------------------------------------------------


def test_fleiss_kappa_textbook_table() -> None:
    labels = _labels_from_table(FLEISS_TABLE)
    expected = float(sm_fleiss_kappa(np.array(FLEISS_TABLE)))
    assert fleiss_kappa(labels) == pytest.approx(expected, abs=1e-12)
    assert fleiss_kappa(labels) == pytest.approx(0.210, abs=5e-4)


def test_fleiss_kappa_matches_statsmodels_on_random_tables() -> None:
    rng = np.random.default_rng(10)
    for _ in range(50):
        labels = rng.integers(0, int(rng.integers(2, 5)), size=(int(rng.integers(2, 30)), int(rng.integers(2, 6))))
        table, _ = aggregate_raters(labels)
        with np.errstate(all="ignore"):
            expected = float(sm_fleiss_kappa(table))
        got = fleiss_kappa(labels.tolist())
        if math.isfinite(expected):
            assert got == pytest.approx(expected, abs=1e-12)
        else:
            assert got is None


def test_fleiss_kappa_undefined() -> None:
    assert fleiss_kappa([]) is None
    assert fleiss_kappa([["yes", "yes"], ["yes", "yes"]]) is None  # one category: statsmodels gives nan
    assert fleiss_kappa([["yes"], ["no"]]) is None  # one rater
    with pytest.raises(ValueError):
        fleiss_kappa([["a", "b"], ["a"]])


# --- Cohen's kappa -------------------------------------------------------------------------------------------


def test_cohen_kappa_textbook() -> None:
    # 50 items: yes/yes 20, yes/no 5, no/yes 10, no/no 15: p_o = 0.7, p_e = 0.5, kappa = 0.4.
    a = ["yes"] * 25 + ["no"] * 25
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4, abs=1e-12)
    assert cohen_kappa(a, b) == pytest.approx(_quiet_sklearn_kappa(list(a), list(b)), abs=1e-12)


def test_cohen_kappa_matches_sklearn() -> None:
    rng = np.random.default_rng(11)
    for _ in range(50):
        n, k = int(rng.integers(1, 40)), int(rng.integers(1, 5))
        a = [f"l{x}" for x in rng.integers(0, k, size=n)]
        b = [f"l{x}" if rng.random() < 0.6 else f"l{rng.integers(0, k + 1)}" for x in a]
        expected = _quiet_sklearn_kappa(list(a), list(b))
        got = cohen_kappa(a, b)
        if len(set(a)) == 1 or len(set(b)) == 1:  # sklearn: 0 (one rater constant) or nan; undefined here
            assert got is None
        elif math.isfinite(expected):
            assert got == pytest.approx(expected, abs=1e-12)
        else:
            assert got is None


def test_cohen_kappa_undefined() -> None:
    assert cohen_kappa([], []) is None
    assert cohen_kappa([1, 1, 1], [1, 1, 1]) is None  # chance agreement 1: sklearn gives nan
    # Issue 31: a judge who gives one verdict only says nothing about agreement (sklearn: exactly 0).
    assert _quiet_sklearn_kappa([1, 1, 0], [1, 1, 1]) == 0.0
    assert cohen_kappa([1, 1, 0], [1, 1, 1]) is None
    assert cohen_kappa([1, 0], [0, 1]) == pytest.approx(-1.0)
    with pytest.raises(ValueError):
        cohen_kappa([1], [1, 0])


# --- judge_stats ---------------------------------------------------------------------------------------------


def _verdicts(seed: int, n: int) -> dict[str, list[object]]:
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 2, size=n)
    out: dict[str, list[object]] = {}
    for name, accuracy, invalid in (("gpt", 0.9, 0.05), ("claude", 0.85, 0.1), ("llama", 0.7, 0.0)):
        labels = np.where(rng.random(n) < accuracy, truth, 1 - truth)
        out[name] = [None if rng.random() < invalid else bool(x) for x in labels]
    return out


def test_judge_stats_block() -> None:
    verdicts = _verdicts(12, 300)
    block = judge_stats(verdicts, n_boot=500, seed=0)
    assert set(block) == {"n", "fleiss_kappa", "fleiss_kappa_ci", "cohen_kappa", "cohen_kappa_ci", "invalid_rate"}
    assert list(block["cohen_kappa"]) == ["claude|gpt", "claude|llama", "gpt|llama"]
    assert pair_name("gpt", "claude") == "claude|gpt"
    judges = sorted(verdicts)
    all_valid = [i for i in range(300) if all(verdicts[j][i] is not None for j in judges)]
    assert block["n"] == len(all_valid)
    assert block["fleiss_kappa"] == pytest.approx(fleiss_kappa([[verdicts[j][i] for j in judges] for i in all_valid]))
    for pair, value in block["cohen_kappa"].items():
        a, b = pair.split("|")
        both = [i for i in range(300) if verdicts[a][i] is not None and verdicts[b][i] is not None]
        assert value == pytest.approx(
            _quiet_sklearn_kappa([verdicts[a][i] for i in both], [verdicts[b][i] for i in both])
        )
        low, high = block["cohen_kappa_ci"][pair]
        assert low < value < high
    low, high = block["fleiss_kappa_ci"]
    assert low < block["fleiss_kappa"] < high
    for judge in judges:
        assert block["invalid_rate"][judge] == pytest.approx(sum(v is None for v in verdicts[judge]) / 300)
    assert block == judge_stats(verdicts, n_boot=500, seed=0)


def test_judge_stats_intervals_match_a_loop_over_resamples() -> None:
    verdicts = _verdicts(13, 120)
    n_boot, seed = 200, 5
    block = judge_stats(verdicts, n_boot=n_boot, seed=seed)
    idx = np.random.default_rng(seed).integers(0, 120, size=(n_boot, 120))
    kappas = []
    for row in idx:
        pairs = [(verdicts["claude"][i], verdicts["gpt"][i]) for i in row]
        pairs = [(a, b) for a, b in pairs if a is not None and b is not None]
        value = cohen_kappa([a for a, _ in pairs], [b for _, b in pairs])
        kappas.append(np.nan if value is None else value)
    expected = np.percentile(np.array(kappas)[~np.isnan(kappas)], [2.5, 97.5])
    assert block["cohen_kappa_ci"]["claude|gpt"] == pytest.approx(list(expected), rel=1e-10)


def test_judge_stats_undefined_and_invalid_input() -> None:
    block = judge_stats({"a": [None, None], "b": [True, None]}, n_boot=50, seed=0)
    assert block["n"] == 0
    assert block["fleiss_kappa"] is None and block["fleiss_kappa_ci"] is None
    assert block["cohen_kappa"] == {"a|b": None}
    assert block["cohen_kappa_ci"] == {"a|b": None}
    assert block["invalid_rate"] == {"a": 1.0, "b": 0.5}
    agreeing = judge_stats({"a": [True] * 5, "b": [True] * 5}, n_boot=50, seed=0)
    assert agreeing["n"] == 5 and agreeing["cohen_kappa"] == {"a|b": None}  # one category only
    empty = judge_stats({"a": [], "b": []}, n_boot=50, seed=0)
    assert empty["n"] == 0 and empty["invalid_rate"] == {"a": None, "b": None}
    with pytest.raises(ValueError):
        judge_stats({"a": [True]}, n_boot=50, seed=0)
    with pytest.raises(ValueError):
        judge_stats({"a": [True], "b": [True, False]}, n_boot=50, seed=0)


# --- paired comparison ---------------------------------------------------------------------------------------


def test_mcnemar_exact_hand_computed() -> None:
    # 6 pairs a=1,b=0 and 1 pair a=0,b=1: p = 2 * P(X <= 1 | n=7, 1/2) = 2 * (1 + 7) / 128 = 0.125.
    a = [1] * 6 + [0] + [1] * 10 + [0] * 5
    b = [0] * 6 + [1] + [1] * 10 + [0] * 5
    assert mcnemar_exact(a, b) == pytest.approx(0.125, abs=1e-12)
    assert mcnemar_exact(b, a) == pytest.approx(0.125, abs=1e-12)
    # 5 against 0: p = 2 / 32.
    assert mcnemar_exact([1] * 5 + [0, 1], [0] * 5 + [0, 1]) == pytest.approx(0.0625, abs=1e-12)
    assert mcnemar_exact([1, 0, 1], [1, 0, 1]) == 1.0
    with pytest.raises(ValueError):
        mcnemar_exact([0.5, 1], [1, 0])


def test_mcnemar_exact_matches_statsmodels() -> None:
    rng = np.random.default_rng(14)
    for _ in range(20):
        a = rng.integers(0, 2, size=60)
        b = np.where(rng.random(60) < 0.7, a, 1 - a)
        table = [[int(((a == i) & (b == j)).sum()) for j in (0, 1)] for i in (0, 1)]
        expected = float(sm_mcnemar(table, exact=True).pvalue)
        assert mcnemar_exact(a.tolist(), b.tolist()) == pytest.approx(min(1.0, expected), abs=1e-12)


def test_paired_difference_binary() -> None:
    rng = np.random.default_rng(15)
    a = rng.integers(0, 2, size=200).astype(float)
    b = np.where(rng.random(200) < 0.8, a, 1 - a)
    b[:3] = np.nan  # samples model b lacks
    row = paired_difference(a, b, n_boot=1000, seed=0)
    keep = ~np.isnan(b)
    assert row["test"] == "mcnemar_exact"
    assert row["n"] == 197
    assert row["diff"] == pytest.approx(a[keep].mean() - b[keep].mean())
    assert row["p_value"] == pytest.approx(mcnemar_exact(a[keep], b[keep]))
    assert row["ci_low"] <= row["diff"] <= row["ci_high"]
    assert row == paired_difference(a, b, n_boot=1000, seed=0)


def test_paired_difference_continuous() -> None:
    rng = np.random.default_rng(16)
    b = rng.random(300)
    shifted = paired_difference(b + 0.2 + rng.normal(0, 0.05, 300), b, n_boot=999, seed=1)
    assert shifted["test"] == "paired_bootstrap" and shifted["ci_method"] == "expanded_percentile"
    assert shifted["diff"] == pytest.approx(0.2, abs=0.02)
    assert shifted["ci_low"] < shifted["diff"] < shifted["ci_high"]
    # No resample crosses 0: share 1/1000; p is the Student tail where the expanded interval would reach it.
    expected = 2 * stats.t.cdf(stats.norm.ppf(1 / 1000) * math.sqrt(299 / 300), 299)
    assert shifted["p_value"] == pytest.approx(expected, rel=1e-9)
    noise = paired_difference(b + rng.normal(0, 0.1, 300), b, n_boot=999, seed=1)
    assert noise["ci_low"] < 0 < noise["ci_high"] and noise["p_value"] > 0.05
    assert paired_difference(b, b, n_boot=100, seed=0)["p_value"] == 1.0
    # The interval agrees with scipy's percentile bootstrap of the paired differences at the expanded level
    # (Hesterberg: alpha'/2 = Phi(-sqrt(n/(n-1)) t_{alpha/2, n-1})).
    d = (b + rng.normal(0.05, 0.3, 300)) - b
    ours = paired_difference(d + b, b, n_boot=4000, seed=2)
    level = 1 - 2 * stats.norm.cdf(-math.sqrt(300 / 299) * stats.t.ppf(0.975, 299))
    res = stats.bootstrap((d,), np.mean, n_resamples=4000, method="percentile", confidence_level=level,
                          rng=np.random.default_rng(2))
    width = res.confidence_interval.high - res.confidence_interval.low
    assert ours["ci_low"] == pytest.approx(res.confidence_interval.low, abs=0.05 * width)
    assert ours["ci_high"] == pytest.approx(res.confidence_interval.high, abs=0.05 * width)


def test_expanded_level_matches_scipy() -> None:
    for n in (2, 3, 5, 10, 30, 100, 1000):
        expected = 1 - 2 * stats.norm.cdf(-math.sqrt(n / (n - 1)) * stats.t.ppf(0.975, n - 1))
        assert expanded_level(n) == pytest.approx(expected, abs=1e-12)
    assert expanded_level(1) is None


def test_mcnemar_interval_inverts_the_exact_test_and_holds_the_difference() -> None:
    """Issue 31, point 3: a row's interval excludes 0 exactly when McNemar's p < 0.05 (every table up to n 40),
    and it is the Clopper-Pearson interval of statsmodels mapped to the difference."""
    from statsmodels.stats.proportion import proportion_confint

    for n in range(1, 41, 3):
        for wins in range(n + 1):
            for losses in range(n - wins + 1):
                a = [1.0] * wins + [0.0] * losses + [1.0] * (n - wins - losses)
                b = [0.0] * wins + [1.0] * losses + [1.0] * (n - wins - losses)
                row = paired_difference(a, b, n_boot=10, seed=0)
                assert row["ci_low"] <= row["diff"] <= row["ci_high"]
                assert (not row["ci_low"] <= 0 <= row["ci_high"]) == (row["p_value"] < 0.05), (n, wins, losses)
    a, b = [1.0] * 12 + [0.0] * 4 + [1.0] * 14, [0.0] * 12 + [1.0] * 4 + [1.0] * 14
    theta = proportion_confint(12, 16, alpha=0.05, method="beta")
    share = proportion_confint(16, 30, alpha=0.2, method="beta")
    low, high = mcnemar_interval(a, b)
    assert 2 * theta[0] - 1 < 0 < 2 * theta[1] - 1  # both ends take the widest share: its upper end
    assert low == pytest.approx((2 * theta[0] - 1) * share[1], abs=1e-12)
    assert high == pytest.approx((2 * theta[1] - 1) * share[1], abs=1e-12)


def test_paired_bootstrap_interval_and_p_agree_about_zero() -> None:
    """Issue 31, point 3: over many small and large non-binary samples, p < 0.05 exactly when the interval
    excludes 0, or the row's note says they sit on the edge."""
    rng = np.random.default_rng(21)
    for trial in range(300):
        n = int(rng.choice([3, 5, 10, 30, 100]))
        a = rng.choice([0.0, 0.25, 0.5, 0.75, 1.0], size=n)
        b = np.clip(a - rng.choice([-0.25, 0.0, 0.25, 0.5], size=n), 0, 1)
        row = paired_difference(a, b, n_boot=500, seed=trial)
        if row["ci_low"] is None:
            continue
        excludes = not row["ci_low"] <= 0 <= row["ci_high"]
        assert excludes == (row["p_value"] < 0.05) or row["note"], row


def test_paired_difference_empty_and_invalid() -> None:
    row = paired_difference([], [], n_boot=100, seed=0)
    assert row == {"n": 0, "diff": None, "ci_low": None, "ci_high": None, "p_value": None, "test": "paired_bootstrap",
                   "ci_method": "expanded_percentile", "reliable": False, "note": ""}
    with pytest.raises(ValueError):
        paired_difference([1.0], [1.0, 0.0], n_boot=100, seed=0)


def test_judge_stats_when_no_judge_gave_a_valid_verdict_are_null():
    from runner.metrics.agreement import judge_stats

    stats = judge_stats({"b": [None, None], "a": [None, None]}, n_boot=50, seed=0)
    assert stats == {"n": 0, "fleiss_kappa": None, "fleiss_kappa_ci": None, "cohen_kappa": {"a|b": None},
                     "cohen_kappa_ci": {"a|b": None}, "invalid_rate": {"a": 1.0, "b": 1.0}}
