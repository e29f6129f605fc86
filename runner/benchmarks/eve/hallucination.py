"""EVE hallucination detection: is the given answer hallucinated? A. Yes (positive) / B. No."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from runner.benchmarks.base import Context, require, sample_id
from runner.benchmarks.generative import GenerativeTask, Scored
from runner.metrics.core import binary_classification
from runner.metrics.records import task_result
from runner.scorers.letters import extract_choice
from runner.types import Sample, TaskResult

OPTIONS = ("Yes", "No")


LABEL_COLUMNS = ("label", "is_hallucinated")
"""Where the gold label is read, first found first: EVE reads `label`, then `is_hallucinated`."""


def gold_label(value: Any, column: str = "is_hallucinated") -> bool:
    """A gold label as a bool; anything unreadable fails the row (EVE defaulted to True, or read it as B)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    text = str(value).strip().lower()
    if text in ("true", "yes", "1", "a", "hallucinated"):
        return True
    if text in ("false", "no", "0", "b", "not hallucinated"):
        return False
    raise ValueError(f"{column} value {value!r} is not a yes/no label")


class HallucinationDetection(GenerativeTask):
    """Answer-level detection; metrics accuracy and corpus-level precision/recall/F1 (positive = A)."""

    system_prompt = "hallucination_system.j2"
    user_prompt = "hallucination_question.j2"
    headline = "f1"

    def to_sample(self, row: Mapping[str, Any], index: int) -> Sample:
        require(row, "Question", "Answer")
        # `label` wins over `is_hallucinated` when a row has both, as in EVE; a null one is no label.
        column = next((c for c in LABEL_COLUMNS if row.get(c) is not None), None)
        if column is None:
            raise ValueError(f"row has no gold label (a {' or '.join(LABEL_COLUMNS)} column)")
        return Sample(id=sample_id(row, index), input=str(row["Question"]), target=gold_label(row[column], column),
                      choices=OPTIONS, metadata={"answer": str(row["Answer"])})

    def prompt_vars(self, sample: Sample) -> dict[str, Any]:
        return {**super().prompt_vars(sample), "answer": sample.metadata["answer"]}

    def shot_reply(self, sample: Sample) -> str:
        # The shot's own label (EVE showed every shot as "A").
        return "Answer: A" if sample.target else "Answer: B"

    def reference(self, sample: Sample) -> Any:
        return "A" if sample.target else "B"

    async def score(self, sample: Sample, text: str, ctx: Context) -> Scored:
        letter = extract_choice(text, 2, OPTIONS)
        return Scored(answer=letter, scores={"correct": float(letter == self.reference(sample))})

    def aggregate(self, records: Sequence[Mapping[str, Any]]) -> TaskResult:
        def metrics(ok: Sequence[Mapping[str, Any]]) -> dict[str, float]:
            pairs = [(r["reference"] == "A", None if r["answer"] is None else r["answer"] == "A") for r in ok]
            return binary_classification(pairs)

        return task_result(records, metrics, zero={"accuracy": 0.0, "precision": 0.0, "recall": 0.0,
                                                   "f1": 0.0},
                           per_sample=lambda r: {"accuracy": float(r["answer"] == r["reference"])})
