"""One pairwise comparison (`<model_a>_vs_<model_b>`): every judge picks the better answer, or a tie.

Position bias is handled here and only here. By default each judge sees one order per question, drawn
from the run's seed, the judge's name and the question (a SHA-256 hash, so every re-run and every
process shows the same order, as AlpacaEval does per instruction). With `orders=both` each judge sees
both orders (as OpenCompass does) and a model wins only when the two verdicts agree; otherwise the
judgement is a tie, and the disagreement is counted in the judge's `flip_rate`.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from runner.benchmarks.win_rate.data import Pairing, question_key
from runner.benchmarks.win_rate.metrics import TIE, pairwise_metrics
from runner.judges.panel import Panel, json_schema_format
from runner.judges.parsers import parse_winner
from runner.metrics.results import judge_names, task_result
from runner.models.litellm_model import Endpoint
from runner.tasks.base import BaseTask, Context, PlannedCall
from runner.tasks.templates import check, render
from runner.types import Sample, SampleRecord, TaskResult, Usage

ORDERS = ("one", "both")
WINNER_FORMAT = json_schema_format(
    "pairwise_verdict", {"explanation": {"type": "string", "maxLength": 400},
                         "winner": {"type": "string", "enum": ["A", "B", "tie"]}},
    ["explanation", "winner"])


def a_shown_first(seed: int, judge: str, question: str) -> bool:
    """Whether model A's answer is shown first to `judge` for `question` (orders=one).

    Python's hash() is salted per process, so the draw uses SHA-256 of the seed, the judge's name and
    the question (whitespace-collapsed, as the pairing uses it); about half the draws show A first.
    """
    digest = hashlib.sha256(f"{seed}\x1f{judge}\x1f{question_key(question)}".encode()).digest()
    return digest[0] % 2 == 0


class PairwiseTask(BaseTask):
    """Judge model A's answers against model B's, question by question, with every judge of the panel."""

    needs_model = False
    needs_judges = True
    seeded = True  # the order each judge sees is drawn from the seed

    def __init__(self, name: str, model_a: str, model_b: str, file_a: str, file_b: str, orders: str = "one",
                 with_reference: bool = False, prompt: str = "judge_pairwise.j2") -> None:
        super().__init__(name)
        self.model_a, self.model_b = model_a, model_b
        self.label_names = (model_a, model_b)
        self.file_a, self.file_b = file_a, file_b
        self.orders = orders
        self.with_reference = bool(with_reference)
        self.prompt = prompt
        check(self.prompt_dir, prompt, f"benchmark.specs.{name}.prompt")  # a broken prompt stops the run now
        self.headline = f"aggregate/{model_a}_alpaca_win_rate"
        self.pairing: Pairing | None = None
        """What the join kept and dropped; set when the benchmark loads this task."""

    @property
    def prompt_dir(self) -> Path:
        """The judge prompt's folder."""
        return Path(__file__).resolve().parent / "prompts"

    def rubric_texts(self) -> list[str]:
        return [(self.prompt_dir / self.prompt).read_text(encoding="utf-8")]

    def planned_calls(self, sample: Sample, shots: Sequence[Sample], judges: Sequence[str], reply: str | None,
                      seed: int) -> list[PlannedCall]:
        """One call per judge per order shown, each with both recorded answers: no model is asked."""
        answers = {self.model_a: sample.metadata["answer_a"], self.model_b: sample.metadata["answer_b"]}
        calls = []
        for judge in judges:
            for first in self.shown_first(seed, judge, sample.input):
                second = self.model_b if first == self.model_a else self.model_a
                prompt = render(self.prompt_dir, self.prompt, question=sample.input, answer_a=answers[first],
                                answer_b=answers[second], reference=sample.target if self.with_reference else "")
                calls.append(PlannedCall("judge", [{"role": "user", "content": prompt}], judge=judge))
        return calls

    def shown_first(self, seed: int, judge: str, question: str) -> list[str]:
        """The model shown first in each call this judge gets for this question."""
        if self.orders == "both":
            return [self.model_a, self.model_b]
        return [self.model_a if a_shown_first(seed, judge, question) else self.model_b]

    async def evaluate(self, sample: Sample, shots: Sequence[Sample], ctx: Context) -> SampleRecord:
        """Ask every judge (in one or both orders) and record per judge who was shown first and the verdict."""
        assert ctx.panel is not None
        answers = {self.model_a: sample.metadata["answer_a"], self.model_b: sample.metadata["answer_b"]}
        jobs = [(judge, first) for judge in ctx.panel.judges
                for first in self.shown_first(ctx.seed, judge.name, sample.input)]
        done = await asyncio.gather(*(self._ask(judge, first, sample, answers) for judge, first in jobs),
                                    return_exceptions=True)
        asked: list[tuple[dict[str, Any], dict[str, Any]]] = []
        for outcome in done:
            if isinstance(outcome, BaseException):
                # A judge call that kept failing (CallError) is no verdict: the sample is an error, asked
                # again on resume. The other calls were awaited first, so none is left running.
                raise outcome
            asked.append(outcome)
        calls: dict[str, list[dict[str, Any]]] = {judge.name: [] for judge in ctx.panel.judges}
        used: dict[str, list[dict[str, Any]]] = {judge.name: [] for judge in ctx.panel.judges}
        for (judge, _), (call, usage) in zip(jobs, asked, strict=True):
            calls[judge.name].append(call)
            used[judge.name].append(usage)
        entries = [combine(name, judge_calls) for name, judge_calls in calls.items()]
        # A judge whose reply did not parse gives no credit: its scores are null (missing), never a 0.
        scores: dict[str, float | None] = {}
        valid: list[float] = []
        for e in entries:
            for model in (self.model_a, self.model_b):
                given = credit(e["verdict"], model) if e["status"] == "ok" else None
                scores[f"alpaca_win_rate/{e['judge']}/{model}"] = given
                if given is not None and model == self.model_a:
                    valid.append(given)
        # The sample's headline value: model A's credit (1 win, 1/2 tie), mean over valid judges (null: none).
        scores[self.headline] = sum(valid) / len(valid) if valid else None
        return SampleRecord(
            id=sample.id, task=self.name, prompt=sample.input, reference=sample.target,
            response=f"{self.model_a}:\n{answers[self.model_a]}\n\n{self.model_b}:\n{answers[self.model_b]}",
            answer={e["judge"]: {"winner": e["verdict"] if e["status"] == "ok" else e["status"],
                                 "shown_first": [c["shown_first"] for c in e["calls"]]} for e in entries},
            judgements=entries, scores=scores,
            status="ok" if all(e["status"] == "ok" for e in entries) else "invalid", model=None,
            usage={"judges": {name: _sum_usage(parts) for name, parts in used.items()}},
            extra={"model_a": self.model_a, "model_b": self.model_b, "response_a": answers[self.model_a],
                   "response_b": answers[self.model_b], "id_a": sample.metadata.get("id_a"),
                   "id_b": sample.metadata.get("id_b"), "orders": self.orders,
                   "with_reference": self.with_reference})

    async def _ask(self, judge: Endpoint, first: str, sample: Sample, answers: Mapping[str, str],
                   ) -> tuple[dict[str, Any], dict[str, Any]]:
        second = self.model_b if first == self.model_a else self.model_a
        prompt = render(self.prompt_dir, self.prompt, question=sample.input, answer_a=answers[first],
                        answer_b=answers[second], reference=sample.target if self.with_reference else "")
        # A one-judge panel: each judge may see its own order, so each gets its own prompt.
        (j,), usage = await Panel([judge]).judge(prompt, parse_winner, WINNER_FORMAT)
        slot = {"A": first, "B": second, TIE: TIE}
        call = {"shown_first": first, "status": j.status, "slot_verdict": j.verdict,
                "verdict": slot.get(j.verdict or "") if j.status == "ok" else None,
                "explanation": j.explanation, "raw": j.raw, "prompt": prompt}
        return call, usage[judge.name]

    def aggregate(self, records: Sequence[Mapping[str, Any]]) -> TaskResult:
        """The CONTRACT's win-rate metrics from the records alone."""
        judges = judge_names(records)
        return task_result(records, lambda ok: pairwise_metrics(ok, judges, self.model_a, self.model_b),
                           zero=pairwise_metrics([], judges, self.model_a, self.model_b))


