"""Rows of a task's data: local JSONL files (read line by line) or a dataset through `datasets`.

The only module importing `datasets` (lazily: it takes seconds to import).
"""

from __future__ import annotations

import functools
import json
import os
import re
import socket
import sys
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlparse

from runner.errors import DataError
from runner.types import SURROGATE

BAD_ROW = "__bad_row__"
"""Key of a placeholder row whose line could not be read; the pipeline records it as an error."""


def _parse(line: bytes, path: Path, place: int | str) -> dict[str, Any]:
    """One line's row; a line that is not a JSON object becomes a placeholder row naming the file and
    `place` (a line number, or a row's place when read again)."""
    try:
        row = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        why = exc.msg if isinstance(exc, json.JSONDecodeError) else f"not UTF-8 ({exc.reason})"
        return {BAD_ROW: f"{path}:{place}: not valid JSON ({why})"}
    except RecursionError:
        return {BAD_ROW: f"{path}:{place}: nested too deeply to read (over {sys.getrecursionlimit()} levels)"}
    if not isinstance(row, dict):
        return {BAD_ROW: f"{path}:{place}: expected a JSON object, got {type(row).__name__}"}
    if _SURROGATE_ESCAPE.search(line) and SURROGATE.search(json.dumps(row, ensure_ascii=False)):
        return {BAD_ROW: f"{path}:{place}: holds a lone surrogate (a \\ud800-\\udfff escape without its pair, e.g. "
                         "half of an emoji), which is no text; fix the row"}
    return row


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
"""A surrogate escape in a line: only then can a row hold a lone one (an escaped emoji is a valid pair)."""


class JsonlRows:
    """A JSONL file's rows: read in order (blank lines skipped, an unreadable line a placeholder row) and,
    once read, again one at a time by their place in that order.

    Reading in order keeps each line's offset and length (16 bytes a row), so a run can let a row go once it
    has planned its sample and read it again when the sample is asked, instead of holding every row of a
    100,000-sample file for the whole run. A file that changed since it was read stops the run (DataError):
    its rows are no longer the ones the run fingerprinted and planned.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._starts = array("q")
        self._lengths = array("q")
        self._stamp: tuple[int, int, int] | None = None

    def __iter__(self) -> Iterator[dict[str, Any]]:
        self._starts, self._lengths = array("q"), array("q")
        with open(self.path, "rb") as fh:
            self._stamp = _stamp(os.fstat(fh.fileno()))
            offset = 0
            for lineno, line in enumerate(fh, start=1):
                start, offset = offset, offset + len(line)
                if not line.strip():
                    continue
                self._starts.append(start)
                self._lengths.append(len(line))
                yield _parse(line, self.path, lineno)

    def row(self, index: int) -> dict[str, Any]:
        """The row at `index` in file order, read again from the file."""
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError as exc:
            raise DataError(f"{self.path}: cannot be read again for a sample after planning ({exc.strerror}); "
                            "leave a benchmark's data in place while it runs, and re-run to plan again") from exc
        try:
            if _stamp(os.fstat(fd)) != self._stamp:
                raise DataError(f"{self.path}: the file changed while the run was asking its samples (read "
                                "again for a sample after planning); leave a benchmark's data as it is while it "
                                "runs, and re-run to plan again")
            line = os.pread(fd, self._lengths[index], self._starts[index])
        finally:
            os.close(fd)
        return _parse(line, self.path, f"row {index}")


def _stamp(st: os.stat_result) -> tuple[int, int, int]:
    return st.st_ino, st.st_size, st.st_mtime_ns


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Rows of a JSONL file; an unreadable line becomes a placeholder row so the rest still runs."""
    return list(JsonlRows(path))


def local_task_file(data_dir: str | Path, task: str) -> Path:
    """`DIR/<task>.jsonl`, with a clear error when the directory or file is missing."""
    root = Path(data_dir).expanduser()
    if not root.is_dir():
        raise DataError(f"benchmark.data_dir: directory '{root}' does not exist; "
                        "point it at a folder holding <task>.jsonl files")
    path = root / f"{task}.jsonl"
    if not path.is_file():
        have = sorted(p.stem for p in root.glob("*.jsonl"))
        raise DataError(f"benchmark.data_dir: no file for task '{task}' (expected {path}); "
                        f"files there: {', '.join(have) or 'none'}; or pick tasks with benchmark.tasks=[...]")
    return path


