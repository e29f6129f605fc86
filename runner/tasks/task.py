"""A task as data + solver + scorers + metrics, each chosen in YAML: a new judged or numeric benchmark
needs a YAML file, a prompt file and a data file, and no Python.

```yaml
specs:
  arithmetic:
    _target_: runner.tasks.task.Task
    fields: {input: question, target: answer}         # row columns -> Sample (or rows: {_target_: ...})
    solver: {_target_: runner.solvers.chat.Chat, user: arithmetic.j2}
    scorers:                                           # a list, or named: {numeric: {...}, ...}
      - {_target_: runner.scorers.numeric.Numeric, rel_tol: 0.01}
    metrics: [mean:accuracy]                           # default: what the scorers give
    reducer: mode                                      # with epochs>1: how a sample's epochs combine (default mean)
```
Templates are found in `prompt_dir`, then beside the data (`benchmark.data_dir`), or written inline.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from difflib import get_close_matches
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, Protocol

from runner.config import instantiate, plain
from runner.errors import ConfigError
from runner.metrics.named import Aggregation, aggregation
from runner.metrics.results import task_result
from runner.metrics.samples import check_reducer
from runner.tasks.base import BaseTask, Context, PlannedCall, require, sample_id
from runner.types import CURRENT_REPLY, Sample, SampleRecord, Scored, Solved, TaskResult, record_usage, reply_fields


class Solver(Protocol):
    """How a sample is asked."""

    def prepare(self, folders: Sequence[Path], where: str) -> None: ...

    calls: int
    """How many model calls one sample takes at most (1 for one chat call; votes, critique and revise: more)."""

    def messages(self, sample: Sample, shots: Sequence[Sample]) -> list[dict[str, str]]: ...
    """What the model is asked (its first call's messages, for a solver that makes several)."""

    async def __call__(self, sample: Sample, shots: Sequence[Sample], ctx: Context,
                       params: dict[str, Any]) -> Solved: ...
    """Ask the model under test, once or several times: every output in order, the last one the answer."""


class Scorer(Protocol):
    """How a reply is scored."""

    def prepare(self, folders: Sequence[Path], where: str) -> None: ...

    def metrics(self) -> list[Any]: ...
    """Its default metrics: aggregation names (`mean:accuracy`) or aggregation objects."""

    async def __call__(self, sample: Sample, text: str, ctx: Context) -> Scored: ...

    # Optional:
    # * `planned_calls(sample, reply, judges) -> list[PlannedCall]`, the requests scoring one sample sends (a
    #   judged scorer's judges, a choice scorer's extractor), for dry runs; a scorer without it sends none.
    # * `score_names() -> list[str]`, the per-sample scores it gives (`fnmatch` patterns for a family, e.g.
    #   `judge/*`), so a metric naming a score no scorer gives and two scorers giving one score stop the run
    #   before any request; a scorer without it is trusted (its metrics are not checked).
    # * `check(sample) -> None`, raising ValueError when it could not score any reply to `sample` (a reference
    #   a numeric scorer cannot read): the row is recorded as a bad row and never sent.


RowAdapter = Callable[[Mapping[str, Any], int], Sample]


class Task(BaseTask):
    """data (a `fields` map from row columns) + solver + scorers + named metrics."""

    def __init__(self, name: str, solver: Mapping[str, Any], scorers: Sequence[Any] | Mapping[str, Any],
                 fields: Mapping[str, Any] | None = None, rows: Mapping[str, Any] | None = None,
                 metrics: Sequence[str] | None = None, headline: str | None = None,
                 dataset: str | None = None, split: str = "train", num_fewshot: int = 0,
                 params: Mapping[str, Any] | None = None, prompt_dir: str | None = None,
                 revision: str | None = None, reducer: str | None = None,
                 requires: Mapping[str, Any] | None = None) -> None:
        super().__init__(name, dataset=dataset, split=split, num_fewshot=num_fewshot, params=params,
                         revision=revision)
        self.require_params(plain(requires) or {})  # values the task cannot do without: a run may not override them
        where = f"benchmark.specs.{name}"
        self.reducer = check_reducer(reducer, f"{where}.reducer")
        """How a sample's epochs combine before its metrics (runner/metrics/samples.py); None: `mean`."""
        self.fields = dict(plain(fields) or {"input": "question", "target": "answer"})
        for key in ("input", "target"):
            if key not in self.fields:
                raise ConfigError(f"{where}.fields: no '{key}' column named (e.g. fields: {{input: question, "
                                  "target: answer}})")
        self.rows: RowAdapter | None = instantiate(rows, f"{where}.rows") if rows else None
        self.solver: Solver = instantiate(solver, f"{where}.solver")
        named = dict(scorers) if isinstance(scorers, Mapping) else {str(i): s for i, s in enumerate(scorers or [])}
        if not named:
            raise ConfigError(f"{where}.scorers: a task needs at least one scorer")
        self.scorers: dict[str, Scorer] = {k: instantiate(s, f"{where}.scorers.{k}") for k, s in named.items()}
        self._metric_specs = list(metrics or [])
        self.aggregations: list[Aggregation] = []
        self._headline = headline
        self.prompt_dir = Path(prompt_dir) if prompt_dir else None
        self.needs_judges = any(hasattr(s, "rubric_text") for s in self.scorers.values())
        self._declared: list[str] = []

    def prepare(self, folders: Sequence[Path]) -> None:
        """Compile every template and check every scorer's needs now, so a missing template or library
        stops the run before any call; then settle the metrics."""
        where = f"benchmark.specs.{self.name}"
        search = ([self.prompt_dir] if self.prompt_dir else []) + list(folders)
        self.solver.prepare(search, where)
        for key, scorer in self.scorers.items():
            scorer.prepare(search, f"{where}.scorers.{key}")
        declared = {key: list(s.score_names()) for key, s in self.scorers.items() if hasattr(s, "score_names")}
        _unique_scores(declared, f"{where}.scorers")
        # A declared score a scorer did not give a sample is written null in its record: missing, explicitly.
        self._declared = [n for names in declared.values() for n in names if not any(c in n for c in "*?[")]
        specs = self._metric_specs or [m for s in self.scorers.values() for m in s.metrics()]
        self.aggregations = [aggregation(m) if isinstance(m, str) else m for m in specs]
        if len(declared) == len(self.scorers):  # a score of a scorer that says nothing cannot be checked
            _known_scores(self.aggregations, specs, [n for names in declared.values() for n in names],
                          f"{where}.metrics")
        self.headline = self._headline or (self.aggregations[0].headline() if self.aggregations else "accuracy")
        self._check_reducer(where)

    def _check_reducer(self, where: str) -> None:
        """A reducer of scores cannot combine metrics that count answers; `mode` needs a scorer that reads one."""
        if self.reducer is None or self.reducer == "mean":
            return
        if self.reducer == "mode":
            from runner.scorers.choice import Choice
            from runner.scorers.numeric import Numeric

            if not any(isinstance(s, (Choice, Numeric)) or getattr(s, "reads_answer", False)
                       for s in self.scorers.values()):
                raise ConfigError(f"{where}.reducer: mode votes on the answers a scorer reads (choice, numeric), "
                                  "and this task's scorers read none; use mean, max, min, median or pass_at_k")
            return
        for agg in self.aggregations:
            if not getattr(agg, "reducible", True):
                raise ConfigError(f"{where}.reducer: {self.reducer} combines scores, but {type(agg).__name__} "
                                  f"counts answers (precision, recall, F1); use mode or mean")

    def check_sample(self, sample: Sample) -> None:
        """ValueError when a scorer could not score any reply to `sample` (runner/run/pipeline.py records it as a
        bad row, never sent): each scorer's optional `check`."""
        for key, scorer in self.scorers.items():
            check = getattr(scorer, "check", None)
            if check is not None:
                try:
                    check(sample)
                except ValueError as exc:
                    raise ValueError(f"scorer {key} ({type(scorer).__name__}): {exc}") from None

    def to_sample(self, row: Mapping[str, Any], index: int) -> Sample:
        if self.rows is not None:
            return self.rows(row, index)
        f = self.fields
        require(row, f["input"], f["target"])
        choices = tuple(str(c) for c in row[f["choices"]]) if f.get("choices") else ()
        context = tuple(str(row[c]) for c in f.get("context") or () if row.get(c) is not None)
        target = row[f["target"]]
        sid = row[f["id"]] if f.get("id") and row.get(f["id"]) is not None else sample_id(row, index)
        return Sample(id=sid, input=str(row[f["input"]]), target=target, choices=choices, context=context,
                      metadata={"row": dict(row)})

    def fingerprint_parts(self, sample: Sample, shots: Sequence[Sample], ctx: Context) -> dict[str, Any]:
        parts = super().fingerprint_parts(sample, shots, ctx)
        if isinstance(parts.get("task"), Mapping) and "reducer" in parts["task"]:
            # The reducer combines finished records; it decides none of them, so a changed one asks nothing again.
            parts["task"] = {k: v for k, v in parts["task"].items() if k != "reducer"}
        return {**parts, "prompt": self.solver.messages(sample, shots)}

    def sample_scores(self, record: Mapping[str, Any]) -> dict[str, float | None]:
        return {k: v for a in self.aggregations for k, v in a.per_sample(record).items()}

    def rubric_texts(self) -> list[str]:
        return [s.rubric_text() for s in self.scorers.values() if hasattr(s, "rubric_text")]

    def planned_calls(self, sample: Sample, shots: Sequence[Sample], judges: Sequence[str], reply: str | None,
                      seed: int) -> list[PlannedCall]:
        """The solver's messages (`calls` of them at most), then what each scorer says it would send."""
        calls: list[PlannedCall] = []
        if reply is None:
            calls.append(PlannedCall("model", list(self.solver.messages(sample, shots)), calls=self.solver.calls))
        for scorer in self.scorers.values():
            planned = getattr(scorer, "planned_calls", None)  # optional in the Scorer protocol
            if planned is not None:
                calls += planned(sample, reply, judges)
        return calls

    def finished(self, record: Mapping[str, Any]) -> bool:
        """Done unless an error, or a kept record lacks a score a scorer now gives (e.g. a new metric)."""
        return super().finished(record) and all(
            s.has_scores(record) for s in self.scorers.values() if hasattr(s, "has_scores"))

    async def evaluate(self, sample: Sample, shots: Sequence[Sample], ctx: Context) -> SampleRecord:
        solved = await self.solver(sample, shots, ctx, self.params)
        # Concurrently: the judges are asked while reference metrics compute in a worker thread. The scorers see
        # the answer alone (never the reasoning) and, through CURRENT_REPLY, whether it was cut.
        reply = CURRENT_REPLY.set(solved.output)
        try:
            scored = await asyncio.gather(*(scorer(sample, solved.text, ctx) for scorer in self.scorers.values()))
        finally:
            CURRENT_REPLY.reset(reply)
        judgements = [j for s in scored for j in s.judgements]
        # What a scorer says about its reading (a choice scorer: who read the reply, runner/scorers/choice.py).
        extra = {**solved.extra, **{k: v for s in scored for k, v in getattr(s, "extra", {}).items()}}
        read_by = extra.pop("read_by", None)
        assert ctx.model is not None
        return SampleRecord(
            id=sample.id, task=self.name, prompt=solved.messages, reference=sample.target, response=solved.text,
            answer=next((s.answer for s in scored if s.answer is not None), None),
            judgements=[j.to_dict() for j in judgements],
            scores={**dict.fromkeys(self._declared), **{k: v for s in scored for k, v in s.scores.items()}},
            status="invalid" if any(j.status != "ok" for j in judgements) else "ok", model=ctx.model.name,
            usage=record_usage(solved, {k: v for s in scored for k, v in s.judge_usage.items()}),
            extra=extra, read_by=read_by, **reply_fields(solved.output))

    def aggregate(self, records: Sequence[Mapping[str, Any]]) -> TaskResult:
        scored = [r for r in records if r.get("status") != "error"]
        # The headline first: "the first metric the task reports" is what a sweep's pairs compare.
        keys = sorted((k for a in self.aggregations for k in a.keys(scored)), key=lambda k: k != self.headline)

        def metrics(ok: Sequence[Mapping[str, Any]]) -> dict[str, float | None]:
            values = {k: v for a in self.aggregations for k, v in a.compute(ok).items()}
            return {k: values[k] for k in sorted(values, key=lambda k: k != self.headline)}

        result = task_result(
            records, metrics, zero=dict.fromkeys(keys, 0.0),
            per_sample=lambda r: {k: v for a in self.aggregations for k, v in a.per_sample(r).items()})
        for scorer in self.scorers.values():  # counts that are not rates (a choice scorer: replies read each way)
            result.counts.update(scorer.counts(records) if hasattr(scorer, "counts") else {})
        return result


def _unique_scores(declared: Mapping[str, Sequence[str]], where: str) -> None:
    """Two scorers of one task giving the same score would be merged in each record, the last one winning."""
    keys = list(declared)
    for i, a in enumerate(keys):
        for b in keys[i + 1:]:
            both = [x for x in declared[a] for y in declared[b] if fnmatchcase(x, y) or fnmatchcase(y, x)]
            if both:
                raise ConfigError(f"{where}: scorers {a} and {b} both give the score '{both[0]}', and a record keeps "
                                  "one value per score name; keep one of them, or split them into two tasks")


def _known_scores(aggregations: Sequence[Aggregation], specs: Sequence[Any], names: Sequence[str],
                  where: str) -> None:
    """Every metric reading a per-sample score (`mean:<score>`, `median:<score>`, any aggregation with a
    `score`) must name one the task's scorers give: a typo would otherwise fail after every sample was asked."""
    for agg, spec in zip(aggregations, specs, strict=True):
        score = getattr(agg, "score", None)
        if isinstance(score, str) and not any(fnmatchcase(score, n) for n in names):
            close = get_close_matches(score, [n for n in names if "*" not in n], n=1)
            raise ConfigError(f"{where}: '{spec}' reads the score '{score}', which no scorer of the task gives "
                              f"(they give {', '.join(names) or 'none'})"
                              + (f"; did you mean '{close[0]}'?" if close else "; name one of those"))
