"""Named aggregations: what a task's `metrics:` lists, each from the scored records alone.

`mean:<score>` averages a per-sample score; `judge_panel` gives EVE's panel metrics
(`llm_as_judge_<judge>`, `llm_as_judge_avg`, `judge_voting`, `judge_agreement`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from runner.errors import ConfigError
from runner.metrics.core import majority_vote, mean, unanimous
from runner.metrics.records import judge_names
from runner.types import Judgement

Record = Mapping[str, Any]


@dataclass(frozen=True)
class Mean:
    """The mean of one per-sample score."""

    score: str

    def keys(self, records: Sequence[Record]) -> list[str]:
        return [self.score]

    def compute(self, records: Sequence[Record]) -> dict[str, float]:
        return {self.score: mean(float(r["scores"][self.score]) for r in records)}

    def per_sample(self, record: Record) -> dict[str, float]:
        return {self.score: float(record["scores"][self.score])}


def judge_passes(record: Record) -> dict[str, float]:
    """{judge: pass} from a record's judgements (an invalid reply counts as a fail)."""
    return {j["judge"]: Judgement.from_dict(j).passed for j in record.get("judgements", [])}


@dataclass(frozen=True)
class JudgePanel:
    """Per judge, their mean, the panel vote (the sample's `judge_vote`, else a majority) and agreement."""

    def keys(self, records: Sequence[Record]) -> list[str]:
        names = judge_names(records)
        vote = [] if records and all("judge_vote" not in r.get("scores", {}) for r in records if r.get("scores")) \
            else ["judge_voting"]
        return [f"llm_as_judge_{j}" for j in names] + ["llm_as_judge_avg"] + vote + ["judge_agreement"]

    def _rows(self, records: Sequence[Record]) -> tuple[list[str], list[list[float]]]:
        names = judge_names(records)
        return names, [[judge_passes(r).get(j, 0.0) for j in names] for r in records]

    def compute(self, records: Sequence[Record]) -> dict[str, float]:
        names, rows = self._rows(records)
        out = {f"llm_as_judge_{j}": mean(row[i] for row in rows) for i, j in enumerate(names)}
        out["llm_as_judge_avg"] = mean(mean(row) for row in rows)
        if "judge_voting" in self.keys(records):
            out["judge_voting"] = mean(float(r["scores"].get("judge_vote", majority_vote(row)))
                                       for r, row in zip(records, rows, strict=True))
        out["judge_agreement"] = mean(unanimous(row) for row in rows)
        return {k: out[k] for k in self.keys(records)}

    def per_sample(self, record: Record) -> dict[str, float]:
        return self.compute([record])


Aggregation = Mean | JudgePanel


# name -> (takes an argument, maker)
AGGREGATIONS: dict[str, tuple[bool, Any]] = {"mean": (True, Mean), "judge_panel": (False, JudgePanel)}


def aggregation(spec: str) -> Aggregation:
    """`mean:<score>` or `judge_panel`; anything else is a ConfigError listing what exists."""
    name, _, arg = str(spec).partition(":")
    takes, maker = AGGREGATIONS.get(name, (None, None))
    if maker is None or takes != bool(arg):
        raise ConfigError(f"metrics: '{spec}' is not an aggregation; use mean:<per-sample score> or judge_panel")
    made: Aggregation = maker(arg) if takes else maker()
    return made
