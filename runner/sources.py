"""Rows of a task's data: local JSONL files (read line by line) or a dataset through `datasets`.

The only module importing `datasets` (lazily: it takes seconds to import).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from runner.errors import DataError

BAD_ROW = "__bad_row__"
"""Key of a placeholder row whose line could not be read; the pipeline records it as an error."""


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Rows of a JSONL file; an unreadable line becomes a placeholder row so the rest still runs."""
    rows: list[dict[str, Any]] = []
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                rows.append({BAD_ROW: f"{path}:{lineno}: not valid JSON ({exc.msg})"})
                continue
            if not isinstance(row, dict):
                rows.append({BAD_ROW: f"{path}:{lineno}: expected a JSON object, got {type(row).__name__}"})
                continue
            rows.append(row)
    return rows


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


def load_rows(task: str, dataset: str | None, split: str, data_dir: str | None,
              revision: str | None = None) -> list[dict[str, Any]]:
    """All rows of one task, in dataset order (a hub dataset at `revision`, when one is given)."""
    if data_dir:
        return read_jsonl(local_task_file(data_dir, task))
    if not dataset:
        raise DataError(f"task '{task}' names no dataset; set benchmark.data_dir=DIR with {task}.jsonl")
    return load_dataset_rows(dataset, split, revision)


def load_dataset_rows(dataset: str, split: str, revision: str | None = None) -> list[dict[str, Any]]:
    """Rows of a hub dataset (or a local dataset folder) through `datasets`."""
    return [dict(r) for r in open_dataset(dataset, split, revision=revision)]


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
    import datasets

    try:
        ds = datasets.load_dataset(dataset, split=split, revision=revision)
    except Exception as exc:  # noqa: BLE001 - many failure types (network, auth, missing split)
        msg = " ".join(str(exc).split())[:200]
        if isinstance(exc, ValueError) and str(exc).startswith("Unknown split"):
            raise MissingSplit(f"dataset '{dataset}' has no split '{split}': {msg}") from exc
        at = f", revision {revision}" if revision else ""
        raise DataError(f"could not load dataset '{dataset}' (split {split}{at}): {type(exc).__name__}: {msg}; "
                        "check the network and HF_TOKEN, or use benchmark.data_dir=DIR "
                        "(or benchmark=eve_sample for the bundled sample)") from exc
    if not decode_media:
        for column, feature in ds.features.items():
            if getattr(feature, "decode", None) is True and type(feature).__name__ in ("Audio", "Image", "Video"):
                ds = ds.cast_column(column, type(feature)(decode=False))
    return ds
