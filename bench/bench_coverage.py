"""Coverage of the runner's 95 % intervals, by simulation: how often they hold the true value.

    .venv/bin/python bench/bench_coverage.py [--reps 2000] [--n-boot 1000] [--ns 5,10,30,100]

For each kind of statistic the runner reports (a mean of 0/1 scores, a mean of bounded non-binary scores such
as IoU or an average judge score, a median, Cohen's and Fleiss' kappa, a paired difference of 0/1 and of
non-binary scores) and each n, it draws `reps` data sets from a population whose value is known, computes the
interval with each candidate method and counts how often it holds that value. A method is good enough at an
n where every population of its kind is covered at least 94 % of the time; the runner marks its interval
`reliable: false` where the method it uses is not (docs/statistics.md shows this table).

The intervals come from runner.metrics.intervals, agreement and paired (the runner's own code), except the
`percentile` rows of means and medians, the method the runner used before (kept for comparison) and the t
interval (scipy). Wilson's coverage is exact (summed over the binomial), not simulated.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from scipy import stats  # noqa: E402

from runner.metrics.agreement import judge_stats  # noqa: E402
from runner.metrics.intervals import (  # noqa: E402
    bootstrap_means,
    bootstrap_statistic,
    percentile_intervals,
    resampled_sums,
    wilson,
)
from runner.metrics.paired import paired_difference  # noqa: E402

# Populations of bounded non-binary per-sample scores: values and their probabilities.
IOU = (np.array([0.0, 1 / 3, 0.5, 2 / 3, 1.0]), np.array([0.10, 0.10, 0.15, 0.20, 0.45]))
JUDGE_AVG = (np.array([0.0, 1 / 3, 2 / 3, 1.0]), np.array([0.15, 0.10, 0.15, 0.60]))
SKEWED = (np.array([0.0, 0.5, 1.0]), np.array([0.03, 0.07, 0.90]))
EPOCH_MEANS = (np.array([0.0, 0.2, 0.4, 0.6, 0.8, 1.0]), np.array([0.2, 0.05, 0.05, 0.1, 0.1, 0.5]))
DISCRETE = {"iou": IOU, "judge_avg": JUDGE_AVG, "skewed": SKEWED, "epoch_means": EPOCH_MEANS}
BINARY_P = tuple(np.round(np.linspace(0.01, 0.99, 99), 2))
"""Wilson's coverage is exact at each p; its average over p (Brown, Cai and DasGupta's yardstick) and its lowest."""


def wilson_coverage(n: int, p: float) -> float:
    """Exact coverage of Wilson's interval for n trials at success probability p."""
    total = 0.0
    for k in range(n + 1):
        ci = wilson(k, n)
        assert ci is not None
        if ci[0] <= p <= ci[1]:
            total += stats.binom.pmf(k, n, p)
    return float(total)


def _draw(rng: np.random.Generator, population: tuple[np.ndarray, np.ndarray], size: tuple[int, ...]) -> np.ndarray:
    values, probs = population
    return np.asarray(values[rng.choice(len(values), size=size, p=probs)], dtype=np.float64)


def _covered(interval: tuple[float, float] | list[float] | None, truth: float) -> bool:
    return interval is not None and interval[0] - 1e-12 <= truth <= interval[1] + 1e-12


def mean_methods(n_boot: int) -> dict[str, Callable[[np.ndarray, int], tuple[float, float] | None]]:
    def percentile(x: np.ndarray, seed: int) -> tuple[float, float] | None:
        boot = resampled_sums(x[:, None], n_boot, seed)[:, 0] / len(x)
        return percentile_intervals(boot[:, None])[0]

    def t_interval(x: np.ndarray, seed: int) -> tuple[float, float] | None:
        if len(x) < 2 or np.std(x) == 0:
            return (float(x.mean()), float(x.mean()))
        lo, hi = stats.t.interval(0.95, len(x) - 1, loc=x.mean(), scale=stats.sem(x))
        return float(lo), float(hi)

    def expanded(x: np.ndarray, seed: int) -> tuple[float, float] | None:
        return bootstrap_means(x, None, n_boot, seed, expand=True)[0]

    return {"percentile": percentile, "t": t_interval, "expanded percentile (runner)": expanded}


def median_methods(n_boot: int) -> dict[str, Callable[[np.ndarray, int], tuple[float, float] | None]]:
    def make(expand: bool) -> Callable[[np.ndarray, int], tuple[float, float] | None]:
        def method(x: np.ndarray, seed: int) -> tuple[float, float] | None:
            def statistic(indices: np.ndarray) -> dict[str, float | None]:
                return {"median": float(np.median(x[indices]))}

            return bootstrap_statistic(len(x), statistic, None, n_boot, seed, expand=expand)["median"]
        return method

    return {"percentile": make(False), "expanded percentile (runner)": make(True)}


