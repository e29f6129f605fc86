"""The run dir's record of its provider batches (`batches.jsonl`), what a provider's batch and its result files
say, and what a run's batches are doing now.

A batch is written down before it is created and again once it is: `submit` (the endpoint, the uploaded
input file, every request's custom_id, which is its cache key, and the samples that asked it), then `created`
(the provider's batch id), each `status` the runner saw while polling (with the provider's counts), and
`done` once its results were handed back. Lines are appended, flushed and fsynced one at a time, so a runner
killed at any moment leaves a journal a restarted runner reads back: it polls the batches it finds there
instead of submitting their requests again (runner/models/batch.py), and `runner status RUN_DIR` shows
them without sending anything. Nothing here imports litellm.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

JOURNAL = "batches.jsonl"
TERMINAL = frozenset({"completed", "failed", "expired", "cancelled"})
"""Batch statuses after which a batch changes no more (OpenAI's)."""


@dataclass
class Entry:
    """One batch as the journal knows it."""

    endpoint: str
    file_id: str
    custom_ids: list[str]
    samples: list[list[str]] = field(default_factory=list)
    batch_id: str | None = None
    status: str = "submitting"
    counts: dict[str, int] = field(default_factory=dict)
    done: bool = False
    time: float = 0.0


class Journal:
    """`run_dir/batches.jsonl`: read once when the run opens its batches, appended while it runs."""

    def __init__(self, run_dir: Path) -> None:
        self.path = Path(run_dir) / JOURNAL
        self._lock = threading.Lock()
        self.entries: list[Entry] = list(read(self.path))

    def append(self, event: dict[str, Any]) -> None:
        """Write one event and make it durable before the caller goes on (a batch id lost is a batch paid twice)."""
        line = json.dumps({**event, "time": round(time.time(), 3)}, ensure_ascii=False) + "\n"
        with self._lock, open(self.path, "a", encoding="utf-8") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())

    def submitted(self, endpoint: str, file_id: str, custom_ids: list[str], samples: list[list[str]]) -> Entry:
        """A batch's input file is uploaded and its batch is about to be created."""
        entry = Entry(endpoint, file_id, list(custom_ids), samples, time=time.time())
        self.append({"event": "submit", "endpoint": endpoint, "file_id": file_id, "custom_ids": custom_ids,
                     "samples": samples})
        self.entries.append(entry)
        return entry

    def created(self, entry: Entry, batch_id: str, status: str) -> None:
        """The provider created the batch of `entry` (or it was found there after a stop)."""
        entry.batch_id, entry.status = batch_id, status
        self.append({"event": "created", "endpoint": entry.endpoint, "file_id": entry.file_id, "batch_id": batch_id,
                     "status": status})

    def status(self, entry: Entry, status: str, counts: dict[str, int]) -> None:
        """What a poll saw, written when it changed."""
        if (status, counts) == (entry.status, entry.counts):
            return
        entry.status, entry.counts = status, dict(counts)
        self.append({"event": "status", "batch_id": entry.batch_id, "status": status, "counts": counts})

    def finished(self, entry: Entry) -> None:
        """The batch's results were handed back to the requests waiting for them."""
        entry.done = True
        self.append({"event": "done", "batch_id": entry.batch_id, "status": entry.status})


def read(path: Path) -> Iterator[Entry]:
    """The batches of a journal, each with its latest state. A line cut by a kill is skipped: it is the last
    one, and the event it would have said happens again (a status is polled again)."""
    if not path.exists():
        return
    by_file: dict[str, Entry] = {}
    with open(path, encoding="utf-8", errors="replace") as f:
        for raw in f:
            try:
                event = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(event, dict):
                continue
            kind = event.get("event")
            if kind == "submit":
                by_file[str(event["file_id"])] = Entry(str(event["endpoint"]), str(event["file_id"]),
                                                       [str(c) for c in event.get("custom_ids") or []],
                                                       event.get("samples") or [], time=event.get("time", 0.0))
                continue
            entry = by_file.get(str(event.get("file_id"))) if kind == "created" else \
                next((e for e in by_file.values() if e.batch_id == event.get("batch_id")), None)
            if entry is None:
                continue
            if kind == "created":
                entry.batch_id = str(event["batch_id"])
                entry.status = str(event.get("status") or "validating")
            elif kind == "status":
                entry.status, entry.counts = str(event.get("status")), dict(event.get("counts") or {})
            elif kind == "done":
                entry.done = True
    yield from by_file.values()