class Rows(Protocol):
    """A task's rows: iterated once in dataset order, then read again one at a time by their place in it."""

    def __iter__(self) -> Iterator[dict[str, Any]]: ...

    def row(self, index: int) -> dict[str, Any]: ...


class DatasetRows:
    """The rows of a memory-mapped `datasets.Dataset`: read on access, so nothing is held but the mapping."""

    def __init__(self, ds: Any) -> None:
        self.ds = ds

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return (dict(r) for r in self.ds)

    def row(self, index: int) -> dict[str, Any]:
        return dict(self.ds[index])


def load_rows(task: str, dataset: str | None, split: str, data_dir: str | None,
              revision: str | None = None) -> Rows:
    """The rows of one task, in dataset order (a hub dataset at `revision`, when one is given)."""
    if data_dir:
        return JsonlRows(local_task_file(data_dir, task))
    if not dataset:
        raise DataError(f"task '{task}' names no dataset; set benchmark.data_dir=DIR with {task}.jsonl")
    return DatasetRows(open_dataset(dataset, split, revision=revision))


def load_dataset_rows(dataset: str, split: str, revision: str | None = None) -> list[dict[str, Any]]:
    """Rows of a hub dataset (or a local dataset folder) through `datasets`."""
    return list(DatasetRows(open_dataset(dataset, split, revision=revision)))


class MissingSplit(DataError):
    """The dataset exists but has no such split (e.g. a task that lacks a scaling split)."""


def open_dataset(dataset: str, split: str, *, decode_media: bool = True, revision: str | None = None) -> Any:
    """One split of a hub dataset (or a local dataset folder) as a lazy, memory-mapped `datasets.Dataset`.

    Rows are read on access (`len(ds)`, `ds[i]`, `ds.select_columns([...])`), so a benchmark with
    gigabytes of audio never holds it all in memory. `decode_media=False` leaves Audio/Image/Video
    columns undecoded (`{"bytes": ..., "path": ...}`): no audio or image decoder needs to be installed.
    A split the dataset lacks raises MissingSplit (a DataError), so callers may tolerate it.
    """
    os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
    # A hub dataset with no hub to reach: the cache only, at once, instead of the hub client's retries
    # (~24 s, each message twice, per task).
    reason = None if Path(dataset).expanduser().exists() else hub_unreachable()
    if reason:
        os.environ["HF_HUB_OFFLINE"] = os.environ["HF_DATASETS_OFFLINE"] = "1"
    import datasets

    try:
        ds = datasets.load_dataset(dataset, split=split, revision=revision)
    except Exception as exc:  # noqa: BLE001 - many failure types (network, auth, missing split)
        msg = " ".join(str(exc).split())[:200]
        if isinstance(exc, ValueError) and str(exc).startswith("Unknown split"):
            raise MissingSplit(f"dataset '{dataset}' has no split '{split}': {msg}") from exc
        at = f", revision {revision}" if revision else ""
        if reason or hub_offline():
            raise DataError(f"could not load dataset '{dataset}' (split {split}{at}): it is not in the local cache "
                            f"and the Hugging Face hub {reason or 'is switched off (HF_HUB_OFFLINE)'}; use "
                            "benchmark.data_dir=DIR (or benchmark=eve_sample for the bundled sample)") from exc
        raise DataError(f"could not load dataset '{dataset}' (split {split}{at}): {type(exc).__name__}: {msg}; "
                        "check the network and HF_TOKEN, or use benchmark.data_dir=DIR "
                        "(or benchmark=eve_sample for the bundled sample)") from exc
    if not decode_media:
        for column, feature in ds.features.items():
            if getattr(feature, "decode", None) is True and type(feature).__name__ in ("Audio", "Image", "Video"):
                ds = ds.cast_column(column, type(feature)(decode=False))
    return ds


def hub_offline() -> bool:
    """Whether the Hugging Face hub is switched off (HF_HUB_OFFLINE / HF_DATASETS_OFFLINE): the cache only."""
    return any(os.environ.get(v, "").strip().lower() in ("1", "true", "yes", "on")
               for v in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"))


@functools.cache
def hub_unreachable(timeout: float = 3.0) -> str | None:
    """Why the hub cannot be reached (name lookup or TCP connect within `timeout`), or None; None also when
    offline mode is set (nothing is tried: the cache is all there is)."""
    if hub_offline():
        return None
    endpoint = urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    host, port = endpoint.hostname or "huggingface.co", endpoint.port or (443 if endpoint.scheme == "https" else 80)
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as exc:
        return f"cannot be reached ({host}:{port}: {exc.strerror or exc})"
    return None
