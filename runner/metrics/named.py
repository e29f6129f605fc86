"""Named aggregations: what a task's `metrics:` lists, each from the scored records alone.

`mean:<score>` averages a per-sample score, `median:<score>` takes its median; `judge_panel` gives EVE's panel metrics
(`llm_as_judge_<judge>`, `llm_as_judge_avg`, `judge_voting`, `judge_agreement`); `binary_prf:<letter>`
accuracy, precision, recall and F1 with that option as the positive class.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from runner.errors import ConfigError
from runner.metrics.core import binary_classification, defined_mean, majority_vote, mean, score_value, unanimous
from runner.metrics.results import judge_names
from runner.types import Judgement

Record = Mapping[str, Any]


@dataclass(frozen=True)
class Mean:
    """The mean of one per-sample score."""

    score: str

    def headline(self) -> str:
        return self.score

    def keys(self, records: Sequence[Record]) -> list[str]:
        return [self.score]

    def compute(self, records: Sequence[Record]) -> dict[str, float | None]:
        # A record without the score (a scorer that gives it only sometimes) is left out, and counted
        # (`n_missing`); over no record that has it the mean is null.
        return {self.score: defined_mean(score_value(r, self.score) for r in records)}

    def per_sample(self, record: Record) -> dict[str, float | None]:
        return {self.score: score_value(record, self.score)}


def judge_passes(record: Record) -> dict[str, float]:
    """{judge: pass} from a record's judgements (an invalid reply counts as a fail)."""
    return {j["judge"]: Judgement.from_dict(j).passed for j in record.get("judgements", [])}


def _any_parsed(record: Record) -> bool:
    """Whether any judge gave the record a parsed verdict (status `ok`)."""
    return any(j.get("status") == "ok" for j in record.get("judgements") or [])


def _all_pass(values: Sequence[float]) -> float:
    return float(bool(values) and min(values) == 1.0)


# How a panel's verdicts on one sample combine into its vote; `each` keeps them apart (no vote).
VOTES: dict[str, Callable[[Sequence[float]], float] | None] = {
    "majority": majority_vote, "unanimous": _all_pass, "each": None}


@dataclass(frozen=True)
class JudgePanel:
    """Per judge, their mean, the panel vote (`judge_voting`, by the vote rule) and agreement."""

    vote: str = "majority"

    def headline(self) -> str:
        return "llm_as_judge_avg" if VOTES[self.vote] is None else "judge_voting"

    def keys(self, records: Sequence[Record]) -> list[str]:
        vote = [] if VOTES[self.vote] is None else ["judge_voting"]
        return [f"llm_as_judge_{j}" for j in judge_names(records)] + ["llm_as_judge_avg", *vote, "judge_agreement"]

    def compute(self, records: Sequence[Record]) -> dict[str, float | None]:
        names = judge_names(records)
        rows = [[judge_passes(r).get(j, 0.0) for j in names] for r in records]
        out: dict[str, float | None] = {f"llm_as_judge_{j}": mean(row[i] for row in rows) for i, j in enumerate(names)}
        out["llm_as_judge_avg"] = mean(mean(row) for row in rows)
        rule = VOTES[self.vote]
        if rule is not None:
            out["judge_voting"] = mean(rule(row) for row in rows)
        # Agreement needs a verdict: a sample no judge gave a parsed one has none (all "fail" is no agreement),
        # and over no such sample it is undefined (null), never 1.
        parsed = [unanimous(row) for r, row in zip(records, rows, strict=True) if _any_parsed(r)]
        out["judge_agreement"] = mean(parsed) if parsed else None
        return out

    def per_sample(self, record: Record) -> dict[str, float | None]:
        # Every key on every record: agreement is None (undefined) on a sample no judge gave a parsed verdict.
        return self.compute([record])


@dataclass(frozen=True)
class Median:
    """The median of one per-sample score, as `median_<score>`: not a mean, so no standard error of the mean;
    its interval is a bootstrap of the median itself."""

    score: str

    def headline(self) -> str:
        return f"median_{self.score}"

    def keys(self, records: Sequence[Record]) -> list[str]:
        return [f"median_{self.score}"]

    def compute(self, records: Sequence[Record]) -> dict[str, float | None]:
        values = [v for v in (score_value(r, self.score) for r in records) if v is not None]
        return {f"median_{self.score}": float(statistics.median(values)) if values else None}

    def per_sample(self, record: Record) -> dict[str, float | None]:
        return {}


@dataclass(frozen=True)
class BinaryPRF:
    """Accuracy and corpus-level precision, recall and F1 of one option letter as the positive class.

    A reply that named no option is wrong, and not a positive prediction.
    """

    positive: str
    reducible = False
    """Precision, recall and F1 count answers, not per-sample scores: epochs reduced by `max`, `min`, `median`
    or `pass_at_k` have no answer to count (`mode` and `mean` do); see runner/metrics/samples.py."""

    def headline(self) -> str:
        return "f1"

    def keys(self, records: Sequence[Record]) -> list[str]:
        return ["accuracy", "precision", "recall", "f1"]

    def compute(self, records: Sequence[Record]) -> dict[str, float]:
        return binary_classification([(r["reference"] == self.positive,
                                        None if r.get("answer") is None else r["answer"] == self.positive)
                                       for r in records])

    def per_sample(self, record: Record) -> dict[str, float | None]:
        return {"accuracy": float(record.get("answer") == record.get("reference"))}


class Aggregation(Protocol):
    """A named aggregation: the metric names it gives, their values, and each record's share of them."""

    def headline(self) -> str:
        """The metric that leads when this aggregation is a task's first (the table, a sweep's pairs)."""
        ...

    def keys(self, records: Sequence[Record]) -> list[str]:
        """The metric names it gives for these records (judge names can depend on them)."""
        ...

    def compute(self, records: Sequence[Record]) -> dict[str, float | None]:
        """Each metric's value over the scored records (None where undefined); called again on resampled
        records for a bootstrap interval of any metric that `per_sample` does not give."""
        ...

    def per_sample(self, record: Record) -> dict[str, float | None]:
        """For each metric that is the mean of a per-sample value, that value for this record: the task's
        standard error, Wilson or bootstrap-of-the-mean interval and a sweep's paired differences use these.
        Every record gets the same keys: None where this record has no value (a score its scorer did not
        give, agreement on a sample without a parsed verdict), which the mean leaves out and `n_missing`
        counts. A metric that is no mean (precision, F1, a median) must be left out: it gets no standard
        error, and its interval comes from `compute` on resampled records."""
        ...


AGGREGATIONS: dict[str, tuple[str | None, Any]] = {
    "mean": ("<per-sample score>", Mean), "median": ("<per-sample score>", Median),
    "judge_panel": (None, JudgePanel), "binary_prf": ("<positive letter>", BinaryPRF)}
"""What a task's `metrics:` may name: name -> (what follows the `:`, None for nothing; its class)."""


def aggregation(spec: str) -> Aggregation:
    """An aggregation by its name in `metrics:` (`mean:accuracy`); anything else is a ConfigError listing what
    exists."""
    name, _, arg = str(spec).partition(":")
    takes, maker = AGGREGATIONS.get(name, (None, None))
    if maker is None or (takes is not None) != bool(arg):
        known = ", ".join(f"{n}:{a}" if a else n for n, (a, _) in AGGREGATIONS.items())
        raise ConfigError(f"metrics: '{spec}' is not an aggregation; use one of {known}")
    made: Aggregation = maker(arg) if takes else maker()
    return made
