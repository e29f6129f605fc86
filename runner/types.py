"""Core value types shared by benchmarks, tasks, judges, the pipeline and the trackers."""

from __future__ import annotations

import re
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Status = Literal["ok", "invalid", "error"]

CURRENT_SAMPLE: ContextVar[tuple[str, str] | None] = ContextVar("current_sample", default=None)
CURRENT_EPOCH: ContextVar[tuple[int, int] | None] = ContextVar("current_epoch", default=None)
"""(epoch, seed) of the sample being asked when a run has several epochs: every request of that job carries
the seed (so each epoch is its own request and cache entry); None with one epoch."""
"""(task name, sample id as a string) of the sample being evaluated, set by the pipeline: lets an
endpoint that replays recorded replies (runner.rejudge) find the one for this sample."""
CURRENT_NOTES: ContextVar[list[str] | None] = ContextVar("current_notes", default=None)
"""What was done to untrusted input while the current sample was asked (a reply's lone surrogates replaced,
impossible token counts left uncounted): runner/run/jobs.py puts it in the sample's record as `notes`."""

SURROGATE = re.compile("[\ud800-\udfff]")
"""A lone surrogate: half of a UTF-16 pair (e.g. a cut emoji, JSON "\\ud83d"). Python text may hold one, but
no UTF-8 file can, so every writer of untrusted text replaces it with U+FFFD."""


def note(text: str) -> None:
    """Say in the current sample's record what was done to its input (outside a sample: nothing)."""
    notes = CURRENT_NOTES.get()
    if notes is not None and text not in notes:
        notes.append(text)


def clean_text(text: str) -> tuple[str, int]:
    """`text` with each lone surrogate replaced by U+FFFD, and how many were replaced."""
    if text.isascii():  # O(1): most text; no surrogate is ASCII
        return text, 0
    return SURROGATE.subn("\ufffd", text)


