"""Which data a score was computed on: where the rows came from, the dataset revision, how many rows were
used (after `limit`), and a sha256 over exactly those rows, which changes when any of them changes.

The digest is over each row's canonical JSON (sorted keys, no spaces), one per line, in order; values JSON
cannot hold (bytes of an audio column, dates) are hashed by their `repr`, so a changed value changes it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any


def _fallback(value: Any) -> str:
    if isinstance(value, bytes | bytearray):
        return "sha256:" + hashlib.sha256(value).hexdigest()
    return repr(value)


def rows_sha256(rows: Iterable[Mapping[str, Any]]) -> tuple[int, str]:
    """(number of rows, hex sha256 over their canonical JSON lines)."""
    digest = hashlib.sha256()
    n = 0
    for row in rows:
        digest.update(json.dumps(row, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                                 default=_fallback).encode("utf-8"))
        digest.update(b"\n")
        n += 1
    return n, digest.hexdigest()


def data_block(source: str, revision: str | None, rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The results.json `data` block of one task."""
    n, sha = rows_sha256(rows)
    return {"source": source, "revision": revision, "rows": n, "sha256": sha}
