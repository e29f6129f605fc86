"""One writer per run dir: `<run dir>/.runner.lock` names the process that runs there.

A run takes the lock before it plans anything (runner/run/app.py) and gives it back when it ends, however it
ends. A second process on a run dir whose holder is alive stops at once (exit 2), naming the holder's host and
pid: two processes on one run dir would both send every pending request, and both pay for it.

The lock is a file created with O_EXCL (atomic on local disks and NFSv3+), holding the holder's host, pid,
pid namespace, boot id and process start time, and a heartbeat the holder refreshes every HEARTBEAT_S seconds.
A lock is stale, and taken over with a warning, when its holder is gone:

- on this host (same host name, boot and pid namespace): its pid is not running, or runs another program
  (a reused pid: another start time), or the machine has restarted since;
- on another host (a shared filesystem): its heartbeat is older than STALE_S seconds (a dead node, a
  killed job), since a pid there cannot be asked.

A take-over goes through a second O_EXCL file, so two processes that find the same stale lock cannot both win.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import threading
import time
import uuid
from pathlib import Path
from types import TracebackType
from typing import Any

from runner.errors import ConfigError

log = logging.getLogger("runner")

LOCK_NAME = ".runner.lock"
HEARTBEAT_S = 10.0
"""How often the holder says it is alive (it rewrites the lock's `beat`)."""
STALE_S = 60.0
"""A lock from another host whose heartbeat is older than this is stale (docs/sweeps.md)."""
_GUARD_STALE_S = 30.0
"""A take-over guard older than this was left by a process killed while taking over."""


class RunDirBusy(ConfigError):
    """Another live runner process holds the run dir (exit 2)."""


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:  # gone meanwhile (released), or unreadable
        return None


def _first_line(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError:
        return ""


def _start_ticks(pid: int) -> str:
    """The process's start time in clock ticks since boot (/proc/PID/stat field 22); "" where unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8")
    except OSError:
        return ""
    fields = stat.rpartition(")")[2].split()
    return fields[19] if len(fields) > 19 else ""


def _pid_namespace() -> str:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""


def me() -> dict[str, Any]:
    """What a lock says of the process that holds it."""
    return {"host": socket.gethostname(), "pid": os.getpid(), "pidns": _pid_namespace(),
            "boot": _first_line(Path("/proc/sys/kernel/random/boot_id")), "start": _start_ticks(os.getpid()),
            "since": time.strftime("%Y-%m-%d %H:%M:%S"), "beat": time.time(), "token": uuid.uuid4().hex}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


def stale_reason(holder: dict[str, Any] | None, text_age: float, now: float | None = None) -> str | None:
    """Why the lock of `holder` (its parsed file; None: empty or unreadable, `text_age` seconds old) no longer
    holds the run dir, or None while its holder may be alive."""
    now = time.time() if now is None else now
    if holder is None:  # a process killed between creating the file and writing it (or a torn file)
        return f"an unreadable lock left {text_age:.0f} s ago" if text_age > _GUARD_STALE_S else None
    here = me()
    pid = int(holder.get("pid") or 0)
    local = holder.get("host") == here["host"] and holder.get("pidns", "") == here["pidns"]
    if local and holder.get("boot") and here["boot"] and holder["boot"] != here["boot"]:
        return f"pid {pid} on {holder['host']} ran before this machine restarted"
    if local:
        if not _alive(pid):
            return f"pid {pid} on {holder['host']} is no longer running"
        start = _start_ticks(pid)
        if holder.get("start") and start and start != holder["start"]:
            return f"pid {pid} on {holder['host']} is now another process"
        return None
    age = now - float(holder.get("beat") or 0)
    if age > STALE_S:
        return f"pid {pid} on {holder.get('host')} has not refreshed it for {age:.0f} s (more than {STALE_S:.0f} s)"
    return None


def _parse(text: str | None) -> dict[str, Any] | None:
    if not text:
        return None
    try:
        holder = json.loads(text)
    except ValueError:
        return None
    return holder if isinstance(holder, dict) and "pid" in holder else None


def _busy(run_dir: Path, holder: dict[str, Any]) -> RunDirBusy:
    return RunDirBusy(
        f"run dir {run_dir} is in use by another runner process: pid {holder.get('pid')} on host "
        f"{holder.get('host')} (since {holder.get('since')}); two processes on one run dir would both send its "
        "requests, so nothing was sent; wait for it to end (or stop it), then re-run: a lock whose process has "
        f"died is taken over, from another host after {STALE_S:.0f} s without its heartbeat")


class RunDirLock:
    """`with RunDirLock(run_dir):` holds the run dir for this process (RunDirBusy when another live one does)."""

    def __init__(self, run_dir: str | Path) -> None:
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / LOCK_NAME
        self.mine: dict[str, Any] = {}
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None

    def __enter__(self) -> RunDirLock:
        self.acquire()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.release()

    def acquire(self) -> None:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        for _ in range(20):
            self.mine = me()
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                text = _read(self.path)
                if text is None:
                    continue  # released meanwhile: try again
                holder = _parse(text)
                try:
                    age = time.time() - self.path.stat().st_mtime
                except OSError:
                    continue
                why = stale_reason(holder, age)
                if why is None:
                    raise _busy(self.run_dir, holder or {"pid": "?", "host": "?", "since": "?"}) from None
                if self._take_over(text, why):
                    return
                time.sleep(0.05)
                continue
            try:
                os.write(fd, json.dumps(self.mine).encode("utf-8"))
            finally:
                os.close(fd)
            self._start_heartbeat()
            return
        raise RunDirBusy(f"run dir {self.run_dir}: its lock {self.path} keeps changing (other runner processes "
                         "are starting there); run one process per run dir")

    def _take_over(self, seen: str, why: str) -> bool:
        guard = self.path.with_name(LOCK_NAME + ".takeover")
        try:
            fd = os.open(guard, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            with contextlib.suppress(OSError):
                if time.time() - guard.stat().st_mtime > _GUARD_STALE_S:
                    guard.unlink()
            return False
        try:
            os.close(fd)
            if _read(self.path) != seen:  # another process took it (or its holder left) meanwhile: look again
                return False
            self._write()
            log.warning("run dir %s: took over its lock (%s); no other process runs there", self.run_dir, why)
            self._start_heartbeat()
            return True
        finally:
            with contextlib.suppress(OSError):
                guard.unlink()

    def _write(self) -> None:
        """Replace the lock file with this process's (atomic: a reader sees the old one or the new one)."""
        tmp = self.path.with_name(f"{LOCK_NAME}.{self.mine['token']}.tmp")
        tmp.write_text(json.dumps(self.mine), encoding="utf-8")
        os.replace(tmp, self.path)

    def held(self) -> bool:
        holder = _parse(_read(self.path))
        return holder is not None and holder.get("token") == self.mine.get("token")

    def _start_heartbeat(self) -> None:
        self._stop.clear()
        self._beat = threading.Thread(target=self._heartbeat, name="run-dir-lock", daemon=True)
        self._beat.start()

    def _heartbeat(self) -> None:
        warned = False
        while not self._stop.wait(HEARTBEAT_S):
            try:
                if self.held():
                    self.mine["beat"] = time.time()
                    self._write()
                elif not warned:
                    warned = True
                    log.error("run dir %s: another process took over this run's lock (%s); two processes may now "
                              "write there", self.run_dir, _read(self.path))
            except OSError as exc:  # a full or unreachable disk: the run's own writes will say so
                log.debug("run dir lock heartbeat: %s", exc)

    def release(self) -> None:
        self._stop.set()
        if self._beat is not None:
            self._beat.join(timeout=5)
            self._beat = None
        with contextlib.suppress(OSError):
            if self.held():
                self.path.unlink()
