"""One MUGEN task: ask the audio model (or take a prediction file's reply), then the LLM judge decides.

Scoring follows the paper: the judge reads the instruction, the gold option and the reply (text only)
and says correct or incorrect; accuracy is correct / judged samples, an invalid judgement counting as
wrong. Records keep MUGEN's fields (`extra.input`, `extra.Explanation`, `extra.Judgement`), so MUGEN's
files and console lines come from the records alone (runner/benchmarks/mugen/reporter.py), and a resumed run asks
again only for samples that are not `ok` (failed calls and invalid judgements), reusing a reply already
generated (the earlier record comes from the pipeline, `Context.previous`).
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from runner.benchmarks.mugen import judging
from runner.benchmarks.mugen.audio import Clip, load_clip
from runner.benchmarks.mugen.catalog import CANDIDATE_COLUMNS, DIMENSION_OF, REFERENCE_COLUMN, hub_dataset, name_hint
from runner.benchmarks.mugen.choice import read_choice
from runner.benchmarks.mugen.prompting import PROMPTS, build_messages, letter_in_original_order, shuffled_order
from runner.errors import ConfigError
from runner.judges.panel import json_schema_format
from runner.metrics.core import majority_vote, mean
from runner.metrics.results import task_result
from runner.metrics.samples import mode_answer
from runner.run.store import record_key
from runner.tasks.base import BaseTask, Context, PlannedCall
from runner.tasks.templates import check, render
from runner.types import Judgement, ModelOutput, Sample, SampleRecord, TaskResult, Usage, reply_fields

log = logging.getLogger("runner")

JUDGE_FORMAT = json_schema_format(
    "judgement", {"explanation": {"type": "string", "maxLength": 400},
                  "judgement": {"type": "string", "enum": ["correct", "incorrect"]}},
    ["explanation", "judgement"])
PAPER_JUDGE = "claude-haiku-4-5-20251001"
_ANSWER = re.compile(r"\(?\s*([A-Ja-j])\s*\)?")
_NULL_EXPLANATION = "The response is null: no option was chosen."
_MISSING_EXPLANATION = "The record has no response: no option was chosen."


class MugenTask(BaseTask):
    """A MUGEN task over `MUGEN-Benchmark/<name>` (generation) or a prediction file (judging only)."""

    needs_judges = True
    headline = "accuracy"

    def __init__(self, name: str, dataset: str | None = None, split: str = "test", num_fewshot: int = 0,
                 params: Mapping[str, Any] | None = None, *, predictions: bool = False, strict: bool = False,
                 self_consistency: int = 1, answer_hint: bool = False, judge_prompt: str | None = None) -> None:
        if name not in DIMENSION_OF:
            raise ConfigError(f"benchmark.specs: '{name}' is not a MUGEN task{name_hint(name)}")
        super().__init__(name, dataset=dataset or hub_dataset(name), split=split, num_fewshot=num_fewshot,
                         params=params)
        self.dimension = DIMENSION_OF[name]
        self.predictions = bool(predictions)
        self.needs_model = not self.predictions
        self.needs_audio = self.needs_model
        """The model under test hears audio clips (runner/run/build.py refuses a text-only embedded model)."""
        self.strict = bool(strict)
        self.self_consistency = int(self_consistency)
        self.seeded = self.self_consistency > 1  # its candidate orders are shuffled from the seed
        self.reducer = "mode" if self.self_consistency > 1 else None
        """Self-consistency is the `mode` reducer (runner/metrics/samples.py) over k shuffled asks of one record:
        results.json says `reducer: mode`; with epochs, a sample's epochs vote the same way."""
        self.answer_hint = bool(answer_hint)
        self.judge_dir, self.judge_file = PROMPTS, "judge.j2"
        if judge_prompt:
            path = Path(judge_prompt).expanduser()
            if not path.is_file():
                raise ConfigError(f"benchmark.judge_prompt: file '{path}' not found; give the path of a Jinja "
                                  "file using instruction, answer, response and output")
            self.judge_dir, self.judge_file = path.resolve().parent, path.name
        # Compiled now, so a broken prompt stops the run before any request (its variables are checked on the
        # first sample when the run is planned: runner/run/pipeline.py `check_prompts`).
        check(self.judge_dir, self.judge_file, "benchmark.judge_prompt" if judge_prompt else f"benchmark.specs.{name}")
        check(PROMPTS, "generate.j2", f"benchmark.specs.{name}")
        # Filled by MugenBenchmark.load: every item's id in file/dataset order, the prediction records
        # by id (judging only) and their current responses (to notice an edited prediction file).
        self.order: list[Any] = []
        self.sources: dict[str, Any] = {}
        self.responses: dict[str, str | None] = {}
        self._judge_checked = False

    # ------------------------------------------------------------------ asking

    async def evaluate(self, sample: Sample, shots: Sequence[Sample], ctx: Context) -> SampleRecord:
        self._check_judge(ctx)
        usage: dict[str, Any] = {}
        extra: dict[str, Any] = {"dimension": self.dimension}
        reply: dict[str, Any] = {}
        n_options = 5
        if self.predictions:
            source = sample.metadata["record"]
            response, prompt = source.get("response"), sample.input
        else:
            response, prompt, source, n_options, gen = await self._generate(sample, ctx)
            usage["model"] = gen.pop("usage", {})
            reply = gen.pop("reply", {})
            extra.update(gen)
        if response is None:  # names no option: incorrect, no judge asked (MUGEN's own judge crashed here)
            judgements: list[Judgement] = []
            explanation = _NULL_EXPLANATION if "response" in source else _MISSING_EXPLANATION
            correct, verdict_text = 0.0, "incorrect"
        else:
            judgements, usage["judges"] = await self._judge(sample, response, ctx)
            correct, explanation, verdict_text = self._verdict(judgements)
        extra.update({"input": source, "Explanation": explanation, "Judgement": verdict_text})
        return SampleRecord(
            id=sample.id, task=self.name, prompt=prompt, reference=sample.target, response=response,
            answer=read_choice(response, n_options), judgements=[j.to_dict() for j in judgements],
            scores={"accuracy": correct}, status="ok" if all(j.status == "ok" for j in judgements) else "invalid",
            model=ctx.model.name if ctx.model is not None else None, usage=usage, extra=extra, **reply)

    async def _generate(self, sample: Sample, ctx: Context) -> tuple[Any, ...]:
        """(response, prompt as kept, the MUGEN record, number of options, extra record fields)."""
        assert ctx.model is not None
        row = sample.metadata["fetch"]()
        candidates = [load_clip(row[c], sample.metadata["base_dir"], c) for c in CANDIDATE_COLUMNS
                      if row.get(c) is not None]
        if not candidates:
            raise ValueError(f"row has no candidate clips ({', '.join(CANDIDATE_COLUMNS)} are all empty)")
        letter = _ANSWER.fullmatch(sample.target.strip())
        if letter is None or ord(letter.group(1).upper()) - ord("A") >= len(candidates):
            raise ValueError(f"answer '{sample.target}' is not one of the {len(candidates)} options "
                             f"(A)..({chr(ord('A') + len(candidates) - 1)})")
        reference = row.get(REFERENCE_COLUMN)
        ref_clip = load_clip(reference, sample.metadata["base_dir"], REFERENCE_COLUMN) if reference else None
        previous = self._previous_reply(sample, ctx)
        if previous is not None:  # a resumed sample whose judgement was invalid: judge the same reply again
            extra = {k: v for k, v in previous.get("extra", {}).items() if k == "self_consistency"}
            return (previous["response"], previous["prompt"], previous["extra"]["input"], len(candidates),
                    {**extra, "reused_response": True})
        if self.self_consistency <= 1:
            messages, kept = build_messages(sample.input, candidates, ref_clip, answer_hint=self.answer_hint)
            out = await ctx.model.complete(messages, params=self.params)
            source = {"id": sample.id, "instruction": sample.input, "answer": sample.target, "response": out.text}
            return out.text, kept, source, len(candidates), {"usage": _usage([out])}
        return await self._self_consistent(sample, ctx, candidates, ref_clip)

    async def _self_consistent(self, sample: Sample, ctx: Context, candidates: list[Clip],
                               reference: Clip | None) -> tuple[Any, ...]:
        """k replies, each with the candidates in a seeded shuffled order; the majority choice wins.

        Each reply's choice is read (runner.benchmarks.mugen.choice) in the order the model saw and
        mapped back to the dataset's letter. Ties go to the choice reached first; replies that name no
        single option do not vote. The voted letter, as "(X)", is the response the judge grades.
        """
        assert ctx.model is not None
        orders = [shuffled_order(len(candidates), f"{ctx.seed}:{self.name}:{sample.id}:{i}")
                  for i in range(self.self_consistency)]
        built = [build_messages(sample.input, [candidates[j] for j in order], reference,
                                answer_hint=self.answer_hint) for order in orders]
        outs = await asyncio.gather(*(ctx.model.complete(m, params=self.params) for m, _ in built))
        votes = [letter_in_original_order(read_choice(o.text, len(candidates)), order)
                 for o, order in zip(outs, orders, strict=True)]
        winner = mode_answer(votes)  # the mode reducer's vote: ties to the first reached, no choice no vote
        response = (f"({winner})" if winner else
                    f"No option: none of the {len(outs)} replies named a single clip.")
        generations = [{"order": [chr(ord("A") + j) for j in order], "response": o.text, "choice": v,
                        "finish_reason": o.finish_reason, **({"reasoning": o.reasoning} if o.reasoning else {})}
                       for o, order, v in zip(outs, orders, votes, strict=True)]
        # The record's reply fields: one generation's own; with several, `length` if any was cut.
        cut = next((o for o in outs if o.finish_reason == "length"), None)
        reply = {**reply_fields(outs[0] if len(outs) == 1 or cut is None else cut),
                 **({"reasoning": None} if len(outs) > 1 else {})}
        source = {"id": sample.id, "instruction": sample.input, "answer": sample.target, "response": response,
                  "generations": [g["response"] for g in generations]}
        return response, built[0][1], source, len(candidates), {"usage": _usage(outs), "reply": reply,
                                                                "self_consistency": generations}

    def _previous_reply(self, sample: Sample, ctx: Context) -> dict[str, Any] | None:
        """This sample's record from an earlier run into the same run dir (as the pipeline read it before
        this run appended any), if it holds a reply to reuse."""
        rec = ctx.previous.get(self.name, {}).get(record_key(sample.id))
        assert ctx.model is not None
        if (rec and rec.get("status") == "invalid" and isinstance(rec.get("response"), str)
                and rec.get("model") == ctx.model.name and "input" in (rec.get("extra") or {})):
            return rec
        return None

    async def _judge(self, sample: Sample, response: str, ctx: Context) -> tuple[list[Judgement], dict[str, Any]]:
        assert ctx.panel is not None
        prompt = render(self.judge_dir, self.judge_file, instruction=sample.input, answer=sample.target,
                        response=response, output="lines" if self.strict else "json")
        return await ctx.panel.judge(prompt, judging.reader(self.strict), None if self.strict else JUDGE_FORMAT)

    def _verdict(self, judgements: Sequence[Judgement]) -> tuple[float, str, str]:
        """(1.0 correct / 0.0 otherwise, MUGEN's Explanation, MUGEN's Judgement).

        One judge (the paper's setting): its verdict, an invalid one counting as wrong. A larger panel:
        the majority (⌊n/2⌋+1) of judges must say correct, as EVE's judge_voting.
        """
        read = judging.read_strict if self.strict else judging.read_lenient
        fields = []
        for j in judgements:  # ok or invalid: a judge call that kept failing raised CallError (an error record)
            reading = read(j.raw)
            fields.append((reading.explanation, reading.judgement))
        correct = majority_vote([j.passed for j in judgements])
        if len(judgements) == 1:
            return correct, fields[0][0], fields[0][1]
        invalid = [f[1] for f, j in zip(fields, judgements, strict=True) if j.status != "ok"]
        label = invalid[0] if invalid else ("correct" if correct else "incorrect")
        return correct, " | ".join(f"{j.judge}: {f[0]}" for j, f in zip(judgements, fields, strict=True)), label

    def _check_judge(self, ctx: Context) -> None:
        if self._judge_checked or ctx.panel is None:
            return
        self._judge_checked = True
        models = [j.model for j in ctx.panel.judges]
        if not any(m.endswith(PAPER_JUDGE) for m in models):
            log.info("MUGEN is judged by %s; the paper's judge is %s at temperature 0 (judges=mugen)",
                     ", ".join(models), PAPER_JUDGE)

    # ------------------------------------------------------------------ resume, metrics

    def fingerprint_parts(self, sample: Sample, shots: Sequence[Sample], ctx: Context) -> dict[str, Any]:
        """The base parts, with the row's place standing in for the function that fetches its audio (a
        bound method's text holds a memory address, so it would differ on every run)."""
        meta = dict(sample.metadata)
        fetch = meta.pop("fetch", None)
        if fetch is not None:
            meta["row"] = list(getattr(fetch, "args", ()))
        return super().fingerprint_parts(replace(sample, metadata=meta), shots, ctx)

    def rubric_texts(self) -> list[str]:
        return [(self.judge_dir / self.judge_file).read_text(encoding="utf-8")]

    def planned_calls(self, sample: Sample, shots: Sequence[Sample], judges: Sequence[str], reply: str | None,
                      seed: int) -> list[PlannedCall]:
        """The model's call(s) (one per self-consistency vote; the audio parts count no tokens, so the text
        is the bare instruction: inexact), then the judge, who reads the instruction, the gold option and
        the reply. A prediction without a response names no option: incorrect, no judge asked."""
        calls: list[PlannedCall] = []
        if self.predictions:
            reply = sample.metadata["record"].get("response")
            if reply is None:
                return []
        elif reply is None:
            calls.append(PlannedCall("model", [{"role": "user", "content": str(sample.input)}],
                                     calls=max(1, self.self_consistency), exact=False))
        prompt = render(self.judge_dir, self.judge_file, instruction=sample.input, answer=sample.target,
                        response=str(reply or ""), output="lines" if self.strict else "json")
        return calls + [PlannedCall("judge", [{"role": "user", "content": prompt}], judge=judge,
                                    holds_reply=reply is None) for judge in judges]

    def finished(self, record: Mapping[str, Any]) -> bool:
        """Only `ok` records are done: failed calls and invalid judgements are asked again. Judging a
        prediction folder, a record whose response has since changed in the file is judged again too."""
        if record.get("status") != "ok":
            return False
        key = record_key(record.get("id"))
        return not self.predictions or (key in self.responses and self.responses[key] == record.get("response"))

    def aggregate(self, records: Sequence[Mapping[str, Any]]) -> TaskResult:
        return task_result(records, lambda ok: {"accuracy": mean(_correct(r) for r in ok)},
                           zero={"accuracy": 0.0}, per_sample=lambda r: {"accuracy": _correct(r)})


def _correct(record: Mapping[str, Any]) -> float:
    return float((record.get("scores") or {}).get("accuracy", 0.0))


def _usage(outs: Sequence[ModelOutput]) -> dict[str, Any]:
    """Summed accounting of one or more model calls, with the served model id."""
    total = sum((o.usage for o in outs[1:]), start=outs[0].usage) if outs else Usage(cached=True)
    return {**asdict(total), "served_model": outs[0].model if outs else None}
