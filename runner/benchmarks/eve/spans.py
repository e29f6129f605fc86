"""EVE hallucination spans: the model quotes the hallucinated parts of an answer; scored per character.

A YAML task (conf/task/eve/hallucination_spans.yaml) made of three parts kept here: `SpanRows` reads the same
rows as `hallucination_detection` (Question, Answer, Hard labels, Soft labels), `SpanChat` asks for the quotes
as structured output, and `SpanScorer` scores them with SemEval-2025 Mu-SHROOM's metrics (span_metrics.py).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.benchmarks.eve.span_metrics import (
    HARD_THRESHOLD,
    Quote,
    intervals,
    map_quotes,
    micro_prf,
    probabilities,
    score_sample,
    unparsed_scores,
)
from runner.judges.panel import json_schema_format
from runner.judges.parsers import json_objects
from runner.solvers.chat import Chat
from runner.tasks.base import Context, require, sample_id
from runner.types import Sample, Scored

_QUOTE_WITH_CONFIDENCE = {"type": "object", "additionalProperties": False, "required": ["text", "confidence"],
                          "properties": {"text": {"type": "string"},
                                         "confidence": {"type": "number", "minimum": 0, "maximum": 1}}}
SPAN_KEY = "hallucinated_spans"


def response_format(confidence: bool) -> dict[str, Any]:
    """json_schema asking for {"hallucinated_spans": [...]}: quotes with a confidence, or bare quotes."""
    item = _QUOTE_WITH_CONFIDENCE if confidence else {"type": "string"}
    return json_schema_format("hallucinated_spans", {SPAN_KEY: {"type": "array", "items": item}}, [SPAN_KEY])


_SPAN_KEYS = (SPAN_KEY, "spans", "quotes")


def parse_quotes(text: str | None) -> list[Quote] | None:
    """The quotes of a reply, or None when it carries no list of them.

    Accepts the object asked for (bare, fenced or inside prose) or a bare JSON list; items may be strings
    or objects with `text` (or `quote`/`span`) and `confidence` (or `prob`). A missing or unreadable
    confidence means 1.0 (certain); confidences are clipped to [0, 1].
    """
    items: Any = None
    with contextlib.suppress(ValueError):
        items = json.loads((text or "").strip())
    if not isinstance(items, list):
        # The model's own list: the last object that carries one (a reply may restate the format first).
        found = [items] if isinstance(items, dict) else json_objects(text)
        obj = next((o for o in reversed(found) if any(str(k).lower() in _SPAN_KEYS for k in o)), None)
        if obj is None:
            return None
        items = next((v for k, v in obj.items() if str(k).lower() in _SPAN_KEYS), None)
        if not isinstance(items, list):
            return None
    quotes = []
    for item in items:
        if isinstance(item, str):
            quotes.append(Quote(item))
        elif isinstance(item, Mapping):
            quote = next((item[k] for k in ("text", "quote", "span") if isinstance(item.get(k), str)), None)
            if quote is None:
                return None
            quotes.append(Quote(quote, _confidence(next((item[k] for k in ("confidence", "prob", "probability")
                                                         if k in item), 1.0))))
        else:
            return None
    return quotes


def _confidence(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 1.0
    return min(1.0, max(0.0, number)) if number == number else 1.0


def gold_spans(row: Mapping[str, Any], length: int) -> tuple[list[list[int]], list[tuple[int, int, float]]]:
    """`Hard labels` [[start, end], ...] and `Soft labels` [{start, end, prob}, ...], checked against the
    answer's length; a malformed label fails the row."""
    hard_raw, soft_raw = (json.loads(v) if isinstance(v, str) else v
                          for v in (row["Hard labels"], row["Soft labels"]))
    hard = [[int(s), int(e)] for s, e in hard_raw]
    soft = [(int(s["start"]), int(s["end"]), float(s["prob"])) for s in soft_raw]
    for s, e, *_ in hard + soft:
        if not 0 <= s <= e <= length:
            raise ValueError(f"label span [{s}, {e}] is outside the answer (length {length})")
    if any(not 0.0 <= p <= 1.0 for *_, p in soft):
        raise ValueError("a Soft labels prob is outside [0, 1]")
    return hard, soft


