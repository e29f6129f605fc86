"""The run directory on disk: `samples/<task>.jsonl` appended as samples finish, and `results.json`; the
pipeline is its only writer (tasks get earlier records through `Context.previous`)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from runner.paths import inside


def record_key(sample_id: Any, epoch: int = 0) -> str:
    """Ids compare as strings, so 3 and "3" (JSON round trips) are the same sample; epochs after the first
    are records of their own."""
    return str(sample_id) if not epoch else f"{sample_id}\x1fepoch{epoch}"


def key_of(record: Mapping[str, Any]) -> str:
    """A record's key: its sample id and epoch (records written before epochs existed are epoch 0)."""
    return record_key(record["id"], int(record.get("epoch") or 0))


def read_records(path: Path) -> dict[str, dict[str, Any]]:
    """The records of one samples file by sample and epoch (`key_of`); a later line for the same key replaces
    an earlier one (resume, refresh) and a torn line from a killed run is skipped."""
    out: dict[str, dict[str, Any]] = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if isinstance(rec, dict) and "id" in rec:
                out[key_of(rec)] = rec
    return out


class SampleStore:
    """Per-task JSONL files of sample records; the source of truth for resume and for every metric.

    Lines are appended as bytes, so the store knows where each record starts (`append` returns it): the
    run keeps those offsets instead of the records and reads a record back only when it needs all of it.
    """

    def __init__(self, run_dir: Path) -> None:
        self.dir = Path(run_dir) / "samples"
        self.dir.mkdir(parents=True, exist_ok=True)
        self._files: dict[str, IO[bytes]] = {}
        self._ends: dict[str, int] = {}

    def path(self, task: str) -> Path:
        """The task's samples file (a task name that would lead out of samples/ is a ConfigError)."""
        return inside(self.dir, f"{task}.jsonl")

    def load(self, task: str) -> dict[str, dict[str, Any]]:
        """Records already on disk, by id; a later line for the same id replaces an earlier one.

        A torn last line (the process was killed mid-write) is skipped: that sample is simply re-run.
        """
        path = self.path(task)
        return read_records(path) if path.exists() else {}

    def scan(self, task: str) -> Iterator[tuple[int, dict[str, Any]]]:
        """(offset, record) for every line of the task's file in file order, parsed one at a time (a torn
        line is skipped), so a resume never holds the whole file."""
        path = self.path(task)
        if not path.exists():
            return
        offset = 0
        with open(path, "rb") as fh:
            for line in fh:
                start, offset = offset, offset + len(line)
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if isinstance(rec, dict) and "id" in rec:
                    yield start, rec

    def append(self, record: dict[str, Any]) -> int:
        """Append one record and flush it, so a killed run keeps every finished sample; returns its offset."""
        return self.append_line(record["task"], dumps(record))

    def append_line(self, task: str, line: str) -> int:
        """Append one record already serialised (`dumps`, no newline) and flush it; returns its offset."""
        fh = self._files.get(task)
        if fh is None:
            path = self.path(task)
            fh = open(path, "ab")  # noqa: SIM115 - kept open for the run, closed in close()
            self._ends[task] = path.stat().st_size
            if self._ends[task] and not _ends_with_newline(path):
                fh.write(b"\n")  # keep a torn line from swallowing this record
                self._ends[task] += 1
            self._files[task] = fh
        data = (line + "\n").encode("utf-8")
        offset = self._ends[task]
        fh.write(data)
        fh.flush()
        self._ends[task] = offset + len(data)
        return offset

    def close(self) -> None:
        """Close the files (fsync first: the records are the run's only copy)."""
        for fh in self._files.values():
            fh.flush()
            os.fsync(fh.fileno())
            fh.close()
        self._files.clear()


def dumps(record: dict[str, Any]) -> str:
    """A record as its samples-file line (without the newline)."""
    return json.dumps(record, ensure_ascii=False, default=str)


def read_at(path: Path, offsets: Iterable[int]) -> Iterator[dict[str, Any]]:
    """The records starting at these offsets of a samples file, in the order given, one at a time."""
    with open(path, "rb") as fh:
        for offset in offsets:
            fh.seek(offset)
            record: dict[str, Any] = json.loads(fh.readline())
            yield record


def _ends_with_newline(path: Path) -> bool:
    with open(path, "rb") as fh:
        fh.seek(-1, os.SEEK_END)
        return fh.read(1) == b"\n"


def write_json(path: Path, data: Any) -> None:
    """Write JSON atomically (a reader never sees a half-written results file)."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def latest(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One record per sample and epoch (the last one), in id order, then epoch.

    Completion order varies from run to run; sorting makes every aggregate (and its floating-point
    rounding) identical for identical records.
    """
    out: dict[str, dict[str, Any]] = {}
    for rec in records:
        out[key_of(rec)] = rec
    return sorted(out.values(), key=id_order)


def id_order(record: Mapping[str, Any]) -> tuple[int, Any, int]:
    """The sort key of `latest`: numeric ids by value, then the others as text; then the epoch."""
    value, epoch = record["id"], int(record.get("epoch") or 0)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (0, value, epoch)
    return (1, str(value), epoch)