def combine(judge: str, calls: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One judge's judgement from its calls: one call as it is; two calls win only when they agree.

    An unparsable reply to either call makes the whole judgement invalid, so it is left out of the
    judge's denominators rather than counted on one order only.
    """
    status = "ok" if all(c["status"] == "ok" for c in calls) else "invalid"
    verdicts = {c["verdict"] for c in calls}
    verdict = (verdicts.pop() if len(verdicts) == 1 else TIE) if status == "ok" else None
    if len(calls) == 1:
        explanation, raw = calls[0]["explanation"], calls[0]["raw"]
    else:
        explanation = " | ".join(f"{c['shown_first']} first: {c['explanation']}" for c in calls)
        raw = "\n\n".join(f"[{c['shown_first']} first] {c['raw']}" for c in calls)
    entry: dict[str, Any] = {"judge": judge, "status": status, "verdict": verdict, "score": None,
                             "explanation": explanation, "raw": raw}
    if len(calls) == 1:
        entry["shown_first"] = calls[0]["shown_first"]
    entry["calls"] = [dict(c) for c in calls]
    return entry


def credit(verdict: str | None, model: str) -> float:
    """A model's alpaca credit for one verdict: 1 for a win, ½ for a tie, 0 for a loss."""
    return 1.0 if verdict == model else 0.5 if verdict == TIE else 0.0


def _sum_usage(parts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One judge's accounting over its calls (one per order), in the records' `usage.judges` shape."""
    usages = [Usage(**{f.name: part[f.name] for f in fields(Usage) if f.name in part}) for part in parts]
    return asdict(sum(usages[1:], start=usages[0])) if usages else {}
