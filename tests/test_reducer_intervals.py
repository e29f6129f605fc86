"""Intervals of a metric that is no mean (F1, precision, recall) with a reducer (issue 44, point 1): a bootstrap
resample keeps its duplicates. Before, each resample was regrouped by sample id, so a sample drawn k times
counted once and the interval came out too narrow, even at epochs=1 where a reducer must change nothing."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest
from conftest import compose
from sklearn.metrics import f1_score, precision_score

from runner.config import instantiate
from runner.metrics.intervals import expanded_level, resample_blocks
from runner.metrics.uncertainty import scored_result, wilson95

N_BOOT, SEED = 400, 3


def task(reducer: str | None) -> Any:
    overrides = ["benchmark=eve", "benchmark.tasks=[hallucination_detection]"]
    if reducer:
        overrides.append(f"benchmark.specs.hallucination_detection.reducer={reducer}")
    built = instantiate(compose(overrides).benchmark, "benchmark").build_tasks()[0]
    built.prepare([])
    return built


def records(n: int, epochs: int, seed: int = 0) -> list[dict[str, Any]]:
    """n samples (reference A = hallucinated for the first half), each answered `epochs` times at random."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        ref = "A" if i < n // 2 else "B"
        for e in range(epochs):
            answer = rng.choice(["A", "B", None]) if rng.random() < 0.6 else ref
            out.append({"id": i, "epoch": e, "status": "ok", "reference": ref, "answer": answer,
                        "scores": {"accuracy": float(answer == ref)}})
    return out


def test_a_reducer_changes_nothing_at_one_epoch_intervals_included() -> None:
    rows = records(8, 1)
    plain = scored_result(task(None), rows, n_boot=N_BOOT, seed=SEED)
    moded = scored_result(task("mode"), rows, n_boot=N_BOOT, seed=SEED)
    assert moded.metrics == plain.metrics
    assert moded.ci == plain.ci  # f1's interval too: before, mode narrowed it


def mode_answers(rows: list[dict[str, Any]]) -> tuple[list[str], list[str | None]]:
    """Each sample's reference and its majority answer (ties to the first reached; no answer does not vote),
    computed here by hand from the records."""
    by: dict[int, list[dict[str, Any]]] = {}
    for r in rows:
        by.setdefault(r["id"], []).append(r)
    refs, answers = [], []
    for group in by.values():
        votes = [r["answer"] for r in sorted(group, key=lambda r: r["epoch"]) if r["answer"] is not None]
        best = max(votes, key=lambda v: (votes.count(v), -votes.index(v))) if votes else None
        refs.append(group[0]["reference"])
        answers.append(best)
    return refs, answers


@pytest.mark.parametrize(("metric", "score"), [("f1", f1_score), ("precision", precision_score)])
def test_with_mode_over_epochs_every_draw_counts_as_scikit_learn_scores_it(metric: str, score: Any) -> None:
    rows = records(12, 3, seed=7)
    result = scored_result(task("mode"), rows, n_boot=N_BOOT, seed=SEED, epochs=3)
    refs, answers = mode_answers(rows)
    y_true = np.array([r == "A" for r in refs])
    y_pred = np.array([a == "A" for a in answers])  # no answer is no positive prediction
    assert result.metrics[metric] == pytest.approx(score(y_true, y_pred, zero_division=0))
    draws = np.vstack(list(resample_blocks(len(refs), N_BOOT, SEED)))
    values = [score(y_true[d], y_pred[d], zero_division=0) for d in draws]
    level = expanded_level(len(refs))
    assert level is not None
    low, high = np.percentile(values, [50 * (1 - level), 100 - 50 * (1 - level)])
    assert result.ci[metric] == pytest.approx([low, high])


def test_a_paired_bootstrap_p_value_counts_exact_ties_whatever_the_rounding() -> None:
    # Differences of tenths: many resampled means are exactly 0, which floating-point sums put at +-1e-17 by
    # the order of additions (issue 44, point 4: 298, 296 or 303 of 1000 counted as reaching 0). Counted here in
    # exact integer arithmetic over the same draws, the p-value must not depend on the rounding.
    from scipy import special

    from runner.metrics.paired import paired_difference

    tenths = [3, -1, 2, -2, 1, -3, 1, 1, -1, 2, -2, 1]  # differences x 10, mean 2/12 > 0
    a = [0.5 + t / 10 for t in tenths]
    b = [0.5] * len(tenths)
    n = len(tenths)
    draws = np.vstack(list(resample_blocks(n, 1000, SEED)))
    sums = np.array(tenths)[draws].sum(axis=1)  # exact: integers
    beyond = int((sums <= 0).sum())
    share = min(0.5, (beyond + 1) / (1000 + 1))
    t = float(special.ndtri(share)) * ((n - 1) / n) ** 0.5
    expected = min(1.0, 2.0 * float(special.stdtr(n - 1, t)))
    for scale in (1.0, 3.0, 0.7):
        row = paired_difference([x * scale for x in a], [y * scale for y in b], n_boot=1000, seed=SEED)
        assert row["test"] == "paired_bootstrap" and row["p_value"] == pytest.approx(expected, rel=1e-12)


def test_the_interval_method_and_its_flag_follow_the_design_not_the_draw() -> None:
    # Issue 44, point 5: with three epochs averaged, a data set whose epochs happen to agree (every sample's mean
    # 0 or 1) got Wilson and reliable: true while the rest of its population got the bootstrap and false.
    agree = records(12, 3, seed=1)
    for r in agree:  # every epoch of a sample answers as its first did
        r["answer"] = next(x["answer"] for x in agree if x["id"] == r["id"] and x["epoch"] == 0)
        r["scores"]["accuracy"] = float(r["answer"] == r["reference"])
    differ = records(12, 3, seed=1)
    plain = task(None)
    a = scored_result(plain, agree, n_boot=N_BOOT, seed=SEED, epochs=3)
    b = scored_result(plain, differ, n_boot=N_BOOT, seed=SEED, epochs=3)
    assert a.reliable["accuracy"] == b.reliable["accuracy"] is False  # n 12 is below the bootstrap's 100
    values = [1.0 if r["scores"]["accuracy"] else 0.0 for r in agree if r["epoch"] == 0]
    assert a.ci["accuracy"] != pytest.approx(list(wilson95(int(sum(values)), len(values))))
    moded = scored_result(task("mode"), agree, n_boot=N_BOOT, seed=SEED, epochs=3)  # mode keeps 0/1: Wilson
    assert moded.ci["accuracy"] == pytest.approx(list(wilson95(int(sum(values)), len(values))))
    assert moded.reliable["accuracy"] is True