def counts_of(batch: Any) -> dict[str, int]:
    """A provider batch's request counts: total, completed, failed."""
    counts = getattr(batch, "request_counts", None)
    return {k: int(getattr(counts, k, 0) or 0) for k in ("total", "completed", "failed")}


def first_error(batch: Any) -> dict[str, Any] | None:
    """The first of a failed batch's own errors (a batch refused as a whole has no error file)."""
    errors = getattr(batch, "errors", None)
    data = getattr(errors, "data", None) or (errors.get("data") if isinstance(errors, dict) else None)
    if not data:
        return None
    first = data[0]
    return first if isinstance(first, dict) else {"code": getattr(first, "code", None),
                                                   "message": getattr(first, "message", None)}


def result_lines(content: bytes) -> dict[str, dict[str, Any]]:
    """A result file's lines by custom_id (a line that is no JSON object is left out: its request is retried)."""
    out: dict[str, dict[str, Any]] = {}
    for raw in content.decode("utf-8", "replace").splitlines():
        try:
            line = json.loads(raw)
        except ValueError:
            continue
        if isinstance(line, dict) and isinstance(line.get("custom_id"), str):
            out[line["custom_id"]] = line
    return out


# What this process's batches are doing, for the progress display (runner/outputs/display.py).
_live: dict[str, tuple[str, dict[str, int]]] = {}


def track(batch_id: str, status: str, counts: dict[str, int]) -> None:
    """Remember a batch's latest status and the provider's counts for `summary`."""
    _live[batch_id] = (status, dict(counts))


def forget() -> None:
    """A new run starts: no batch of an earlier run in this process shows."""
    _live.clear()


def summary() -> str:
    """`batches 3: 1 submitted, 1 in progress 40/100, 1 done` for the progress line; "" without batches."""
    if not _live:
        return ""
    waiting = [c for s, c in _live.values() if s in ("submitting", "validating")]
    running = [c for s, c in _live.values() if s not in TERMINAL and s not in ("submitting", "validating")]
    done = [c for s, c in _live.values() if s in TERMINAL]
    parts = [f"{len(waiting)} submitted"] if waiting else []
    if running:
        total = sum(int(c.get("total") or 0) for c in running)
        finished = sum(int(c.get("completed") or 0) + int(c.get("failed") or 0) for c in running)
        parts.append(f"{len(running)} in progress {finished}/{total}")
    if done:
        parts.append(f"{len(done)} done")
    return f"batches {len(_live)}: " + ", ".join(parts)


def describe(run_dir: Path) -> list[str]:
    """`runner status RUN_DIR`: one line per batch of the run dir as last seen, and a total; sends nothing."""
    path = Path(run_dir) / JOURNAL
    entries = list(read(path))
    if not entries:
        return [f"{run_dir}: no batches ({path.name} not found or empty): this run sent its requests directly"]
    lines = []
    for e in entries:
        counts = e.counts
        seen = f"{int(counts.get('completed') or 0)}/{int(counts.get('total') or len(e.custom_ids))} completed" + \
            (f", {counts['failed']} failed" if counts.get("failed") else "")
        state = "results handed back" if e.done else "waiting for the runner" if e.status in TERMINAL else \
            "not created (resumed runs look it up by its file)" if e.batch_id is None else "at the provider"
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(e.time)) if e.time else "?"
        lines.append(f"{e.batch_id or '-'}  {e.endpoint}  {len(e.custom_ids)} request(s)  {e.status}  {seen}  "
                     f"{state}  (submitted {when}; status as last polled)")
    open_ = sum(1 for e in entries if not e.done)
    lines.append(f"{len(entries)} batch(es), {open_} not finished; re-run with the same hydra.run.dir to go on "
                 "polling them (no request is submitted again)")
    return lines


def main(argv: list[str] | None = None, prog: str = "python -m runner.models.batch_journal") -> int:
    """`runner status RUN_DIR`: the run dir's batches as last polled (sends nothing, needs no key)."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(prog=prog, description="A batch run's batches, as the run dir last saw them; "
                                     "sends nothing (re-run the run to poll them)")
    parser.add_argument("run_dir", type=Path)
    args = parser.parse_args(argv)
    if not args.run_dir.is_dir():
        print(f"error: {args.run_dir} is no folder; give a run dir (outputs/DATE/TIME)", file=sys.stderr)
        return 2
    for line in describe(args.run_dir):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
