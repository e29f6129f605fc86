"""MUGEN's run figures from the per-task results: micro averages over all judged samples and per dimension.

Used by the benchmark's summary (results.json) and by its reporter (MUGEN's console lines), so both tell
the same numbers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from runner.benchmarks.mugen.catalog import DIMENSION_OF, DIMENSIONS
from runner.types import TaskResult


@dataclass(frozen=True)
class Tally:
    """Correct and judged counts per dimension present (in the data card's order)."""

    correct: dict[str, int]
    judged: dict[str, int]

    @property
    def dimensions(self) -> list[str]:
        """The dimensions with at least one task present, in the data card's order."""
        return [d for d in DIMENSIONS if d in self.judged]

    def rate(self, dimension: str) -> float | None:
        """The dimension's micro average; None when its tasks judged nothing."""
        n = self.judged[dimension]
        return self.correct[dimension] / n if n else None

    @property
    def n_correct(self) -> int:
        return sum(self.correct.values())

    @property
    def n_judged(self) -> int:
        return sum(self.judged.values())

    @property
    def accuracy(self) -> float | None:
        """The micro average over every judged sample (the paper's Overall); None when nothing was judged."""
        return self.n_correct / self.n_judged if self.n_judged else None


def tally(results: Mapping[str, TaskResult]) -> Tally:
    """Counts over the MUGEN tasks in `results` (samples that ended as errors were not judged)."""
    correct: dict[str, int] = {}
    judged: dict[str, int] = {}
    for name, r in results.items():
        if name not in DIMENSION_OF:
            continue
        dim = DIMENSION_OF[name]
        correct.setdefault(dim, 0)
        judged.setdefault(dim, 0)
        n, accuracy = r.n - r.n_errors, r.metrics.get("accuracy")
        if n <= 0 or accuracy is None:
            continue
        # accuracy is correct/n with integer counts, so rounding recovers the count exactly
        correct[dim] += round(accuracy * n)
        judged[dim] += n
    return Tally(correct=correct, judged=judged)
