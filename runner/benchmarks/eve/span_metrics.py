"""Character-level scoring of hallucination spans: SemEval-2025 Mu-SHROOM's IoU and Spearman, plus P/R/F1.

The model quotes the hallucinated parts of an answer; `map_quotes` turns quotes into character offsets
and `score_sample` compares them, position by position, with the dataset's gold labels.

Rules (README, "Hallucination spans and reference metrics"):
- A quote marks **every** occurrence of it in the answer (overlapping occurrences included): the model
  cannot say which occurrence it meant, and a repeated false claim is usually false each time.
- Matching is exact and case-sensitive; only surrounding whitespace and quotation marks are forgiven.
- A quote found nowhere in the answer is not dropped: each of its characters becomes an extra position
  after the answer, predicted at the quote's confidence and gold 0 (nothing there is hallucinated, since
  it is not there). It thus costs IoU, precision and correlation exactly as flagging correct text would.
- Per position, the predicted probability is the highest confidence of any quote covering it (gold soft
  labels likewise); a position is predicted hallucinated when that probability is above 0.5, the
  threshold Mu-SHROOM uses to derive hard labels from soft ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

QUOTE_MARKS = "\"'“”‘’«»`"
HARD_THRESHOLD = 0.5


@dataclass(frozen=True)
class Quote:
    """One quoted part of the answer and the model's confidence that it is hallucinated."""

    text: str
    confidence: float = 1.0


@dataclass
class Mapped:
    """Quotes placed on the answer: (start, end, confidence) per occurrence, and the quotes not found."""

    spans: list[tuple[int, int, float]] = field(default_factory=list)
    unmatched: list[Quote] = field(default_factory=list)
    quotes: int = 0


def occurrences(text: str, quote: str) -> list[tuple[int, int]]:
    """Every (start, end) at which `quote` occurs in `text`, overlapping occurrences included."""
    if not quote:
        return []
    found = []
    i = text.find(quote)
    while i != -1:
        found.append((i, i + len(quote)))
        i = text.find(quote, i + 1)
    return found


def _candidates(quote: str) -> list[str]:
    stripped = quote.strip()
    unquoted = stripped.strip(QUOTE_MARKS).strip()
    return [c for c in dict.fromkeys((quote, stripped, unquoted)) if c]


def map_quotes(answer: str, quotes: Iterable[Quote]) -> Mapped:
    """Character offsets of each quote in the answer (every occurrence); unfound quotes kept apart."""
    mapped = Mapped()
    for quote in quotes:
        mapped.quotes += 1
        hits: list[tuple[int, int]] = []
        for candidate in _candidates(quote.text):
            hits = occurrences(answer, candidate)
            if hits:
                break
        if hits:
            mapped.spans.extend((s, e, quote.confidence) for s, e in hits)
        else:
            mapped.unmatched.append(quote)
    mapped.spans.sort()
    return mapped


def probabilities(length: int, spans: Iterable[tuple[int, int, float]]) -> list[float]:
    """Per-character probability over `length` characters: the highest of the spans covering it."""
    vec = [0.0] * length
    for start, end, prob in spans:
        for i in range(start, end):
            vec[i] = max(vec[i], prob)
    return vec


def positions(spans: Iterable[Sequence[int]]) -> set[int]:
    """The character indices that [start, end) spans cover."""
    return {i for start, end, *_ in spans for i in range(start, end)}


def intervals(indices: Iterable[int]) -> list[list[int]]:
    """Sorted indices as merged [start, end) intervals (adjacent spans join, as Mu-SHROOM's hard labels)."""
    out: list[list[int]] = []
    for i in sorted(set(indices)):
        if out and out[-1][1] == i:
            out[-1][1] = i + 1
        else:
            out.append([i, i + 1])
    return out


def iou(predicted: set[int], gold: set[int]) -> float:
    """|P ∩ G| / |P ∪ G| over character positions; 1.0 when both are empty (Mu-SHROOM's rule)."""
    union = predicted | gold
    return len(predicted & gold) / len(union) if union else 1.0


def spearman(gold: Sequence[float], predicted: Sequence[float]) -> float:
    """Spearman's rho between gold and predicted per-character probabilities (scipy), in [-1, 1].

    Rho is undefined when either vector is constant; then (values compared at 8 decimals, as Mu-SHROOM):
    - only one of the two is constant: 0.0;
    - both constant: 1.0 when both say "nothing hallucinated" (all 0) or both flag every position
      (a non-zero constant), else 0.0. Mu-SHROOM's scorer gives 1.0 for any two constant vectors,
      which would reward flagging the whole of a correct answer; that case alone differs here.
    """
    g = {round(x, 8) for x in gold}
    p = {round(x, 8) for x in predicted}
    if len(g) <= 1 or len(p) <= 1:
        if len(g) > 1 or len(p) > 1:
            return 0.0
        return float((g <= {0.0}) == (p <= {0.0}))
    from scipy.stats import spearmanr

    return float(spearmanr(gold, predicted).statistic)


def score_sample(answer: str, gold_hard: Sequence[Sequence[int]],
                 gold_soft: Sequence[tuple[int, int, float]], mapped: Mapped) -> dict[str, float]:
    """Per-sample scores: `span_iou`, `span_spearman` and the character counts behind precision/recall."""
    phantom = [q.confidence for q in mapped.unmatched for _ in q.text.strip()]
    pred_vec = probabilities(len(answer), mapped.spans) + phantom
    gold_vec = probabilities(len(answer), gold_soft) + [0.0] * len(phantom)
    predicted = {i for i, p in enumerate(pred_vec) if p > HARD_THRESHOLD}
    gold = positions(gold_hard)
    return {"span_iou": iou(predicted, gold), "span_spearman": spearman(gold_vec, pred_vec),
            "chars_predicted": float(len(predicted)), "chars_gold": float(len(gold)),
            "chars_overlap": float(len(predicted & gold)), "quotes": float(mapped.quotes),
            "unmatched_quotes": float(len(mapped.unmatched))}


def unparsed_scores(gold_hard: Sequence[Sequence[int]]) -> dict[str, float]:
    """A reply that is not the JSON asked for: wrong (0 on IoU and correlation), predicting nothing."""
    return {"span_iou": 0.0, "span_spearman": 0.0, "chars_predicted": 0.0,
            "chars_gold": float(len(positions(gold_hard))), "chars_overlap": 0.0, "quotes": 0.0,
            "unmatched_quotes": 0.0}


def micro_prf(rows: Iterable[dict[str, float]]) -> dict[str, float]:
    """Character-level precision, recall and F1 over all samples' characters (zero denominators give 0)."""
    pred = gold = overlap = 0.0
    for r in rows:
        pred += r["chars_predicted"]
        gold += r["chars_gold"]
        overlap += r["chars_overlap"]
    precision = overlap / pred if pred else 0.0
    recall = overlap / gold if gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"span_precision": precision, "span_recall": recall, "span_f1": f1}
