"""Pure metric functions: means, set overlap, binary classification and multi-judge aggregation."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any


def mean(values: Iterable[float]) -> float:
    """Arithmetic mean; 0.0 for no values (an empty task reports 0, and `n` says it was empty)."""
    vals = list(values)
    return sum(vals) / len(vals) if vals else 0.0


def finite(value: Any) -> float | None:
    """`value` as a float when it is a finite number (not a bool, NaN or infinity), else None: no value."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def score_value(record: Mapping[str, Any], name: str) -> float | None:
    """A record's value of the per-sample score `name`: None when the record has none (the scorer gave it no
    value, the key is absent or null, or it is no finite number), so a mean leaves it out instead of failing."""
    scores = record.get("scores")
    return finite(scores.get(name)) if isinstance(scores, Mapping) else None


def defined(values: Iterable[float | None]) -> list[float]:
    """The values that are not None."""
    return [v for v in values if v is not None]


def defined_mean(values: Iterable[float | None]) -> float | None:
    """The mean of the values that are defined (not None); None when none is (a mean over nothing is absent,
    never 0)."""
    vals = defined(values)
    return math.fsum(vals) / len(vals) if vals else None


def stderr(values: Sequence[float]) -> float | None:
    """Standard error of the mean (sample standard deviation / sqrt(n)); None (undefined) below two values: one
    sample says nothing about the spread, and 0.0 would claim certainty."""
    n = len(values)
    if n < 2:
        return None
    m = sum(values) / n
    return math.sqrt(sum((v - m) ** 2 for v in values) / (n - 1) / n)


def iou(predicted: Iterable[str], gold: Iterable[str]) -> float:
    """Jaccard overlap |P ∩ G| / |P ∪ G|; 0.0 when both are empty or nothing was predicted."""
    p, g = set(predicted), set(gold)
    union = p | g
    return len(p & g) / len(union) if union else 0.0


def binary_classification(pairs: Iterable[tuple[bool, bool | None]]) -> dict[str, float]:
    """Accuracy and corpus-level precision/recall/F1 of the positive class from (gold, predicted) pairs.

    A prediction of None (the reply named no option) is wrong for accuracy and is not a positive
    prediction, so it adds a false negative when the gold label is positive. Zero denominators give 0.
    """
    tp = fp = fn = correct = n = 0
    for gold, pred in pairs:
        n += 1
        correct += int(pred is not None and pred == gold)
        tp += int(gold and pred is True)
        fp += int((not gold) and pred is True)
        fn += int(gold and pred is not True)
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"accuracy": correct / n if n else 0.0, "precision": precision, "recall": recall, "f1": f1}


def majority_vote(scores: Sequence[float]) -> float:
    """The score at least ⌊n/2⌋+1 judges gave, else 0 (a split or a tie fails, as in EVE)."""
    if not scores:
        return 0.0
    value, count = Counter(scores).most_common(1)[0]
    # most_common breaks count ties by first occurrence; a tie never reaches the threshold anyway.
    return float(value) if count >= len(scores) // 2 + 1 else 0.0


def unanimous(scores: Sequence[float]) -> float:
    """1.0 when every judge gave the same score."""
    return 1.0 if scores and len(set(scores)) == 1 else 0.0


def judge_panel_metrics(per_sample: Sequence[dict[str, float]], judges: Sequence[str]) -> dict[str, float]:
    """EVE's multi-judge metrics from per-sample {judge: score} maps (invalid/failed already scored 0).

    `llm_as_judge_<judge>` per judge, `llm_as_judge_avg` (mean of per-sample judge means),
    `judge_voting` (mean of per-sample majority votes) and `judge_agreement` (share of samples on which
    all judges agree; EVE's own implementation always reports 0.0 because of an unwrapping bug).
    """
    out: dict[str, float] = {}
    for j in judges:
        out[f"llm_as_judge_{j}"] = mean(s.get(j, 0.0) for s in per_sample)
    rows = [[s.get(j, 0.0) for j in judges] for s in per_sample]
    out["llm_as_judge_avg"] = mean(mean(r) for r in rows)
    out["judge_voting"] = mean(majority_vote(r) for r in rows)
    out["judge_agreement"] = mean(unanimous(r) for r in rows)
    return out
