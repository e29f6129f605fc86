"""The task side of the model: `BaseTask` (how one task asks a sample and scores the reply), the `Context` a
task evaluates in, and `Loaded` (one task's data). Constructors stay light (they only keep config)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.config.redact import redact
from runner.errors import ConfigError, DataError
from runner.metrics.core import score_value
from runner.run.store import record_key
from runner.tasks.lazy_samples import LazySamples
from runner.types import Sample, SampleRecord, TaskResult

if TYPE_CHECKING:
    from runner.judges.panel import Panel
    from runner.models.litellm_model import Endpoint

ID_COLUMNS = ("id", "uuid", "qid", "ID", "Id")


def sample_id(row: Mapping[str, Any], index: int) -> Any:
    """The dataset's own id where the row has one, else the 0-based row index."""
    for col in ID_COLUMNS:
        value = row.get(col)
        if value is not None and value != "":
            return value
    return index


class UniqueIds:
    """The sample ids of one task's data, checked to be unique before anything is asked.

    The samples files keep one record per id, so two rows under one id would both be asked and paid for
    while the results counted one. Ids compare as text, as the samples files key records (`record_key`):
    2 and "2" are the same id. A repeat is a DataError (exit 2) naming the file, the first repeated ids and
    their rows (0-based, in data order).
    """

    SHOWN = 3
    """Repeated ids named in the message; the rest are counted."""

    def __init__(self, where: str) -> None:
        self.where = where
        self._first: dict[str, int] = {}
        self._repeats: dict[str, list[int]] = {}
        """Text of a repeated id -> its rows."""

    def add(self, sample_id: Any, row: int) -> None:
        key = record_key(sample_id)
        first = self._first.setdefault(key, row)
        if first != row:
            self._repeats.setdefault(key, [first]).append(row)

    def check(self) -> None:
        """DataError if an id was added from two rows; then forgets the ids (they are not needed after load)."""
        repeats, self._first = list(self._repeats.items()), {}
        if not repeats:
            return
        shown = "; ".join(f"id {key} at rows {', '.join(map(str, rows))}" for key, rows in repeats[:self.SHOWN])
        more = f"; and {len(repeats) - self.SHOWN} more repeated id(s)" if len(repeats) > self.SHOWN else ""
        raise DataError(f"{self.where}: {len(repeats)} sample id(s) repeated ({shown}{more}; rows 0-based in data "
                        "order); each row must have its own id (the samples files keep one record per id), so "
                        "remove the repeated rows or give them ids of their own")


def require(row: Mapping[str, Any], *columns: str) -> None:
    """Fail this row (not the run) when a column the task needs is missing or null."""
    missing = [c for c in columns if row.get(c) is None]
    if missing:
        have = ", ".join(sorted(str(k) for k in row)) or "none"
        raise ValueError(f"row is missing column(s) {', '.join(missing)} (columns present: {have})")


@dataclass
class Context:
    """What a task may use while evaluating a sample."""

    model: Endpoint | None
    panel: Panel | None
    seed: int = 0
    run_dir: Path | None = None
    epochs: int = 1
    """How many times each sample is asked (the run's `epochs`)."""
    previous: dict[str, Mapping[str, dict[str, Any]]] = field(default_factory=dict)
    """Records kept from earlier runs into the same run dir, by task and sample id (`record_key`), read
    once by the pipeline before this run appends any: e.g. a reply to judge again instead of re-asking. Only
    the samples this run asks again are there, read from the samples file when looked up."""


