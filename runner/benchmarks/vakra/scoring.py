"""Scoring the last turn of a dialogue in VAKRA's order, and turning turn scores into a dialogue score.

1. (Optional) the policy judge, on the capabilities it applies to: a failed policy scores 0.
2. Exact match: every ground-truth tool response appears, as the very same string, among the last 20
   predicted responses. If it passes, the groundedness judge alone decides the turn.
3. Otherwise the correctness judge compares the answers; if correct, the groundedness judge decides.
A panel of several judges decides by majority (⌊n/2⌋+1); an unparseable reply counts as a fail and marks
the dialogue invalid, never as a silent 0. A judge call that still fails after its retries raises CallError,
so the dialogue becomes an error (left out of the domain mean, asked again on resume), not a verdict.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.judges.panel import Panel, json_schema_format
from runner.judges.parsers import parse_binary, parse_grounded
from runner.metrics.core import majority_vote
from runner.tasks.templates import render
from runner.types import Judgement

RESPONSE_WINDOW = 20
"""VAKRA considers at most the last 20 predicted tool responses of a turn."""
AGGREGATES = ("mean", "sum", "min")

CORRECTNESS_FORMAT = json_schema_format(
    "correctness", {"explanation": {"type": "string", "maxLength": 600},
                    "judgement": {"type": "string", "enum": ["correct", "incorrect"]}},
    ["explanation", "judgement"])
GROUNDED_FORMAT = json_schema_format(
    "groundedness", {"explanation": {"type": "string", "maxLength": 600},
                     "grounded": {"type": "string", "enum": ["yes", "partial", "no", "unsure"]}},
    ["explanation", "grounded"])


@dataclass(frozen=True)
class PolicyVerdict:
    """What the policy judge said: 1.0 when the tool-use policy was followed."""

    score: float
    explanation: str = ""


@dataclass
class TurnScore:
    """The scored last turn, with every step's outcome (None: the step was not reached)."""

    score: float = 0.0
    exactmatch: float | None = None
    correctness: float | None = None
    groundedness: float | None = None
    policy: float | None = None
    explanations: dict[str, str] = field(default_factory=dict)
    judgements: list[dict[str, Any]] = field(default_factory=list)
    """Each judge's Judgement, plus the `rubric` it answered (correctness or groundedness)."""
    usage: dict[str, Any] = field(default_factory=dict)

    @property
    def invalid(self) -> bool:
        """A judge reply could not be parsed."""
        return any(j["status"] != "ok" for j in self.judgements)

    def scores(self) -> dict[str, float]:
        """The per-sample scores of the record (steps not reached are left out)."""
        steps = {"exact_match": self.exactmatch, "correctness": self.correctness,
                 "groundedness": self.groundedness, "policy": self.policy}
        return {"turn_score": self.score, **{k: v for k, v in steps.items() if v is not None}}


def exact_match(expected: Sequence[str], actual: Sequence[str], window: int = RESPONSE_WINDOW
                ) -> tuple[float, str]:
    """1.0 if every expected response is among the last `window` actual ones (raw string equality)."""
    recent = list(actual)[-window:] if window > 0 else list(actual)
    missing = [e for e in expected if e not in recent]
    considered = f"the last {len(recent)} of {len(actual)} predicted responses"
    if not missing:
        return 1.0, f"all {len(expected)} ground-truth response(s) found among {considered}"
    return 0.0, f"{len(missing)} of {len(expected)} ground-truth response(s) not found among {considered}"


def aggregate(scores: Sequence[float], how: str) -> float:
    """A dialogue's score from its scored turns: mean (VAKRA's default), sum or min; 0.0 for none."""
    if not scores:
        return 0.0
    if how == "sum":
        return float(sum(scores))
    if how == "min":
        return float(min(scores))
    return sum(scores) / len(scores)


def compact(text: str) -> str:
    """Whitespace collapsed (tool outputs are pretty-printed JSON; the judges need the content only)."""
    return " ".join(str(text).split())


class TurnScorer:
    """Runs the waterfall for one turn with the run's judge panel."""

    def __init__(self, prompt_dir: Path, correctness_prompt: str, groundedness_prompt: str,
                 window: int = RESPONSE_WINDOW) -> None:
        self.prompt_dir = prompt_dir
        self.correctness_prompt = correctness_prompt
        self.groundedness_prompt = groundedness_prompt
        self.window = window

    async def score(self, panel: Panel, *, query: str, gt_answer: str, pred_answer: str,
                    gt_responses: Sequence[str], pred_responses: Sequence[str],
                    policy: Callable[[], Awaitable[PolicyVerdict]] | None = None) -> TurnScore:
        """Score one turn; judges are asked only where VAKRA's order reaches them."""
        out = TurnScore()
        if policy is not None:
            verdict = await policy()
            out.policy = verdict.score
            out.explanations["policy"] = verdict.explanation
            if verdict.score < 1.0:
                out.explanations["exactmatch"] = "not checked: the tool-use policy was not followed"
                return out
        out.exactmatch, out.explanations["exactmatch"] = exact_match(gt_responses, pred_responses, self.window)
        if out.exactmatch < 1.0:
            if not gt_answer.strip() and not pred_answer.strip():
                out.correctness, out.explanations["answer"] = 1.0, "both answers are empty"
            else:
                prompt = render(self.prompt_dir, self.correctness_prompt, question=compact(query),
                                ground_truth=compact(gt_answer), prediction=compact(pred_answer))
                out.correctness, out.explanations["answer"] = await self._ask(
                    panel, prompt, "correctness", out, parse_binary, CORRECTNESS_FORMAT)
            if out.correctness < 1.0:
                return out
        evidence = [compact(r) for r in list(pred_responses)[-self.window:]] if self.window > 0 else \
            [compact(r) for r in pred_responses]
        prompt = render(self.prompt_dir, self.groundedness_prompt, query=compact(query), outputs=evidence,
                        answer=compact(pred_answer))
        out.groundedness, out.explanations["groundedness"] = await self._ask(
            panel, prompt, "groundedness", out, parse_grounded, GROUNDED_FORMAT)
        out.score = out.groundedness
        return out

    @staticmethod
    async def _ask(panel: Panel, prompt: str, rubric: str, out: TurnScore, parser: Any,
                   response_format: dict[str, Any]) -> tuple[float, str]:
        judgements, usage = await panel.judge(prompt, parser, response_format)
        out.judgements.extend({**j.to_dict(), "rubric": rubric} for j in judgements)
        for name, numbers in usage.items():
            total = out.usage.setdefault(name, {})
            for key, value in numbers.items():
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    total[key] = total.get(key, 0) + value
        return majority_vote([j.passed for j in judgements]), _explain(judgements)


def _explain(judgements: Sequence[Judgement]) -> str:
    parts = []
    for j in judgements:
        if j.status == "ok":
            parts.append(f"{j.judge}: {j.verdict}" + (f" ({j.explanation})" if j.explanation else ""))
        else:
            parts.append(f"{j.judge}: {j.status} reply, counted as a fail")
    return "; ".join(parts)
