"""A judge panel grades each reply with a rubric; any benchmark can use it from YAML alone.

`rubric` is a template (file or inline) that sees `question`, `reference`, `response`, `choices`,
`context` and the row's columns (`row.<column>`); `parser` says what the reply must carry; `vote` how
the panel's verdicts combine into the sample's `judge_vote`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.errors import ConfigError
from runner.judges.panel import json_schema_format
from runner.judges.parsers import Verdict, parse_binary, parse_grounded
from runner.metrics.core import mean, unanimous
from runner.metrics.named import VOTES, JudgePanel
from runner.solvers.chat import variables
from runner.tasks.base import PlannedCall
from runner.tasks.templates import Template, load_template
from runner.types import Judgement, Sample, Scored

if TYPE_CHECKING:
    from runner.tasks.base import Context

BINARY_FORMAT = json_schema_format(
    "judgement", {"judgement": {"type": "string", "enum": ["correct", "incorrect"]},
                  "explanation": {"type": "string", "maxLength": 400}},
    ["judgement", "explanation"])
GROUNDED_FORMAT = json_schema_format(
    "groundedness", {"grounded": {"type": "string", "enum": ["yes", "partial", "no", "unsure"]},
                     "explanation": {"type": "string", "maxLength": 400}},
    ["grounded", "explanation"])

# What a rubric asks the judge for: how its reply is read, and the JSON shape requested of it.
PARSERS: dict[str, tuple[Callable[[str | None], Verdict], dict[str, Any]]] = {
    "binary": (parse_binary, BINARY_FORMAT),
    "grounded": (parse_grounded, GROUNDED_FORMAT),
}


def per_sample_scores(judgements: Sequence[Judgement], vote: str = "majority") -> dict[str, float]:
    """A sample's scores: each judge's pass (invalid = 0), their mean, agreement and the panel vote."""
    values = [j.passed for j in judgements]
    scores = {f"judge/{j.judge}": j.passed for j in judgements}
    scores.update({"judge_avg": mean(values), "judge_unanimous": unanimous(values)})
    rule = VOTES[vote]
    if rule is not None:
        scores["judge_vote"] = rule(values)
    return scores


class Judged:
    """Every judge of the run's panel grades the reply with `rubric`."""

    def __init__(self, rubric: str, parser: str = "binary", vote: str = "majority",
                 structured: bool = True) -> None:
        for key, value, known in (("parser", parser, PARSERS), ("vote", vote, VOTES)):
            if value not in known:
                raise ConfigError(f"{key}: '{value}' is not one of {', '.join(known)}")
        self.spec, self.parser, self.vote = rubric, parser, vote
        self.structured = bool(structured)
        """Ask for the JSON shape with `response_format` (most providers and llama.cpp honour it)."""
        self.rubric: Template | None = None

    def prepare(self, folders: Sequence[Path], where: str) -> None:
        """Compile the rubric (at build time)."""
        self.rubric = load_template(self.spec, folders, f"{where}.rubric")

    def metrics(self) -> list[Any]:
        """The panel's metrics by default (per judge, mean, vote by this scorer's rule, agreement)."""
        return [JudgePanel(self.vote)]

    def score_names(self) -> list[str]:
        """The per-sample scores it gives: each judge's (`judge/<name>`), their mean, agreement and the vote."""
        return ["judge/*", "judge_avg", "judge_unanimous"] + (["judge_vote"] if VOTES[self.vote] is not None else [])

    def rubric_text(self) -> str:
        """The rubric as written (part of every judged record's fingerprint)."""
        assert self.rubric is not None
        return self.rubric.text

    def planned_calls(self, sample: Sample, reply: str | None, judges: Sequence[str]) -> list[PlannedCall]:
        """Each judge once, with the rubric rendered for this sample (the reply empty when not written yet)."""
        assert self.rubric is not None
        prompt = [{"role": "user", "content": self.rubric.render(**variables(sample), response=reply or "")}]
        return [PlannedCall("judge", prompt, judge=judge, holds_reply=reply is None) for judge in judges]

    async def __call__(self, sample: Sample, text: str, ctx: Context) -> Scored:
        """Ask every judge; a call that fails after its retries propagates (the sample is an error)."""
        assert ctx.panel is not None and self.rubric is not None
        prompt = self.rubric.render(**variables(sample), response=text)
        parse, fmt = PARSERS[self.parser]
        judgements, usage = await ctx.panel.judge(prompt, parse, fmt if self.structured else None)
        return Scored(scores=per_sample_scores(judgements, self.vote), judgements=judgements, judge_usage=usage)
