"""Reference-based scores of a generated answer (BLEU, ROUGE, embedding cosine, BERTScore), next to the
judges: the libraries are checked when the run is built, the models load once, on first use."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.metrics.reference import SENTENCE_BLEU, ReferenceScorer, check, metric_names
from runner.types import Sample, Scored

if TYPE_CHECKING:
    from runner.tasks.base import Context


@dataclass(frozen=True)
class ReferenceMetrics:
    """Corpus BLEU over every reply and the mean of the other scores (an aggregation, see metrics/named.py)."""

    scorer: ReferenceScorer

    def headline(self) -> str:
        return next(iter(metric_names(self.scorer.selected)), "")

    def keys(self, records: Sequence[Mapping[str, Any]]) -> list[str]:
        return metric_names(self.scorer.selected)

    def compute(self, records: Sequence[Mapping[str, Any]]) -> dict[str, float | None]:
        return self.scorer.aggregate(records)

    def per_sample(self, record: Mapping[str, Any]) -> dict[str, float | None]:
        return self.scorer.per_sample(record)


class Reference:
    """`metrics`: any of bleu, rouge, cosine, bertscore (none by default: then it adds nothing)."""

    def __init__(self, metrics: Sequence[str] = (), embedding_model: str | None = None) -> None:
        self.selected = tuple(metrics or ())
        self.embedding_model = embedding_model
        self.scorer = ReferenceScorer((), embedding_model)

    def prepare(self, folders: Sequence[Path], where: str) -> None:
        """Check the libraries (and the model folder) now: a missing extra stops the run before any call."""
        self.scorer = ReferenceScorer(check(self.selected, f"{where}.metrics", self.embedding_model),
                                      self.embedding_model)

    def metrics(self) -> list[Any]:
        return [ReferenceMetrics(self.scorer)] if self.scorer else []

    def score_names(self) -> list[str]:
        """The per-sample scores the selected metrics give (sentence BLEU for corpus BLEU)."""
        return [SENTENCE_BLEU if m == "bleu" else m for m in metric_names(self.selected)]

    def has_scores(self, record: Mapping[str, Any]) -> bool:
        """A kept record made without (some of) the selected metrics is asked again."""
        return self.scorer.has_scores(record)

    async def __call__(self, sample: Sample, text: str, ctx: Context) -> Scored:
        if not self.scorer:
            return Scored()
        # The embedding models run in a worker thread, while other samples' calls go on.
        return Scored(scores=await asyncio.to_thread(self.scorer.score, text, str(sample.target)))
