"""EVE multiple choice: single answer (accuracy) and multiple answers (IoU and exact set match)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from runner.benchmarks.base import Context, require, sample_id
from runner.benchmarks.generative import GenerativeTask, Scored
from runner.metrics.core import iou, mean
from runner.metrics.records import task_result
from runner.scorers.letters import extract_choice, extract_choices
from runner.types import Sample, TaskResult


class McqaSingle(GenerativeTask):
    """`eve-esa/mcqa-single-answer`: Question, Choices (list of texts), Answer (one letter)."""

    system_prompt = "mcqa_single_system.j2"
    user_prompt = "mcqa_question.j2"

    def to_sample(self, row: Mapping[str, Any], index: int) -> Sample:
        require(row, "Question", "Choices", "Answer")
        choices = tuple(str(c) for c in row["Choices"])
        answer = str(row["Answer"]).strip().upper()
        if len(answer) != 1 or not "A" <= answer < chr(ord("A") + len(choices)):
            raise ValueError(f"Answer '{row['Answer']}' is not one of the {len(choices)} option letters")
        return Sample(id=sample_id(row, index), input=str(row["Question"]), target=answer, choices=choices)

    def shot_reply(self, sample: Sample) -> str:
        return f"Answer: {sample.target}"

    async def score(self, sample: Sample, text: str, ctx: Context) -> Scored:
        letter = extract_choice(text, len(sample.choices), sample.choices)
        return Scored(answer=letter, scores={"accuracy": float(letter == sample.target)})

    def aggregate(self, records: Sequence[Mapping[str, Any]]) -> TaskResult:
        return task_result(records, lambda ok: {"accuracy": mean(r["scores"]["accuracy"] for r in ok)},
                           zero={"accuracy": 0.0}, per_sample=lambda r: {"accuracy": r["scores"]["accuracy"]})


class McqaMultiple(GenerativeTask):
    """`eve-esa/mcqa-multiple-answers`: Question, Choices {label, text}, Answers (list of letters)."""

    system_prompt = "mcqa_multiple_system.j2"
    user_prompt = "mcqa_question.j2"
    headline = "iou"

    def to_sample(self, row: Mapping[str, Any], index: int) -> Sample:
        require(row, "Question", "Choices", "Answers")
        choices_col = row["Choices"]
        texts = choices_col["text"] if isinstance(choices_col, Mapping) else choices_col
        choices = tuple(str(t) for t in texts)
        labels = [chr(ord("A") + i) for i in range(len(choices))]
        gold = row["Answers"]
        gold = [gold] if isinstance(gold, str) else list(gold)
        answers = tuple(sorted({str(a).strip().upper() for a in gold}))
        if not answers or any(a not in labels for a in answers):
            raise ValueError(f"Answers {gold} are not among the option letters {labels}")
        return Sample(id=sample_id(row, index), input=str(row["Question"]), target=answers, choices=choices)

    def shot_reply(self, sample: Sample) -> str:
        return "Answer: " + ", ".join(sample.target)

    def reference(self, sample: Sample) -> Any:
        return list(sample.target)

    async def score(self, sample: Sample, text: str, ctx: Context) -> Scored:
        picked = extract_choices(text, len(sample.choices), sample.choices)
        return Scored(answer=list(picked), scores={"iou": iou(picked, sample.target),
                                                   "accuracy": float(set(picked) == set(sample.target))})

    def aggregate(self, records: Sequence[Mapping[str, Any]]) -> TaskResult:
        return task_result(records, lambda ok: {"iou": mean(r["scores"]["iou"] for r in ok),
                                                "accuracy": mean(r["scores"]["accuracy"] for r in ok)},
                           zero={"iou": 0.0, "accuracy": 0.0},
                           per_sample=lambda r: {k: r["scores"][k] for k in ("iou", "accuracy")})
