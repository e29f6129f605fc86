"""Persistent on-disk response cache keyed by the full request; shared by all runs and processes.

Replies are written in batches: one SQLite transaction per FLUSH_ROWS replies or FLUSH_S seconds, where one
write per reply cost ~0.12 ms of the event loop's time per sample. A pending reply is served by `get`
meanwhile, and flushed at `close` (the run closes the cache in a `finally`, so KeyboardInterrupt keeps it),
at interpreter exit, or at once when no event loop runs (a synchronous caller sees its write on disk).
Only a killed process can lose the last batch, which costs a re-ask, never a result.

On a network filesystem (NFS, Lustre, GPFS, CIFS, ...: runner/run/mounts.py) SQLite's WAL mode is unsafe (its
index lives in shared memory, which processes on other machines do not see) and POSIX locks may be missing or
wrong, so there the cache uses a rollback journal and SQLite's dot-file locking (`unix-dotfile`: a lock made by
an atomic mkdir, which NFS and the others honour): one process at a time reads or writes, each briefly. A lock
left by a process killed while it held it is removed after STALE_LOCK_S. RUNNER_CACHE_FS=network|local
overrides the detection (a filesystem the mount table does not name, say).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
import weakref
from pathlib import Path
from typing import Any

from runner.errors import ConfigError

log = logging.getLogger("runner")

FLUSH_ROWS = 256
"""Pending replies that trigger a write (a wave of 128 concurrent replies is one or two transactions)."""
FLUSH_S = 0.25
"""The longest a reply waits in memory while the event loop runs."""
STALE_LOCK_S = 600.0
"""On a network filesystem: a dot-file lock older than this was left by a killed process (a transaction holds it
for milliseconds) and is removed."""

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
    """A SQLite file in WAL mode (on a network filesystem: dot-file locks, see above): concurrent readers and
    writers from many processes are safe.

    Only successful replies are stored (the call layer never calls `put` for an error).
    """

    def __init__(self, directory: str | Path) -> None:
        self.path = Path(directory).expanduser() / "responses.sqlite"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.network = network_cache(self.path.parent)
        if self.network:
            log.info("cache.dir=%s is on a network filesystem (%s): the cache uses a rollback journal and "
                     "dot-file locks instead of WAL", self.path.parent, self.network)
        self._local = threading.local()
        self._pending: dict[str, tuple[str, float]] = {}
        self._lock = threading.Lock()
        self._timer: tuple[asyncio.AbstractEventLoop, asyncio.TimerHandle] | None = None
        try:
            conn = self._conn()
            conn.execute(_SCHEMA)
            conn.commit()
        except sqlite3.OperationalError as exc:  # a full or read-only disk under cache.dir
            raise ConfigError(f"cache.dir={self.path.parent}: the response cache cannot be written there ({exc}); "
                              "free space there, choose another cache.dir, or cache.enabled=false") from None
        _open.add(self)

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            # timeout: wait for another process's write lock instead of failing
            if self.network:
                self._clear_stale_lock()
                conn = sqlite3.connect(f"{self.path.absolute().as_uri()}?vfs=unix-dotfile", timeout=60,
                                       isolation_level=None, uri=True)
                conn.execute("PRAGMA journal_mode=DELETE")
                conn.execute("PRAGMA synchronous=FULL")
            else:
                conn = sqlite3.connect(self.path, timeout=60, isolation_level=None)
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn = conn
        return conn

    def _clear_stale_lock(self) -> None:
        lock = self.path.with_name(self.path.name + ".lock")
        with contextlib.suppress(OSError):
            age = time.time() - lock.stat().st_mtime
            if age > STALE_LOCK_S:
                if lock.is_dir():
                    lock.rmdir()
                else:
                    lock.unlink()
                log.warning("removed %s, a lock of the response cache left %.0f s ago by a killed process", lock, age)

    def get_many(self, keys: list[str]) -> dict[str, dict[str, Any]]:
        """Look up many keys in one query (resume and cached re-runs read thousands at once)."""
        out: dict[str, dict[str, Any]] = {}
        conn = self._conn()
        for i in range(0, len(keys), 500):
            chunk = keys[i:i + 500]
            marks = ",".join("?" * len(chunk))
            rows = conn.execute(f"SELECT key, value FROM responses WHERE key IN ({marks})", chunk)
            out.update({k: json.loads(v) for k, v in rows})
        with self._lock:
            out.update({k: json.loads(self._pending[k][0]) for k in keys if k in self._pending})
        return out

    def get(self, key: str) -> dict[str, Any] | None:
        """The cached reply for `key`, or None."""
        pending = self._pending.get(key)
        if pending is not None:
            return json.loads(pending[0])  # type: ignore[no-any-return]
        row = self._conn().execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, value: dict[str, Any]) -> None:
        """Store a successful reply (written with the next batch)."""
        blob = json.dumps(value, ensure_ascii=False)
        with self._lock:
            self._pending[key] = (blob, time.time())
            full = len(self._pending) >= FLUSH_ROWS
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if full or loop is None:
            self.flush()
        elif self._timer is None or self._timer[0] is not loop:  # none yet, or one of a finished loop
            self._timer = (loop, loop.call_later(FLUSH_S, self.flush))

    def flush(self) -> None:
        """Write the pending replies in one transaction."""
        timer, self._timer = self._timer, None
        if timer is not None:
            timer[1].cancel()
        with self._lock:
            rows = [(k, blob, created) for k, (blob, created) in self._pending.items()]
        if not rows:
            return
        conn = self._conn()
        for attempt in range(5):
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    conn.executemany("INSERT OR REPLACE INTO responses (key, value, created) VALUES (?, ?, ?)",
                                     rows)
                    conn.execute("COMMIT")
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
                break
            except sqlite3.OperationalError as exc:  # "database is locked" under heavy multi-process load
                if "locked" not in str(exc) and "busy" not in str(exc):  # full, read-only: waiting cannot help
                    log.warning("the response cache could not keep %d repl%s (%s); they will be asked again if "
                                "needed", len(rows), "y" if len(rows) == 1 else "ies", exc)
                    break
                time.sleep(0.05 * (attempt + 1))
        # Written or not, these rows leave memory: a cache write that keeps failing costs a re-ask later,
        # never the result (and a reply put again meanwhile stays pending).
        with self._lock:
            for key, blob, _ in rows:
                if self._pending.get(key, (None,))[0] == blob:
                    del self._pending[key]

    def close(self) -> None:
        """Write what is pending and close this thread's connection."""
        self.flush()
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None


def network_cache(directory: Path) -> str | None:
    """The network filesystem under `directory` (None: a local one), or what RUNNER_CACHE_FS says."""
    forced = os.environ.get("RUNNER_CACHE_FS", "").strip().lower()
    if forced in ("network", "local"):
        return "RUNNER_CACHE_FS=network" if forced == "network" else None
    from runner.run.mounts import network_fs

    return network_fs(directory)


_open: weakref.WeakSet[ResponseCache] = weakref.WeakSet()


@atexit.register
def _flush_all() -> None:
    """A run that exits without closing its cache (an uncaught error in a script) still keeps its replies."""
    for cache in list(_open):
        with contextlib.suppress(sqlite3.Error):
            cache.flush()