def clean_strings(values: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """`values` with every text value cleaned (`clean_text`), and how many surrogates were replaced."""
    cleaned = {k: clean_text(v) if isinstance(v, str) else (v, 0) for k, v in values.items()}
    return {k: v for k, (v, _) in cleaned.items()}, sum(n for _, n in cleaned.values())



def letters(n: int) -> list[str]:
    """Option labels A, B, C, ... for n options, in dataset order (as EVE labels them)."""
    return [chr(ord("A") + i) for i in range(n)]

@dataclass(frozen=True)
class Sample:
    """One item of a task, as the task will ask it."""

    id: Any
    """The dataset's own id (`id`, `uuid`, `qid`, ...) where rows have one, else the 0-based row index."""
    input: str
    """The question or instruction."""
    target: Any
    """The reference: a letter, a list of letters, a text or a boolean, depending on the task."""
    choices: tuple[str, ...] = ()
    """Option texts in dataset order; labelled A, B, C, ... in prompts."""
    context: tuple[str, ...] = ()
    """Documents shown with the question (RAG-style tasks)."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """Anything else a task needs from the row (never shown unless the task says so)."""


@dataclass(frozen=True)
class Usage:
    """Token and cost accounting of one call; cache hits cost nothing."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = 0.0
    """USD; None when the price is not known (never a 0 made of nothing); cache hits cost 0."""
    cached: bool = False
    retries: int = 0
    reasoning_tokens: int = 0
    """Of `completion_tokens`, those the model spent reasoning (as the provider reports them; 0: none said)."""

    def __add__(self, other: Usage) -> Usage:
        """The accounting of both calls: every count summed, `cached` only when both were cache hits."""
        return Usage(prompt_tokens=self.prompt_tokens + other.prompt_tokens,
                     completion_tokens=self.completion_tokens + other.completion_tokens,
                     cost=None if self.cost is None or other.cost is None else self.cost + other.cost,
                     cached=self.cached and other.cached,
                     retries=self.retries + other.retries,
                     reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens)


@dataclass(frozen=True)
class ModelOutput:
    """What one chat completion returned."""

    text: str
    """The assistant message content ('' when the model said nothing), without its reasoning."""
    model: str
    """The served model id the provider reported."""
    usage: Usage = field(default_factory=Usage)
    finish_reason: str | None = None
    """Why the reply ended, as the provider says: `stop`, `length` (cut at the token limit), `tool_calls`,
    `content_filter`; None when it said nothing."""
    reasoning: str | None = None
    """What the model thought before it answered (a provider's reasoning field or thinking blocks, or a leading
    `<think>` block of the content, closed or not); None when there is none. Never in `text`."""
    tool_calls: tuple[dict[str, str], ...] = ()
    """Function calls the model asked for, in its order: `{"id", "name", "arguments"}` (arguments as the
    JSON text the model wrote, unparsed: a malformed one is the model's answer, not the runner's error)."""


def reply_fields(output: ModelOutput | None) -> dict[str, Any]:
    """A record's fields about the model's final reply: `finish_reason`, `reasoning`, `served_model`."""
    if output is None:
        return {"finish_reason": None, "reasoning": None, "served_model": None}
    return {"finish_reason": output.finish_reason, "reasoning": output.reasoning, "served_model": output.model}


def record_usage(solved: Solved | None, judges: dict[str, Any]) -> dict[str, Any]:
    """A record's `usage`: the model's calls (`model`), each judge's (`judges`) and, where the provider reported
    any, the model's `reasoning_tokens` (part of its completion tokens)."""
    model = solved.usage() if solved is not None else None
    out: dict[str, Any] = {**({"model": model} if model is not None else {}), "judges": judges}
    if model is not None and model.get("reasoning_tokens"):
        out["reasoning_tokens"] = model["reasoning_tokens"]
    return out


CURRENT_REPLY: ContextVar[ModelOutput | None] = ContextVar("current_reply", default=None)
"""The model's reply being scored (set by the task while its scorers run): a scorer that reads an answer needs
its `finish_reason` (a reply cut at the token limit is read only from an explicit answer statement)."""


@dataclass(frozen=True)
class Solved:
    """What a solver did for one sample: every call it made, in order, the last one being the answer.

    One chat call is one output; a method that asks several times (self-consistency votes, critique and
    revise, candidates in several orders) keeps all of them, and the sample's usage is their sum.
    """

    messages: list[dict[str, Any]]
    """What the answer was asked with (the record's `prompt`)."""
    outputs: tuple[ModelOutput, ...]
    extra: dict[str, Any] = field(default_factory=dict)
    """What the method wants kept in the record (`extra`), e.g. the votes it counted."""

    @property
    def output(self) -> ModelOutput:
        """The answer: the last call's output."""
        return self.outputs[-1]

    @property
    def text(self) -> str:
        return self.output.text

    def usage(self) -> dict[str, Any]:
        """The record's `usage.model`: every call's accounting summed, with the served model id."""
        total = self.outputs[0].usage
        for out in self.outputs[1:]:
            total = total + out.usage
        return {**total.__dict__, "served_model": self.output.model, **({"calls": len(self.outputs)}
                                                                       if len(self.outputs) > 1 else {})}


@dataclass(frozen=True)
class Judgement:
    """One judge's verdict on one sample."""

    judge: str
    """The judge entry's `name`."""
    status: Status
    """`ok` when the reply parsed, `invalid` when it did not."""
    verdict: str | None = None
    """The parsed label (`correct`, `incorrect`, `yes`, `A`, ...); None unless status is ok."""
    score: float | None = None
    """1.0 pass / 0.0 fail for binary rubrics; None unless status is ok."""
    explanation: str = ""
    raw: str = ""
    """The judge's raw reply (or the error text), kept so nothing is lost."""

    @property
    def passed(self) -> float:
        """The value metrics use: invalid and failed judgements count as a fail, as in the seeds."""
        return self.score if self.status == "ok" and self.score is not None else 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form for the samples file."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Judgement:
        """Inverse of `to_dict`."""
        score = d.get("score")
        return cls(judge=str(d.get("judge")), status=d.get("status") or "invalid", verdict=d.get("verdict"),
                   score=None if score is None else float(score), explanation=d.get("explanation") or "",
                   raw=d.get("raw") or "")


@dataclass
class Scored:
    """What a scorer makes of one reply: the answer it read, per-sample scores, and any judgements."""

    answer: Any = None
    scores: dict[str, float] = field(default_factory=dict)
    judgements: list[Judgement] = field(default_factory=list)
    judge_usage: dict[str, Any] = field(default_factory=dict)
    """Per judge: the usage of its call(s), as in `SampleRecord.usage["judges"]`."""


@dataclass
class SampleRecord:
    """One line of `samples/<task>.jsonl`; every metric is recomputable from these lines alone."""

    id: Any
    task: str
    prompt: Any
    """The messages sent to the model under test (or the instruction for judged-only runs)."""
    reference: Any
    response: str | None = None
    answer: Any = None
    """What the task read from the response (a letter, a set of letters, ...); None if nothing."""
    judgements: list[dict[str, Any]] = field(default_factory=list)
    scores: dict[str, float | None] = field(default_factory=dict)
    status: Status = "ok"
    """`ok`; `invalid` when a judge reply could not be parsed; `error` when a call failed after its
    retries (the sample is asked again on resume)."""
    error: str | None = None
    model: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    """Per-role accounting: {"model": {...}, "judges": {name: {...}}}."""
    extra: dict[str, Any] = field(default_factory=dict)
    finish_reason: str | None = None
    """Why the model's final reply ended (`stop`, `length`: cut at the token limit, `tool_calls`, ...); None when
    the provider said nothing or no model was asked."""
    reasoning: str | None = None
    """The model's reasoning before its final reply (never in `response`; readers and judges never see it)."""
    served_model: str | None = None
    """The model the provider's reply names (e.g. a dated snapshot)."""
    read_by: str | None = None
    """Who read the answer from a multiple-choice reply: `rules`, or `extractor` (the task's extractor model,
    whose raw reply is in `extra.extractor`); None where no choice scorer read one."""
    epoch: int = 0
    """Which of the run's `epochs` this record answers (0 ... epochs-1)."""
    fingerprint: str = ""
    """What decided this record (data, prompt, model, judges), as `part=digest` pairs; a resume keeps a
    record only while its fingerprint matches the current configuration."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        # Shallow: every field already holds JSON-ready values (judgements are dicts), and asdict's deep
        # copy of the prompt and usage was 0.17 ms per sample, a tenth of the runner's CPU per request.
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


@dataclass
class TaskResult:
    """The per-task block of `results.json`."""

    n: int
    n_invalid: int
    invalid_ids: list[Any]
    metrics: dict[str, float | None]
    """Each metric's value; None (null) when no sample was scored."""
    n_errors: int = 0
    error_ids: list[Any] = field(default_factory=list)
    stderr: dict[str, float | None] = field(default_factory=dict)
    """Standard error of each metric that is a mean over samples (absent for P/R/F1 and the like; null below two
    samples with a value, where it is undefined)."""
    counts: dict[str, int] = field(default_factory=dict)
    """Task-specific counts that are not rates (kept out of `metrics`, whose values are rates)."""
    n_truncated: int = 0
    """Scored replies whose final reply ended at the token limit (`finish_reason` `length`): read only from an
    explicit answer statement before the cut, judged as they are, and counted here (raise `max_tokens`)."""
    n_missing: dict[str, int] = field(default_factory=dict)
    """Per metric that is a mean over samples: the scored samples that have no value of it (a score a scorer
    gave only sometimes, agreement where no judge gave a parsed verdict), left out of its mean; only metrics
    with some missing are listed."""
    ci: dict[str, list[float] | None] = field(default_factory=dict)
    """A 95 % interval per metric (null where the metric is null): Wilson for a mean of 0/1 sample scores,
    else a seeded bootstrap over the samples (runner/metrics/uncertainty.py)."""
    reliable: dict[str, bool] = field(default_factory=dict)
    """Per metric with an interval: whether its method holds 95 % coverage at this n (bench/bench_coverage.py,
    docs/statistics.md); the table marks those that do not with `*`."""
    judge_stats: dict[str, Any] | None = None
    """Judge reliability on a task judged by two or more judges (kappas, intervals, invalid rates)."""
    data: dict[str, Any] | None = None
    """Which data the task was scored on: `{source, revision, rows, sha256}` (runner/run/provenance.py)."""
    epochs: int = 1
    by_epoch: dict[str, list[float | None]] | None = None
    """With several epochs: each metric computed on each epoch's records alone, in epoch order."""
    epoch_sd: dict[str, float | None] | None = None
    """With several epochs: each metric's sample standard deviation across epochs (its run-to-run spread)."""
    reducer: str | None = None
    """How a sample's epochs combine before its metrics (`mean`, `mode`, `max`, `min`, `median`, `pass_at_k`);
    None where the task has no say (one epoch and no reducer set)."""
    params: dict[str, Any] | None = None
    """The effective params of the task's model requests (entry < task < run-level `params`); None where the
    task asks no model."""
    params_dropped: dict[str, Any] | None = None
    """Params set for the task's model requests that litellm would not send that model, left out because the
    entry says `drop_params: true` (`{}`: none); None where the task asks no model."""
    failed: str | None = None
    """Why the task's metrics could not be computed (`ExceptionType: message`): its counts come from the records
    alone, its metrics are absent, and the run exits 1 (the other tasks keep theirs)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form with the contract's keys first (`judge_stats` only where two or more judged, `failed`
        only where the metrics could not be computed)."""
        out = asdict(self)
        for key in ("judge_stats", "failed", "params_dropped"):
            if out[key] is None:
                del out[key]
        return out