@dataclass
class Loaded:
    """One task's data: few-shot examples (never scored), samples to score, and rows that failed."""

    shots: list[Sample]
    samples: Sequence[Sample]
    """In loaded order; a planned job finds its sample by its place here (`Job.index`)."""
    bad: list[tuple[Any, str]] = field(default_factory=list)
    """(id, error) for rows that could not become samples; recorded as errors."""
    data: dict[str, Any] | None = None
    """Where the rows came from and a digest of those used (runner/run/provenance.py): results.json `data`."""
    later: LazySamples | None = None
    """The same samples, each built again from its row when asked for: what `samples` becomes once the run
    is planned (runner/tasks/lazy_samples.py). None: the data cannot be read again by row."""
    skipped: str | None = None
    """Why the benchmark leaves this task out (its summary says so): no sample to ask is then no error."""
    dropped: int = 0
    """Samples whose prompt could not be built: moved to `bad` by the plan, left in `samples` so that the
    places of the others stay as planned."""

    def held(self, sample: Sample) -> Sample | None:
        """What a planned job keeps of its sample: nothing where it can be built again from its row."""
        return None if self.later is not None else sample

    def rebuild_from_rows(self) -> None:
        """Once every job is made: `samples` become the ones built again from their rows, where they can be."""
        if self.later is not None:
            self.samples, self.later = self.later, None

    def release(self) -> None:
        """Once the jobs are handed on: the loaded samples can go, where the jobs hold their own."""
        if not isinstance(self.samples, LazySamples):
            self.samples = []


@dataclass(frozen=True)
class PlannedCall:
    """One request a sample would send, as a task describes it to a dry run (runner/run/dry_run.py counts its
    tokens and prices it; budgets and plan.json use the same counts)."""

    role: str
    """`model` (the model under test), `judge` (the panel's judge named `judge`) or `extractor` (`endpoint`)."""
    messages: list[dict[str, Any]]
    judge: str | None = None
    endpoint: Any = None
    """An extractor's own endpoint (runner/scorers/extractor.py)."""
    holds_reply: bool = False
    """The prompt holds the model's reply, not written yet: counted as the model's `max_tokens` more."""
    calls: int = 1
    """How many such requests (votes, an agent's steps at most: an upper bound)."""
    exact: bool = True
    """False: the task cannot render this prompt ahead (its tokens are an estimate, the plan says so)."""


