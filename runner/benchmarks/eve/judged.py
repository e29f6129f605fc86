"""EVE judged tasks: open-ended answers (with or without context documents) and refusal.

A panel of judges grades each reply with a rubric from `prompts/`; metrics are EVE's multi-judge set.
`reference_metrics` adds reference-based scores next to the judges (runner/metrics/reference.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from runner.benchmarks.base import Context, require, sample_id
from runner.benchmarks.generative import GenerativeTask, Scored
from runner.judges.parsers import parse_binary
from runner.metrics.core import judge_panel_metrics
from runner.metrics.named import judge_passes
from runner.metrics.records import judge_names, task_result
from runner.metrics.reference import ReferenceScorer, check, metric_names
from runner.prompts import render
from runner.scorers.judged import BINARY_FORMAT, per_sample_scores
from runner.types import Sample, TaskResult


class JudgedTask(GenerativeTask):
    """A generation graded by every judge of the panel with a binary rubric."""

    needs_judges = True
    headline = "judge_voting"

    def __init__(self, name: str, prompt: str, rubric: str, system: str | None = None,
                 reference_metrics: Sequence[str] = (), embedding_model: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self.user_prompt = prompt
        self.system_prompt = system
        self.rubric = rubric
        # Checked here, at build time: a missing optional library stops the run before any request.
        selected = check(reference_metrics or (), f"benchmark.specs.{name}.reference_metrics", embedding_model)
        self.reference_scorer = ReferenceScorer(selected, embedding_model)

    def to_sample(self, row: Mapping[str, Any], index: int) -> Sample:
        require(row, "Question", "Answer")
        return Sample(id=sample_id(row, index), input=str(row["Question"]), target=str(row["Answer"]))

    def rubric_texts(self) -> list[str]:
        return [(self.prompt_dir / self.rubric).read_text(encoding="utf-8")]

    def template_names(self) -> list[str]:
        return [*super().template_names(), self.rubric]

    def rubric_vars(self, sample: Sample, text: str) -> dict[str, Any]:
        """What the rubric sees: the question, the reference and the reply (as in EVE, no context)."""
        return {"question": sample.input, "reference": sample.target, "response": text}

    async def score(self, sample: Sample, text: str, ctx: Context) -> Scored:
        assert ctx.panel is not None
        prompt = render(self.prompt_dir, self.rubric, **self.rubric_vars(sample, text))
        judged = ctx.panel.judge(prompt, parse_binary, BINARY_FORMAT)
        if self.reference_scorer:
            # The embedding models run in a worker thread while the judges are asked.
            (judgements, usage), reference = await asyncio.gather(
                judged, asyncio.to_thread(self.reference_scorer.score, text, str(sample.target)))
        else:
            (judgements, usage), reference = await judged, {}
        return Scored(answer=None, scores={**per_sample_scores(judgements), **reference},
                      judgements=judgements, judge_usage=usage)

    def finished(self, record: Mapping[str, Any]) -> bool:
        # A record kept from a run without (some of) the selected reference metrics is asked again.
        return super().finished(record) and self.reference_scorer.has_scores(record)

    def aggregate(self, records: Sequence[Mapping[str, Any]]) -> TaskResult:
        judges = judge_names(records)
        refs = self.reference_scorer
        zero = {**judge_panel_metrics([], judges), **{m: 0.0 for m in metric_names(refs.selected)}}

        def metrics(ok: Sequence[Mapping[str, Any]]) -> dict[str, float]:
            return {**judge_panel_metrics([judge_passes(r) for r in ok], judges), **refs.aggregate(ok)}

        return task_result(records, metrics, zero=zero,
                           per_sample=lambda r: {**judge_panel_metrics([judge_passes(r)], judges),
                                                 **refs.per_sample(r)})


class OpenEnded(JudgedTask):
    """`eve-esa/open-ended`: Question, Answer."""

    def __init__(self, name: str, prompt: str = "open_ended.j2", rubric: str = "judge_fact_check.j2",
                 **kwargs: Any) -> None:
        super().__init__(name, prompt=prompt, rubric=rubric, system="open_ended_system.j2", **kwargs)


class OpenEndedWithContext(JudgedTask):
    """`eve-esa/open-ended-w-context`: Question, Answer, Doc 1..3 (null docs skipped)."""

    def __init__(self, name: str, prompt: str = "open_ended_w_context.j2",
                 rubric: str = "judge_fact_check.j2", **kwargs: Any) -> None:
        super().__init__(name, prompt=prompt, rubric=rubric, system="context_system.j2", **kwargs)

    def to_sample(self, row: Mapping[str, Any], index: int) -> Sample:
        base = super().to_sample(row, index)
        docs = tuple(str(row[k]) for k in ("Doc 1", "Doc 2", "Doc 3") if row.get(k) is not None)
        if not docs:
            raise ValueError("row has no context documents (Doc 1..Doc 3 are all missing)")
        return Sample(id=base.id, input=base.input, target=base.target, context=docs)


class Refusal(JudgedTask):
    """`eve-esa/refusal`: Question, Context, Answer; passes when the model declines for lack of context."""

    def __init__(self, name: str, prompt: str = "refusal.j2", rubric: str = "judge_refusal.j2",
                 **kwargs: Any) -> None:
        super().__init__(name, prompt=prompt, rubric=rubric, system="context_system.j2", **kwargs)

    def to_sample(self, row: Mapping[str, Any], index: int) -> Sample:
        require(row, "Question", "Context")
        return Sample(id=sample_id(row, index), input=str(row["Question"]),
                      target=str(row.get("Answer") or ""), context=(str(row["Context"]),))

    def shot_reply(self, sample: Sample) -> str:
        return sample.target

    def rubric_vars(self, sample: Sample, text: str) -> dict[str, Any]:
        # The refusal judge needs the context: it decides whether declining was the right call.
        return {"question": sample.input, "context": sample.context[0], "response": text}
