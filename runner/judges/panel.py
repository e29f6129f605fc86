"""A judge panel: asks every judge concurrently and keeps each judge's verdict or invalid reply."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from runner.judges.parsers import Verdict
from runner.models.litellm_model import Endpoint
from runner.types import Judgement, Usage

Parser = Callable[[str | None], Verdict]


def json_schema_format(name: str, properties: dict[str, Any], required: Sequence[str]) -> dict[str, Any]:
    """An OpenAI-style `response_format` asking for a JSON object (llama.cpp and most providers honour it)."""
    return {"type": "json_schema",
            "json_schema": {"name": name, "strict": True,
                            "schema": {"type": "object", "properties": properties,
                                       "required": list(required), "additionalProperties": False}}}


@dataclass(frozen=True)
class PromptedJudgement(Judgement):
    """A Judgement that keeps the prompt its judge was sent, so the samples file shows what was graded."""

    prompt: str = ""
    """The judge's one user message, as sent (the rubric rendered with the sample)."""


class Panel:
    """Who grades: a list of judge endpoints. Judges run at the temperature their entry sets (0 by default)."""

    def __init__(self, judges: Sequence[Endpoint]) -> None:
        self.judges = list(judges)

    @property
    def names(self) -> list[str]:
        """Judge names in panel order."""
        return [j.name for j in self.judges]

    def __len__(self) -> int:
        return len(self.judges)

    async def judge(self, prompt: str, parse: Parser, response_format: dict[str, Any] | None = None,
                    ) -> tuple[list[Judgement], dict[str, Any]]:
        """Every judge's Judgement for one prompt (one user message), plus per-judge usage.

        Each Judgement is a PromptedJudgement: its record (`to_dict`) carries the prompt as `prompt`.
        """
        results = await asyncio.gather(*(self._one(j, prompt, parse, response_format) for j in self.judges))
        judgements = [r[0] for r in results]
        usage = {j.name: asdict(r[1]) for j, r in zip(self.judges, results, strict=True)}
        return judgements, usage

    @staticmethod
    async def _one(judge: Endpoint, prompt: str, parse: Parser,
                   response_format: dict[str, Any] | None) -> tuple[Judgement, Usage]:
        # A call that fails after its retries raises CallError: no verdict was given, so the sample is
        # an error (asked again on resume), never an invalid judgement scored as a fail.
        out = await judge.complete([{"role": "user", "content": prompt}], response_format=response_format)
        verdict = parse(out.text)
        if not verdict.valid:
            return PromptedJudgement(judge=judge.name, status="invalid", raw=out.text, prompt=prompt), out.usage
        return PromptedJudgement(judge=judge.name, status="ok", verdict=verdict.label, score=verdict.score,
                                 explanation=verdict.explanation, raw=out.text, prompt=prompt), out.usage
