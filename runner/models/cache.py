"""Persistent on-disk response cache keyed by the full request; shared by all runs and processes."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL,
    created REAL NOT NULL
)
"""


def default_cache_dir() -> Path:
    """`$RUNNER_CACHE_DIR`, else `$XDG_CACHE_HOME/runner`, else `~/.cache/runner`."""
    if os.environ.get("RUNNER_CACHE_DIR"):
        return Path(os.environ["RUNNER_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "runner"


def request_key(request: dict[str, Any]) -> str:
    """A stable digest of everything that determines a reply (model, endpoint, messages, params).

    The API key is not part of the request dict: two keys for the same endpoint get the same reply.
    """
    blob = json.dumps(request, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class ResponseCache:
    """A SQLite file in WAL mode: concurrent readers and writers from many processes are safe.

    Only successful replies are stored (the call layer never calls `put` for an error).
    """

    def __init__(self, directory: str | Path) -> None:
        self.path = Path(directory).expanduser() / "responses.sqlite"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        conn = self._conn()
        conn.execute(_SCHEMA)
        conn.commit()

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            # timeout: wait for another process's write lock instead of failing
            conn = sqlite3.connect(self.path, timeout=60, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn = conn
        return conn

    def get_many(self, keys: list[str]) -> dict[str, dict[str, Any]]:
        """Look up many keys in one query (resume and cached re-runs read thousands at once)."""
        out: dict[str, dict[str, Any]] = {}
        conn = self._conn()
        for i in range(0, len(keys), 500):
            chunk = keys[i:i + 500]
            marks = ",".join("?" * len(chunk))
            rows = conn.execute(f"SELECT key, value FROM responses WHERE key IN ({marks})", chunk)
            out.update({k: json.loads(v) for k, v in rows})
        return out

    def get(self, key: str) -> dict[str, Any] | None:
        """The cached reply for `key`, or None."""
        row = self._conn().execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, value: dict[str, Any]) -> None:
        """Store a successful reply."""
        blob = json.dumps(value, ensure_ascii=False)
        for attempt in range(5):
            try:
                self._conn().execute(
                    "INSERT OR REPLACE INTO responses (key, value, created) VALUES (?, ?, ?)",
                    (key, blob, time.time()),
                )
                return
            except sqlite3.OperationalError:  # "database is locked" under heavy multi-process load
                time.sleep(0.05 * (attempt + 1))
        # A cache write that keeps failing costs a re-ask later, never the result: give up quietly.

    def close(self) -> None:
        """Close this thread's connection."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
