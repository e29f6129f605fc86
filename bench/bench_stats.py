"""Wall time of the report's statistics (runner/metrics/intervals.py, agreement.py, paired.py) on one task.

    .venv/bin/python bench/bench_stats.py                  # N=10000 samples, n_boot=1000, best of 3
    .venv/bin/python bench/bench_stats.py --n 50000 --repeat 1

Cases (synthetic, seeded data):
* wilson              : accuracy of N binary scores (count + Wilson interval)
* means               : bootstrap_means of N x 3 metrics, unclustered
* means_clustered     : the same, N samples in N/5 clusters (5 samples per item)
* judge_stats_3       : judge_stats for 3 judges over N items (binary verdicts, ~5 % invalid)
* paired_bootstrap    : paired_difference of two continuous score columns (for pairs.csv)
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from runner.metrics.agreement import judge_stats  # noqa: E402
from runner.metrics.intervals import bootstrap_means, wilson  # noqa: E402
from runner.metrics.paired import paired_difference  # noqa: E402


def best_of(repeat: int, fn: Callable[[], object]) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=10_000, help="samples per task")
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3, help="report the best of this many runs")
    args = parser.parse_args()
    n, n_boot = args.n, args.n_boot
    rng = np.random.default_rng(0)

    binary = (rng.random(n) < 0.7).astype(np.float64)
    metrics = np.column_stack([binary, rng.random(n), rng.normal(size=n)])
    clusters = (np.arange(n) // 5).tolist()
    truth = rng.integers(0, 2, size=n)
    verdicts: dict[str, list[object]] = {}
    for judge, accuracy in (("judge_a", 0.9), ("judge_b", 0.85), ("judge_c", 0.75)):
        labels = np.where(rng.random(n) < accuracy, truth, 1 - truth)
        invalid = rng.random(n) < 0.05
        verdicts[judge] = [None if bad else bool(x) for x, bad in zip(labels, invalid, strict=True)]
    model_a, model_b = rng.random(n), rng.random(n)

    cases: list[tuple[str, Callable[[], object]]] = [
        ("wilson", lambda: wilson(int(binary.sum()), n)),
        ("means", lambda: bootstrap_means(metrics, None, n_boot, seed=0)),
        ("means_clustered", lambda: bootstrap_means(metrics, clusters, n_boot, seed=0)),
        ("judge_stats_3", lambda: judge_stats(verdicts, n_boot, seed=0)),
        ("paired_bootstrap", lambda: paired_difference(model_a, model_b, n_boot, seed=0)),
    ]
    print(f"N={n} samples, n_boot={n_boot}, best of {args.repeat}")
    print(f"{'case':<20}{'seconds':>10}")
    total = 0.0
    for name, fn in cases:
        fn()  # warm-up (imports, first-call allocations)
        seconds = best_of(args.repeat, fn)
        total += seconds
        print(f"{name:<20}{seconds:>10.4f}")
    print(f"{'total':<20}{total:>10.4f}")


if __name__ == "__main__":
    main()
