"""EVE hallucination spans: the model quotes the hallucinated parts of an answer; scored per character.

Reads the same rows as `hallucination_detection` (Question, Answer, Hard labels, Soft labels) and
scores with SemEval-2025 Mu-SHROOM's metrics (see span_metrics.py for the rules).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping, Sequence
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
from runner.judges.parsers import find_json_object
from runner.metrics.core import mean
from runner.metrics.results import task_result
from runner.tasks.base import Context, require, sample_id
from runner.tasks.generative import GenerativeTask
from runner.types import Sample, SampleRecord, Scored, TaskResult

_QUOTE_WITH_CONFIDENCE = {"type": "object", "additionalProperties": False, "required": ["text", "confidence"],
                          "properties": {"text": {"type": "string"},
                                         "confidence": {"type": "number", "minimum": 0, "maximum": 1}}}
SPAN_KEY = "hallucinated_spans"
MEAN_METRICS = ("span_iou", "span_spearman")


def response_format(confidence: bool) -> dict[str, Any]:
    """json_schema asking for {"hallucinated_spans": [...]}: quotes with a confidence, or bare quotes."""
    item = _QUOTE_WITH_CONFIDENCE if confidence else {"type": "string"}
    return json_schema_format("hallucinated_spans", {SPAN_KEY: {"type": "array", "items": item}}, [SPAN_KEY])


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
        obj = items if isinstance(items, dict) else find_json_object(text)
        if obj is None:
            return None
        items = next((v for k, v in obj.items() if k.lower() in (SPAN_KEY, "spans", "quotes")), None)
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


class HallucinationSpans(GenerativeTask):
    """Span-level detection; metrics span_iou, span_spearman and character-level precision/recall/F1."""

    system_prompt = "spans_system.j2"
    user_prompt = "spans_question.j2"
    headline = "span_iou"

    def __init__(self, name: str, confidence: bool = True, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self.confidence = bool(confidence)

    def to_sample(self, row: Mapping[str, Any], index: int) -> Sample:
        require(row, "Question", "Answer", "Hard labels", "Soft labels")
        answer = str(row["Answer"])
        hard, soft = gold_spans(row, len(answer))
        return Sample(id=sample_id(row, index), input=str(row["Question"]), target=hard,
                      metadata={"answer": answer, "soft": soft})

    def prompt_vars(self, sample: Sample) -> dict[str, Any]:
        return {**super().prompt_vars(sample), "answer": sample.metadata["answer"],
                "confidence": self.confidence}

    def shot_reply(self, sample: Sample) -> str:
        # The gold hard spans, each with the highest gold soft probability inside it.
        answer, soft = sample.metadata["answer"], sample.metadata["soft"]
        spans = []
        for s, e in sample.target:
            prob = max((p for ss, se, p in soft if ss < e and s < se), default=1.0)
            spans.append({"text": answer[s:e], "confidence": prob} if self.confidence else answer[s:e])
        return json.dumps({SPAN_KEY: spans}, ensure_ascii=False)

    def reference(self, sample: Sample) -> Any:
        return {"hard_labels": sample.target,
                "soft_labels": [{"start": s, "end": e, "prob": p} for s, e, p in sample.metadata["soft"]]}

    async def score(self, sample: Sample, text: str, ctx: Context) -> Scored:
        quotes = parse_quotes(text)
        if quotes is None:
            return Scored(answer=None, scores=unparsed_scores(sample.target))
        answer = sample.metadata["answer"]
        mapped = map_quotes(answer, quotes)
        scores = score_sample(answer, sample.target, sample.metadata["soft"], mapped)
        hard = [i for i, p in enumerate(probabilities(len(answer), mapped.spans)) if p > HARD_THRESHOLD]
        return Scored(answer={"spans": intervals(hard),
                              "soft_spans": [{"start": s, "end": e, "prob": p} for s, e, p in mapped.spans],
                              "unmatched_quotes": [{"text": q.text, "confidence": q.confidence}
                                                   for q in mapped.unmatched]},
                      scores=scores)

    async def evaluate(self, sample: Sample, shots: Sequence[Sample], ctx: Context) -> SampleRecord:
        """As GenerativeTask.evaluate, with the span list asked for as structured output."""
        assert ctx.model is not None
        messages = self.messages(sample, shots)
        out = await ctx.model.complete(messages, params=self.params,
                                       response_format=response_format(self.confidence))
        scored = await self.score(sample, out.text, ctx)
        return SampleRecord(
            id=sample.id, task=self.name, prompt=messages, reference=self.reference(sample),
            response=out.text, answer=scored.answer, scores=scored.scores, status="ok", model=ctx.model.name,
            usage={"model": {**out.usage.__dict__, "served_model": out.model}, "judges": {}})

    def aggregate(self, records: Sequence[Mapping[str, Any]]) -> TaskResult:
        def metrics(ok: Sequence[Mapping[str, Any]]) -> dict[str, float]:
            rows = [r["scores"] for r in ok]
            out = {m: mean(row[m] for row in rows) for m in MEAN_METRICS}
            out.update(micro_prf(rows))
            return out

        zero = {m: 0.0 for m in (*MEAN_METRICS, "span_precision", "span_recall", "span_f1")}
        result = task_result(records, metrics, zero=zero,
                             per_sample=lambda r: {m: r["scores"][m] for m in MEAN_METRICS})
        # Counts, not rates (so not in `metrics`): quotes the model made that are not in the answer,
        # and replies that were not the JSON asked for.
        ok = [r for r in records if r.get("status") != "error"]
        result.counts = {"span_unmatched_quotes": int(sum(r["scores"]["unmatched_quotes"] for r in ok)),
                         "span_unparsed": sum(r["answer"] is None for r in ok)}
        return result