def coverage(draw: Callable[[np.random.Generator], np.ndarray], truth: float,
             method: Callable[[np.ndarray, int], tuple[float, float] | None], reps: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    hits = 0
    for rep in range(reps):
        hits += _covered(method(draw(rng), rep), truth)
    return hits / reps


def _population_median(population: tuple[np.ndarray, np.ndarray]) -> float:
    values, probs = population
    cumulative = np.cumsum(probs)
    return float(values[np.searchsorted(cumulative, 0.5)])


def kappa_population(prevalence: float, accuracy: float) -> float:
    """Cohen's (= Fleiss') kappa of two exchangeable raters who each see the true class with `accuracy`."""
    p_yes = prevalence * accuracy + (1 - prevalence) * (1 - accuracy)
    agree = prevalence * (accuracy**2 + (1 - accuracy) ** 2) + (1 - prevalence) * (accuracy**2 + (1 - accuracy) ** 2)
    chance = p_yes**2 + (1 - p_yes) ** 2
    return (agree - chance) / (1 - chance)


def kappa_coverage(n: int, raters: int, reps: int, n_boot: int, expand: bool) -> float:
    prevalence, accuracy = 0.4, 0.8
    truth = kappa_population(prevalence, accuracy)
    rng = np.random.default_rng(11)
    hits = 0
    key = "fleiss_kappa_ci" if raters > 2 else "cohen_kappa_ci"
    for rep in range(reps):
        truth_class = rng.random(n) < prevalence
        labels = {f"j{r}": [str(bool(c) if rng.random() < accuracy else not c) for c in truth_class]
                  for r in range(raters)}
        block = judge_stats(labels, n_boot=n_boot, seed=rep, expand=expand)
        ci = block[key] if raters > 2 else next(iter(block[key].values()))
        hits += _covered(ci, truth)
    return hits / reps


def paired_binary_coverage(n: int, reps: int) -> float:
    # Joint of (a, b): both right 0.55, a only 0.20, b only 0.10, both wrong 0.15: difference 0.10.
    probs = np.array([0.55, 0.20, 0.10, 0.15])
    pairs = np.array([[1, 1], [1, 0], [0, 1], [0, 0]], dtype=np.float64)
    truth = 0.10
    rng = np.random.default_rng(5)
    hits = 0
    for rep in range(reps):
        drawn = pairs[rng.choice(4, size=n, p=probs)]
        row = paired_difference(drawn[:, 0], drawn[:, 1], n_boot=10, seed=rep)
        hits += _covered(None if row["ci_low"] is None else (row["ci_low"], row["ci_high"]), truth)
    return hits / reps


def paired_continuous_coverage(n: int, reps: int, n_boot: int) -> float:
    rng = np.random.default_rng(6)
    values, probs = IOU
    hits = 0
    for rep in range(reps):
        a = _draw(rng, IOU, (n,))
        # b: a's score, moved down one step a third of the time (correlated, bounded, non-binary).
        steps = np.searchsorted(values, a)
        moved = np.where(rng.random(n) < 1 / 3, np.maximum(steps - 1, 0), steps)
        b = values[moved]
        down = np.concatenate([[0.0], np.diff(values)])  # expected drop when moved: P(step>0) * step size / 3
        truth = float((probs * down).sum()) / 3
        row = paired_difference(a, b, n_boot=n_boot, seed=rep)
        hits += _covered(None if row["ci_low"] is None else (row["ci_low"], row["ci_high"]), truth)
    return hits / reps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--ns", default="5,10,30,100")
    args = parser.parse_args()
    ns = [int(x) for x in args.ns.split(",")]
    print(f"coverage (%) of 95 % intervals (reps {args.reps}, n_boot {args.n_boot}); where a kind has several "
          "populations, their average and (in brackets) the lowest\n")
    print("| statistic | method | " + " | ".join(f"n={n}" for n in ns) + " |")
    print("|---|---|" + "---:|" * len(ns))

    def row(kind: str, method: str, cells: list[float | list[float]]) -> None:
        """A cell: the coverage, or over several populations their average and (in brackets) the lowest."""
        def cell(c: float | list[float]) -> str:
            if isinstance(c, list):
                return f"{100 * sum(c) / len(c):.1f} ({100 * min(c):.1f})"
            return f"{100 * c:.1f}"
        print(f"| {kind} | {method} | " + " | ".join(cell(c) for c in cells) + " |", flush=True)

    row("mean of 0/1 scores (p = 0.01 ... 0.99)", "Wilson (runner, exact)",
        [[wilson_coverage(n, p) for p in BINARY_P] for n in ns])
    for name, method in mean_methods(args.n_boot).items():
        cells: list[float | list[float]] = []
        for n in ns:
            cells.append([coverage(lambda r, pop=pop, n=n: _draw(r, pop, (n,)), float(pop[0] @ pop[1]), method,
                                   args.reps, seed=n) for pop in DISCRETE.values()])
        row("mean of bounded scores (" + ", ".join(DISCRETE) + ")", name, cells)
    for name, method in median_methods(args.n_boot).items():
        cells = []
        for n in ns:
            continuous = coverage(lambda r, n=n: r.beta(2, 5, n), float(stats.beta(2, 5).median()), method,
                                  args.reps // 4, seed=n)
            discrete = coverage(lambda r, n=n: _draw(r, JUDGE_AVG, (n,)), _population_median(JUDGE_AVG), method,
                                args.reps // 4, seed=n + 1)
            cells.append([continuous, discrete])
        row("median (Beta(2,5), judge_avg)", name, cells)
    for expand in (False, True):
        name = "expanded percentile (runner)" if expand else "percentile"
        row("Cohen's kappa (2 raters, kappa 0.36)", name,
            [kappa_coverage(n, 2, args.reps // 2, args.n_boot, expand) for n in ns])
        row("Fleiss' kappa (3 raters, kappa 0.36)", name,
            [kappa_coverage(n, 3, args.reps // 2, args.n_boot, expand) for n in ns])
    row("paired difference, 0/1 scores", "exact McNemar-matched (runner)",
        [paired_binary_coverage(n, args.reps) for n in ns])
    row("paired difference, IoU scores", "expanded percentile bootstrap (runner)",
        [paired_continuous_coverage(n, args.reps // 2, args.n_boot) for n in ns])


if __name__ == "__main__":
    main()