class BaseTask:
    """How one task asks a sample and scores the reply. Subclasses implement the three hooks."""

    needs_model = True
    needs_judges = False
    needs_audio = False
    """The model under test hears audio clips (the embedded text-only demo model is refused for it)."""
    label_names: tuple[str, ...] = ()
    """Names human labels of this task may use besides a judge's own verdicts (a pairwise task: its two
    models' names for A and B; runner.audit)."""
    headline = "accuracy"
    """The metric the run summary and the final table lead with."""
    spec: Mapping[str, Any] = {}
    """The task's YAML entry as configured (set by the benchmark); part of every record's fingerprint."""
    seeded = False
    """Whether the run's `seed` decides this task's records (a drawn order, a shuffle): then it is part of
    their fingerprint, so a resume with another seed does not keep them."""

    def __init__(self, name: str, dataset: str | None = None, split: str = "train", num_fewshot: int = 0,
                 params: Mapping[str, Any] | None = None, revision: str | None = None,
                 requires: Mapping[str, Any] | None = None) -> None:
        self.name = name
        self.dataset = dataset
        self.split = split
        self.revision = None if revision is None else str(revision)
        """The hub dataset's revision (a commit sha or tag) to load; None: its default branch, as it is today."""
        self.num_fewshot = int(num_fewshot or 0)
        self.params = dict(params or {})
        self.requires: dict[str, Any] = {}
        """Params the task cannot do without (self-consistency's temperature): sent like its own params, and a
        run-level `params.<key>` that contradicts one stops the run before any request (runner/run/build.py)."""
        self.require_params(requires or {})

    def require_params(self, requires: Mapping[str, Any]) -> None:
        """Add values the task requires (YAML `requires:` beside `params:`; a subclass that takes `requires`
        itself passes it here): each is one of its params, and one its own `params` contradict is refused."""
        clash = next((k for k, v in requires.items() if k in self.params and self.params[k] != v), None)
        if clash is not None:
            raise ConfigError(f"benchmark.specs.{self.name}: params.{clash}={self.params[clash]!r} contradicts "
                              f"requires.{clash}={requires[clash]!r}; give the key once, in requires")
        self.requires.update(requires)
        self.params.update(requires)

    def to_sample(self, row: Mapping[str, Any], index: int) -> Sample:
        """Map one dataset row to a Sample; raise ValueError (with the reason) for a bad row."""
        raise NotImplementedError

    async def evaluate(self, sample: Sample, shots: Sequence[Sample], ctx: Context) -> SampleRecord:
        """Ask and score one sample. Call failures propagate; the pipeline records them as errors."""
        raise NotImplementedError

    def fingerprint_parts(self, sample: Sample, shots: Sequence[Sample], ctx: Context) -> dict[str, Any]:
        """What decides this sample's record (runner/run/fingerprint.py): its data, the task's settings, and
        the model and the judges where the task uses them. Subclasses add what else decides it."""
        task: Any = {"spec": self.spec, "seed": ctx.seed} if self.seeded else self.spec
        parts: dict[str, Any] = {"data": [asdict(sample), [asdict(s) for s in shots]], "task": task}
        if self.needs_model and ctx.model is not None:
            parts["model"] = ctx.model.describe(self.params)
        if self.needs_judges and ctx.panel is not None:
            parts["judges"] = {"panel": [j.describe() for j in ctx.panel.judges], "rubric": self.rubric_texts()}
        return parts

    def model_params(self, model: Endpoint | None) -> dict[str, Any] | None:
        """The params this task's requests to the model under test send (entry < task < run-level `params`, less
        what litellm would not send: runner/models/sent_params.py) as results.json and plan.json show them
        (`tasks.<task>.params`: a secret-named one, such as a header with a key, masked); None when the task asks
        no model."""
        if not self.needs_model or model is None:
            return None
        return dict(redact(model.sent(self.params).params))

    def dropped_params(self, model: Endpoint | None) -> dict[str, Any] | None:
        """The params set for this task's model requests that litellm would not send that model, left out with
        the entry's `drop_params: true` (results.json `tasks.<task>.params_dropped`); None where the task asks
        no model."""
        if not self.needs_model or model is None:
            return None
        return dict(redact(model.sent(self.params).dropped))

    def prepare(self, folders: Sequence[Path]) -> None:
        """At build time: load and check what the task reads from disk (templates), so a typo stops the
        run before any request. `folders` are where the benchmark's data lives (default: nothing)."""

    def sample_scores(self, record: Mapping[str, Any]) -> dict[str, float | None]:
        """A record's own value of each metric that is a mean over samples (for intervals and paired
        comparisons), None where the record has none; default: the record's numeric `scores`."""
        scores = record.get("scores")
        return {k: score_value(record, k) for k in scores} if isinstance(scores, Mapping) else {}

    def rubric_texts(self) -> list[str]:
        """The text of every judge prompt template this task uses (a changed rubric changes verdicts)."""
        return []

    def planned_calls(self, sample: Sample, shots: Sequence[Sample], judges: Sequence[str], reply: str | None,
                      seed: int) -> list[PlannedCall]:
        """Every request asking and scoring `sample` would send, for a dry run; nothing is sent. `judges`: the
        panel's judges when the task is judged; `reply`: the model's reply when it is already known (rejudge
        replays recorded replies: then no model call is planned and judge prompts hold the reply itself).

        Default: one model call with the bare question, and one call per judge per rubric holding the
        question, both marked inexact; a task that renders its own prompts says so exactly."""
        calls = []
        if self.needs_model and reply is None:
            calls.append(PlannedCall("model", [{"role": "user", "content": str(sample.input)}], exact=False))
        for judge in judges:
            calls += [PlannedCall("judge", [{"role": "user", "content": f"{text}\n{sample.input}\n{reply or ''}"}],
                                  judge=judge, holds_reply=self.needs_model and reply is None, exact=False)
                      for text in self.rubric_texts()]
        return calls

    def finished(self, record: Mapping[str, Any]) -> bool:
        """Whether a record kept from an earlier run into the same run dir is done, so resume skips it.

        Default: anything but an error. A task may ask again for more (e.g. invalid judgements).
        """
        return record.get("status") != "error"

    async def close(self) -> None:
        """After the last sample (also when the run stops early): release what `evaluate` started, such as
        tool servers (default: nothing)."""

    def aggregate(self, records: Sequence[Mapping[str, Any]]) -> TaskResult:
        """Metrics from the sample records alone (records with status `error` are left out of the metrics
        and counted in n_errors/error_ids; see runner.metrics.results.task_result)."""
        raise NotImplementedError
