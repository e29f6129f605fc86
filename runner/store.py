"""The run directory on disk: `samples/<task>.jsonl` appended as samples finish, and `results.json`; the
pipeline is its only writer (tasks get earlier records through `Context.previous`)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any


def record_key(sample_id: Any, epoch: int = 0) -> str:
    """Ids compare as strings, so 3 and "3" (JSON round trips) are the same sample; epochs after the first
    are records of their own."""
    return str(sample_id) if not epoch else f"{sample_id}\x1fepoch{epoch}"


def key_of(record: dict[str, Any]) -> str:
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
    """Per-task JSONL files of sample records; the source of truth for resume and for every metric."""

    def __init__(self, run_dir: Path) -> None:
        self.dir = Path(run_dir) / "samples"
        self.dir.mkdir(parents=True, exist_ok=True)
        self._files: dict[str, IO[str]] = {}

    def path(self, task: str) -> Path:
        """The task's samples file."""
        return self.dir / f"{task}.jsonl"

    def load(self, task: str) -> dict[str, dict[str, Any]]:
        """Records already on disk, by id; a later line for the same id replaces an earlier one.

        A torn last line (the process was killed mid-write) is skipped: that sample is simply re-run.
        """
        path = self.path(task)
        return read_records(path) if path.exists() else {}

    def append(self, record: dict[str, Any]) -> None:
        """Append one record and flush it, so a killed run keeps every finished sample."""
        task = record["task"]
        fh = self._files.get(task)
        if fh is None:
            path = self.path(task)
            fh = open(path, "a", encoding="utf-8")  # noqa: SIM115 - kept open for the run, closed in close()
            if path.stat().st_size and not _ends_with_newline(path):
                fh.write("\n")  # keep a torn line from swallowing this record
            self._files[task] = fh
        fh.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
        fh.flush()

    def close(self) -> None:
        """Close the files (fsync first: the records are the run's only copy)."""
        for fh in self._files.values():
            fh.flush()
            os.fsync(fh.fileno())
            fh.close()
        self._files.clear()


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
    return sorted(out.values(), key=_id_order)


def _id_order(record: dict[str, Any]) -> tuple[int, Any, int]:
    value, epoch = record["id"], int(record.get("epoch") or 0)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (0, value, epoch)
    return (1, str(value), epoch)
