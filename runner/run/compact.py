"""What a run keeps of its sample records: a compact form per sample for the metrics, and where each full
record starts in its samples file for whatever needs all of it (trackers, reporters, resumed tasks).

A full record is mostly prompt messages, judge replies and usage (~4 KB for a one-letter MCQ answer); the
aggregations (`Task.aggregate`, `runner.metrics.uncertainty`) read only the id, epoch, status, scores,
answer, reference, response, the judgements' verdicts and `extra`'s flags. Holding every record made a
run's memory grow ~5.8 KB per sample; the compact form, with its keys and repeated values shared, takes
~0.5 KB.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from sys import intern
from typing import Any, SupportsIndex, overload

from runner.run.store import id_order, key_of, read_at

_DROPPED = frozenset({"prompt", "usage", "fingerprint", "error", "model", "task", "notes", "reasoning"})
"""Record keys no aggregation reads (the error text and notes are in the file; `error_ids` needs only the id)."""
_JUDGE_DROPPED = frozenset({"raw", "explanation", "prompt"})
"""Judgement (and pairwise call) keys no aggregation reads: the verdict is parsed already."""
_SHORT = 32
"""Strings up to this length are shared between records (letters, statuses, short references)."""
_MEMO_LIMIT = 50_000
"""Distinct shared values per task at most: unique values would only cost a memo entry each."""


def _flag(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, float)) or (isinstance(value, str) and len(value) <= 200)


def _judgement(entry: Any) -> Any:
    if not isinstance(entry, Mapping):
        return entry
    out = {intern(k): v for k, v in entry.items() if k not in _JUDGE_DROPPED}
    if isinstance(out.get("calls"), list):
        out["calls"] = [_judgement(c) for c in out["calls"]]
    return out


def compact(record: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a record the aggregations read: `extra` keeps only its flags (scalars, short text), a
    judgement its verdict fields; prompts, replies' raw text, usage and the fingerprint are left out. Keys
    are interned: a parsed line brings its own copy of every key (~0.5 KB a record)."""
    out: dict[str, Any] = {}
    for key, value in record.items():
        if key in _DROPPED:
            continue
        if key == "judgements" and isinstance(value, list):
            value = [_judgement(j) for j in value]
        elif key == "extra" and isinstance(value, Mapping):
            value = {intern(k): v for k, v in value.items() if _flag(v)}
        out[intern(key)] = value
    return out


class TaskRecords:
    """One task's records for this run: per sample and epoch the latest record's compact form and its offset
    in the samples file. Compact records share equal small values (read-only: aggregations only read)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._latest: dict[str, tuple[dict[str, Any], int]] = {}
        self._memo: dict[Any, Any] = {}

    def add(self, record: Mapping[str, Any], offset: int) -> None:
        """A record (full or compact) that starts at `offset`; it replaces an earlier one of its key."""
        small = compact(record) if _DROPPED & record.keys() else {intern(k): v for k, v in record.items()}
        for key, value in small.items():
            if key != "id":
                small[key] = self._shared(value)
        self._latest[key_of(small)] = (small, offset)

    def __len__(self) -> int:
        return len(self._latest)

    def finish(self) -> tuple[list[dict[str, Any]], StoredRecords]:
        """The compact records in the order `runner.run.store.latest` gives (id, then epoch), and the same
        records in full, read from the file on access."""
        entries = sorted(self._latest.values(), key=lambda entry: id_order(entry[0]))
        return [e[0] for e in entries], StoredRecords(self.path, [e[1] for e in entries])

    def _shared(self, value: Any) -> Any:
        if isinstance(value, str):
            memo_key: Any = value if len(value) <= _SHORT else None
        elif isinstance(value, dict) and all(isinstance(v, (int, float, str, type(None))) for v in value.values()):
            # The types are part of the key: 1, 1.0 and True are equal, but a bool is no score.
            memo_key = ("dict", *((k, type(v), v) for k, v in value.items())) if len(value) <= 8 else None
        elif isinstance(value, list) and not value:
            memo_key = ("list",)
        else:
            memo_key = None
        if memo_key is None:
            return value
        try:
            shared = self._memo.get(memo_key)
        except TypeError:  # a value that cannot be a dict key
            return value
        if shared is None and len(self._memo) < _MEMO_LIMIT:
            self._memo[memo_key] = shared = value
        return value if shared is None else shared


class StoredRecords(list[dict[str, Any]]):
    """A task's full records in id order, read from its samples file when asked for (one line at a time), so
    a tracker that logs the first rows or a reporter that walks them never needs all of them in memory.

    Read-only (length, iteration, indexing and slicing); a list only so that it goes wherever the list of
    records went (`Tracker.log_task`, reporters).
    """

    def __init__(self, path: Path, offsets: Sequence[int]) -> None:
        super().__init__()
        self.path = path
        self._offsets = list(offsets)

    def __len__(self) -> int:
        return len(self._offsets)

    def __bool__(self) -> bool:
        return bool(self._offsets)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return read_at(self.path, self._offsets) if self._offsets else iter(())

    @overload
    def __getitem__(self, index: SupportsIndex) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, index: SupportsIndex | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, slice):
            return list(read_at(self.path, self._offsets[index]))
        return next(read_at(self.path, [self._offsets[index]]))

    def __eq__(self, other: object) -> bool:
        return list(self) == list(other) if isinstance(other, list) else NotImplemented

    def __reversed__(self) -> Iterator[dict[str, Any]]:
        return read_at(self.path, self._offsets[::-1])

    def __contains__(self, item: object) -> bool:
        return any(item == record for record in self)

    def __repr__(self) -> str:
        return f"StoredRecords({str(self.path)!r}, {len(self)} records)"


class PreviousRecords(Mapping[str, dict[str, Any]]):
    """Records kept from earlier runs into the run dir, by key, read from the samples file on access: what
    `Context.previous` offers a task for the samples it asks again (e.g. a reply to judge again)."""

    def __init__(self, path: Path, offsets: Mapping[str, int]) -> None:
        self.path = path
        self.offsets = dict(offsets)

    def __getitem__(self, key: str) -> dict[str, Any]:
        return next(read_at(self.path, [self.offsets[key]]))

    def __iter__(self) -> Iterator[str]:
        return iter(self.offsets)

    def __len__(self) -> int:
        return len(self.offsets)