class SpanRows:
    """A row as a sample whose target is the reference the records show: `{hard_labels, soft_labels}`."""

    def __call__(self, row: Mapping[str, Any], index: int) -> Sample:
        require(row, "Question", "Answer", "Hard labels", "Soft labels")
        answer = str(row["Answer"])
        hard, soft = gold_spans(row, len(answer))
        return Sample(id=sample_id(row, index), input=str(row["Question"]),
                      target={"hard_labels": hard,
                              "soft_labels": [{"start": s, "end": e, "prob": p} for s, e, p in soft]},
                      metadata={"answer": answer})


def _soft(target: Mapping[str, Any]) -> list[tuple[int, int, float]]:
    return [(int(x["start"]), int(x["end"]), float(x["prob"])) for x in target["soft_labels"]]


class SpanChat(Chat):
    """Chat asking for `{"hallucinated_spans": [...]}` as structured output: quotes with a confidence each
    (`confidence: true`), or bare quotes. A few-shot example's reply is its gold spans in that form."""

    def __init__(self, user: str, system: str | None = None, confidence: bool = True) -> None:
        super().__init__(user=user, system=system)
        self.confidence = bool(confidence)

    def variables(self, sample: Sample) -> dict[str, Any]:
        return {**super().variables(sample), "answer": sample.metadata["answer"], "confidence": self.confidence}

    def shot_reply(self, shot: Sample) -> str:
        # The gold hard spans, each with the highest gold soft probability inside it.
        answer, soft = shot.metadata["answer"], _soft(shot.target)
        spans: list[Any] = []
        for s, e in shot.target["hard_labels"]:
            prob = max((p for ss, se, p in soft if ss < e and s < se), default=1.0)
            spans.append({"text": answer[s:e], "confidence": prob} if self.confidence else answer[s:e])
        return json.dumps({SPAN_KEY: spans}, ensure_ascii=False)

    def response_format(self) -> dict[str, Any]:
        return response_format(self.confidence)


@dataclass(frozen=True)
class SpanPRF:
    """Character-level precision, recall and F1 over every sample's characters (not means: no stderr)."""

    def headline(self) -> str:
        return "span_f1"

    def keys(self, records: Sequence[Mapping[str, Any]]) -> list[str]:
        return ["span_precision", "span_recall", "span_f1"]

    def compute(self, records: Sequence[Mapping[str, Any]]) -> dict[str, float]:
        return micro_prf(r["scores"] for r in records)

    def per_sample(self, record: Mapping[str, Any]) -> dict[str, float]:
        return {}


class SpanScorer:
    """The quotes a reply gives, mapped onto the answer and scored against the gold spans."""

    def prepare(self, folders: Sequence[Path], where: str) -> None:
        """Nothing to load."""

    def metrics(self) -> list[Any]:
        return ["mean:span_iou", "mean:span_spearman", SpanPRF()]

    async def __call__(self, sample: Sample, text: str, ctx: Context) -> Scored:
        hard = sample.target["hard_labels"]
        quotes = parse_quotes(text)
        if quotes is None:
            return Scored(answer=None, scores=unparsed_scores(hard))
        answer = sample.metadata["answer"]
        mapped = map_quotes(answer, quotes)
        scores = score_sample(answer, hard, _soft(sample.target), mapped)
        predicted = [i for i, p in enumerate(probabilities(len(answer), mapped.spans)) if p > HARD_THRESHOLD]
        return Scored(answer={"spans": intervals(predicted),
                              "soft_spans": [{"start": s, "end": e, "prob": p} for s, e, p in mapped.spans],
                              "unmatched_quotes": [{"text": q.text, "confidence": q.confidence}
                                                   for q in mapped.unmatched]},
                      scores=scores)

    def counts(self, records: Sequence[Mapping[str, Any]]) -> dict[str, int]:
        """Counts, not rates (so not in `metrics`): quotes the model made that are not in the answer, and
        replies that were not the JSON asked for."""
        ok = [r for r in records if r.get("status") != "error"]
        return {"span_unmatched_quotes": int(sum(r["scores"]["unmatched_quotes"] for r in ok)),
                "span_unparsed": sum(r["answer"] is None for r in ok)}
