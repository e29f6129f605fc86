"""A task's samples built again from their rows when asked for, so a planned run holds no row it is not asking.

At 100,000 samples the rows and their Sample objects held ~1 KB each (docs/performance.md) from planning to
the end of the run. This keeps, per sample, the place of its row (8 bytes); the row is read again from the
data (runner/tasks/sources.py) and made into the same Sample by the same `to_sample` when its job starts.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from typing import TYPE_CHECKING, overload

from runner.errors import DataError
from runner.tasks.sources import BAD_ROW, Rows
from runner.types import Sample

if TYPE_CHECKING:
    from runner.tasks.base import BaseTask


class LazySamples(Sequence[Sample]):
    """Samples by their place in the task's loaded samples; `rows[i]` is the row of the i-th sample."""

    def __init__(self, task: BaseTask, source: Rows, rows: array[int]) -> None:
        self.task, self.source, self.rows = task, source, rows

    def __len__(self) -> int:
        return len(self.rows)

    @overload
    def __getitem__(self, i: int) -> Sample: ...

    @overload
    def __getitem__(self, i: slice) -> list[Sample]: ...

    def __getitem__(self, i: int | slice) -> Sample | list[Sample]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        index = self.rows[i]
        row = self.source.row(index)
        try:
            if BAD_ROW in row:
                raise ValueError(row[BAD_ROW])
            return self.task.to_sample(row, index)
        except (ValueError, KeyError, TypeError, IndexError) as exc:
            # It was a good row when planned: the data changed under the run.
            raise DataError(f"task {self.task.name}: row {index} no longer makes a sample ({exc}); the data "
                            "changed while the run was asking its samples; re-run to plan again") from exc
