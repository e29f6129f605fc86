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


class RowsDigest:
    """`rows_sha256` taken a row at a time, for rows read once and not kept."""

    def __init__(self) -> None:
        self.n, self._sha = 0, hashlib.sha256()

    def add(self, row: Mapping[str, Any]) -> None:
        self._sha.update(json.dumps(row, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                                    default=_fallback).encode("utf-8"))
        self._sha.update(b"\n")
        self.n += 1

    def hexdigest(self) -> str:
        return self._sha.hexdigest()

    def block(self, source: str, revision: str | None) -> dict[str, Any]:
        """The results.json `data` block of the rows added so far."""
        return {"source": source, "revision": revision, "rows": self.n, "sha256": self.hexdigest()}


def _digest(rows: Iterable[Mapping[str, Any]]) -> RowsDigest:
    digest = RowsDigest()
    for row in rows:
        digest.add(row)
    return digest


def rows_sha256(rows: Iterable[Mapping[str, Any]]) -> tuple[int, str]:
    """(number of rows, hex sha256 over their canonical JSON lines)."""
    digest = _digest(rows)
    return digest.n, digest.hexdigest()


def data_block(source: str, revision: str | None, rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The results.json `data` block of one task."""
    return _digest(rows).block(source, revision)
