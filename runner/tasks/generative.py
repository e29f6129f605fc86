"""Generate-then-score tasks: a system prompt, few-shot turns, the question; then the task's scorer."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from runner.tasks.base import BaseTask, Context
from runner.tasks.prompts import render
from runner.types import Sample, SampleRecord, Scored


class GenerativeTask(BaseTask):
    """Chat prompt from two templates in the task's `prompts/` folder; few-shot examples as prior turns.

    Subclasses set `system_prompt`/`user_prompt` (template file names), `prompt_vars(sample)`,
    `shot_reply(sample)` and `score(sample, text, ctx)`.
    """

    system_prompt: str | None = None
    user_prompt: str = ""

    @property
    def prompt_dir(self) -> Path:
        """`prompts/` beside the module that defines the concrete task class."""
        return Path(inspect.getfile(type(self))).parent / "prompts"

    def template_names(self) -> list[str]:
        """Every template file this task renders."""
        return [t for t in (self.system_prompt, self.user_prompt) if t]

    def prepare(self, folders: Sequence[Path]) -> None:
        """Check every template loads now: a misspelt file name stops the run before any request."""
        from runner.tasks.templates import load_template

        for name in self.template_names():
            load_template(name, [self.prompt_dir], f"benchmark.specs.{self.name}")

    def prompt_vars(self, sample: Sample) -> dict[str, Any]:
        """Variables for the user template."""
        return {"question": sample.input, "choices": sample.choices, "context": sample.context,
                "letters": letters(len(sample.choices))}

    def shot_reply(self, sample: Sample) -> str:
        """The assistant turn shown for a few-shot example."""
        return str(sample.target)

    def messages(self, sample: Sample, shots: Sequence[Sample]) -> list[dict[str, str]]:
        """The chat messages for one sample."""
        msgs: list[dict[str, str]] = []
        if self.system_prompt:
            msgs.append({"role": "system", "content": render(self.prompt_dir, self.system_prompt)})
        for shot in shots:
            msgs.append({"role": "user", "content": render(self.prompt_dir, self.user_prompt,
                                                           **self.prompt_vars(shot))})
            msgs.append({"role": "assistant", "content": self.shot_reply(shot)})
        msgs.append({"role": "user", "content": render(self.prompt_dir, self.user_prompt,
                                                       **self.prompt_vars(sample))})
        return msgs

    def fingerprint_parts(self, sample: Sample, shots: Sequence[Sample], ctx: Context) -> dict[str, Any]:
        """Also the exact messages the model is sent (templates, few-shot turns, system prompt)."""
        return {**super().fingerprint_parts(sample, shots, ctx), "prompt": self.messages(sample, shots)}

    async def score(self, sample: Sample, text: str, ctx: Context) -> Scored:
        """Read and score the reply."""
        raise NotImplementedError

    def reference(self, sample: Sample) -> Any:
        """What the samples file shows as the reference."""
        return sample.target

    async def evaluate(self, sample: Sample, shots: Sequence[Sample], ctx: Context) -> SampleRecord:
        """Ask the model under test, then score its reply."""
        assert ctx.model is not None
        messages = self.messages(sample, shots)
        out = await ctx.model.complete(messages, params=self.params)
        scored = await self.score(sample, out.text, ctx)
        bad_judges = [j for j in scored.judgements if j.status != "ok"]
        return SampleRecord(
            id=sample.id, task=self.name, prompt=messages, reference=self.reference(sample),
            response=out.text, answer=scored.answer, judgements=[j.to_dict() for j in scored.judgements],
            scores=scored.scores, status="invalid" if bad_judges else "ok", model=ctx.model.name,
            usage={"model": {**out.usage.__dict__, "served_model": out.model},
                   "judges": scored.judge_usage},
        )


def letters(n: int) -> list[str]:
    """Option labels A, B, C, ... for n options."""
    return [chr(ord("A") + i) for i in range(n)]
