"""Named aggregations: what a task's `metrics:` lists, each from the scored records alone.

`mean:<score>` averages a per-sample score; `judge_panel` gives EVE's panel metrics
(`llm_as_judge_<judge>`, `llm_as_judge_avg`, `judge_voting`, `judge_agreement`); `binary_prf:<letter>`
accuracy, precision, recall and F1 with that option as the positive class.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from runner.errors import ConfigError
from runner.metrics.core import binary_classification, majority_vote, mean, unanimous
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

    def compute(self, records: Sequence[Record]) -> dict[str, float]:
        return {self.score: mean(float(r["scores"][self.score]) for r in records)}

    def per_sample(self, record: Record) -> dict[str, float]:
        return {self.score: float(record["scores"][self.score])}


def judge_passes(record: Record) -> dict[str, float]:
    """{judge: pass} from a record's judgements (an invalid reply counts as a fail)."""
    return {j["judge"]: Judgement.from_dict(j).passed for j in record.get("judgements", [])}


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

    def compute(self, records: Sequence[Record]) -> dict[str, float]:
        names = judge_names(records)
        rows = [[judge_passes(r).get(j, 0.0) for j in names] for r in records]
        out = {f"llm_as_judge_{j}": mean(row[i] for row in rows) for i, j in enumerate(names)}
        out["llm_as_judge_avg"] = mean(mean(row) for row in rows)
        rule = VOTES[self.vote]
        if rule is not None:
            out["judge_voting"] = mean(rule(row) for row in rows)
        out["judge_agreement"] = mean(unanimous(row) for row in rows)
        return out

    def per_sample(self, record: Record) -> dict[str, float]:
        return self.compute([record])


@dataclass(frozen=True)
class BinaryPRF:
    """Accuracy and corpus-level precision, recall and F1 of one option letter as the positive class.

    A reply that named no option is wrong, and not a positive prediction.
    """

    positive: str

    def headline(self) -> str:
        return "f1"

    def keys(self, records: Sequence[Record]) -> list[str]:
        return ["accuracy", "precision", "recall", "f1"]

    def compute(self, records: Sequence[Record]) -> dict[str, float]:
        return binary_classification([(r["reference"] == self.positive,
                                        None if r.get("answer") is None else r["answer"] == self.positive)
                                       for r in records])

    def per_sample(self, record: Record) -> dict[str, float]:
        return {"accuracy": float(record.get("answer") == record["reference"])}


class Aggregation(Protocol):
    """A named aggregation: the metric names it gives, their values, and each record's share of them."""

    def headline(self) -> str: ...

    def keys(self, records: Sequence[Record]) -> list[str]: ...

    def compute(self, records: Sequence[Record]) -> dict[str, float]: ...

    def per_sample(self, record: Record) -> dict[str, float]: ...


# name -> (takes an argument, maker)
AGGREGATIONS: dict[str, tuple[bool, Any]] = {"mean": (True, Mean), "judge_panel": (False, JudgePanel),
                                             "binary_prf": (True, BinaryPRF)}


def aggregation(spec: str) -> Aggregation:
    """`mean:<score>` or `judge_panel`; anything else is a ConfigError listing what exists."""
    name, _, arg = str(spec).partition(":")
    takes, maker = AGGREGATIONS.get(name, (None, None))
    if maker is None or takes != bool(arg):
        raise ConfigError(f"metrics: '{spec}' is not an aggregation; use mean:<per-sample score>, judge_panel or "
                          "binary_prf:<positive letter>")
    made: Aggregation = maker(arg) if takes else maker()
    return made
