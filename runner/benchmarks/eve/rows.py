"""EVE's rows as samples, where a `fields` map is not enough: option lists and letters are checked, the
multiple-answer choices come as {label, text}, and context documents may be missing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runner.tasks.base import require, sample_id
from runner.types import Sample, letters


class SingleAnswer:
    """`eve-esa/mcqa-single-answer`: Question, Choices (a list of texts), Answer (one letter)."""

    def __call__(self, row: Mapping[str, Any], index: int) -> Sample:
        require(row, "Question", "Choices", "Answer")
        choices = tuple(str(c) for c in row["Choices"])
        answer = str(row["Answer"]).strip().upper()
        if answer not in letters(len(choices)):
            raise ValueError(f"Answer '{row['Answer']}' is not one of the {len(choices)} option letters")
        return Sample(id=sample_id(row, index), input=str(row["Question"]), target=answer, choices=choices)


class MultipleAnswers:
    """`eve-esa/mcqa-multiple-answers`: Question, Choices ({label, text} or texts), Answers (letters)."""

    def __call__(self, row: Mapping[str, Any], index: int) -> Sample:
        require(row, "Question", "Choices", "Answers")
        column = row["Choices"]
        choices = tuple(str(t) for t in (column["text"] if isinstance(column, Mapping) else column))
        labels = letters(len(choices))
        gold = [row["Answers"]] if isinstance(row["Answers"], str) else list(row["Answers"])
        answers = tuple(sorted({str(a).strip().upper() for a in gold}))
        if not answers or any(a not in labels for a in answers):
            raise ValueError(f"Answers {gold} are not among the option letters {labels}")
        return Sample(id=sample_id(row, index), input=str(row["Question"]), target=answers, choices=choices)


class OpenEnded:
    """`eve-esa/open-ended`: Question, Answer; with `documents: true` (open-ended-w-context) also
    Doc 1..Doc 3, null ones skipped, at least one required."""

    def __init__(self, documents: bool = False) -> None:
        self.documents = bool(documents)

    def __call__(self, row: Mapping[str, Any], index: int) -> Sample:
        require(row, "Question", "Answer")
        docs = tuple(str(row[k]) for k in ("Doc 1", "Doc 2", "Doc 3") if row.get(k) is not None)
        if self.documents and not docs:
            raise ValueError("row has no context documents (Doc 1..Doc 3 are all missing)")
        return Sample(id=sample_id(row, index), input=str(row["Question"]), target=str(row["Answer"]),
                      context=docs if self.documents else ())


class Refusal:
    """`eve-esa/refusal`: Question, Context, Answer (the declining reply shown for few-shot examples)."""

    def __call__(self, row: Mapping[str, Any], index: int) -> Sample:
        require(row, "Question", "Context")
        return Sample(id=sample_id(row, index), input=str(row["Question"]), target=str(row.get("Answer") or ""),
                      context=(str(row["Context"]),))


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


class Hallucination:
    """`eve-esa/hallucination-detection`: Question, Answer, a gold label; the options are A. Yes
    (hallucinated, the positive class) and B. No, so the target is the letter."""

    def __call__(self, row: Mapping[str, Any], index: int) -> Sample:
        require(row, "Question", "Answer")
        # `label` wins over `is_hallucinated` when a row has both, as in EVE; a null one is no label.
        column = next((c for c in LABEL_COLUMNS if row.get(c) is not None), None)
        if column is None:
            raise ValueError(f"row has no gold label (a {' or '.join(LABEL_COLUMNS)} column)")
        return Sample(id=sample_id(row, index), input=str(row["Question"]),
                      target="A" if gold_label(row[column], column) else "B", choices=("Yes", "No"),
                      metadata={"answer": str(row["Answer"])})
