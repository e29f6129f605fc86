"""The run directory on disk: `samples/<task>.jsonl` appended as samples finish, and `results.json`; the
pipeline is its only writer (tasks get earlier records through `Context.previous`)."""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from runner.config.paths import inside
from runner.errors import RunnerError
from runner.types import SURROGATE, clean_text

DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOTDIR,
                         errno.EEXIST, errno.EISDIR, errno.EIO, errno.EFBIG, errno.ENAMETOOLONG})
"""A failed file operation with one of these is the filesystem's answer (full, read-only, not ours, not a
folder), not a bug: one line naming the path and the errno, exit 2."""


class RunDirError(RunnerError):
    """A file of the run cannot be written (the run dir is a file, read-only, not writable, or its disk is
    full): exit 2, like any other place the run was told to use and cannot."""


_FIX = {errno.ENOSPC: "free space there", errno.EDQUOT: "free space there (the disk quota is used up)",
        errno.EROFS: "its filesystem is read-only: remount it writable",
        errno.EACCES: "make it writable for this user", errno.EPERM: "make it writable for this user",
        errno.ENOTDIR: "a file stands where a folder is needed: move it away",
        errno.EEXIST: "a file stands where a folder is needed: move it away"}


def errno_text(exc: OSError) -> str:
    """`No space left on device (errno 28, ENOSPC)`."""
    return f"{exc.strerror or exc} (errno {exc.errno}, {errno.errorcode.get(exc.errno or 0, '?')})"


def disk_error(exc: BaseException, run_dir: Path | None, *, started: bool) -> RunDirError | None:
    """The one line for a file operation the filesystem refused (DISK_ERRNOS, with the path it names); None for
    any other error. `run_dir` None: the run dir was being made. `started`: records may have been written (they
    are kept, and a re-run goes on)."""
    if not isinstance(exc, OSError) or exc.errno not in DISK_ERRNOS or exc.filename is None:
        return None
    path = Path(os.fsdecode(exc.filename))
    then = f"re-run with hydra.run.dir={run_dir} to ask the rest" if started else "nothing was sent"
    if run_dir is not None and not path.is_relative_to(run_dir):  # e.g. a data file this user may not read
        return RunDirError(f"cannot use {path}: {errno_text(exc)}; {then}")
    fix = _FIX.get(exc.errno or 0, "make it writable")
    if not started:
        shown = run_dir if run_dir is not None and path.name.startswith(_PROBE) else path
        return RunDirError(f"cannot use {shown} as the run dir: {errno_text(exc)}; nothing was sent; {fix}, or "
                           "choose another hydra.run.dir")
    return RunDirError(f"cannot write {path}: {errno_text(exc)}; the run stopped, keeping the records written "
                       f"before and this invocation's usage (invocations.jsonl); {fix}, then {then}")


_PROBE = ".write-check-"


def check_run_dir(run_dir: Path) -> None:
    """Before anything is planned or sent: the run dir is a folder this process can write, with room for a byte
    (else every reply would be lost): a probe file is written and removed; RunDirError names the path."""
    probe = Path(run_dir) / f"{_PROBE}{os.getpid()}"
    try:
        Path(run_dir).mkdir(parents=True, exist_ok=True)
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, b"x")
        finally:
            os.close(fd)
            with contextlib.suppress(OSError):
                probe.unlink()
    except OSError as exc:
        exc.filename = exc.filename or str(probe)  # os.write names no file
        raise disk_error(exc, run_dir, started=False) or exc from None


def record_key(sample_id: Any, epoch: int = 0) -> str:
    """Ids compare as strings, so 3 and "3" (JSON round trips) are the same sample; epochs after the first
    are records of their own. An id's lone surrogates read as U+FFFD, as its record has it on disk."""
    key = clean_text(str(sample_id))[0]
    return key if not epoch else f"{key}\x1fepoch{epoch}"


def key_of(record: Mapping[str, Any]) -> str:
    """A record's key: its sample id and epoch (records written before epochs existed are epoch 0)."""
    return record_key(record["id"], _epoch(record))


def _epoch(record: Mapping[str, Any]) -> int:
    epoch = record.get("epoch") or 0
    return epoch if isinstance(epoch, int) and not isinstance(epoch, bool) and epoch >= 0 else -1


def _readable(rec: Any) -> bool:
    """A line the store can use: an object with an id and an epoch (a hand-edited `epoch: "x"` is not, and is
    skipped like a torn line: that sample is asked again)."""
    return isinstance(rec, dict) and "id" in rec and _epoch(rec) >= 0


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
            if _readable(rec):
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
        self._files: dict[str, int] = {}
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
                if _readable(rec):
                    yield start, rec

    def append(self, record: dict[str, Any]) -> int:
        """Append one record and flush it, so a killed run keeps every finished sample; returns its offset."""
        return self.append_line(record["task"], dumps(record))

    def append_line(self, task: str, line: str) -> int:
        """Append one record already serialised (`dumps`, no newline); returns its offset. Written with one
        unbuffered write, so a killed run keeps every finished sample; a failed write (disk full, I/O error)
        takes its torn bytes back, so the file ends on a whole record, and raises the OSError."""
        fd = self._files.get(task)
        if fd is None:
            path = self.path(task)
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
            self._files[task] = fd
            self._ends[task] = os.fstat(fd).st_size
            if self._ends[task] and not _ends_with_newline(path):
                self._write(task, b"\n")  # keep a torn line from swallowing this record
        data = (line + "\n").encode("utf-8")
        offset = self._ends[task]
        self._write(task, data)
        return offset

    def _write(self, task: str, data: bytes) -> None:
        fd, offset = self._files[task], self._ends[task]
        try:
            done = 0
            while done < len(data):
                done += os.write(fd, data[done:])
        except OSError as exc:
            with contextlib.suppress(OSError):  # truncating never needs space
                os.ftruncate(fd, offset)
            if exc.filename is None:
                exc.filename = str(self.path(task))
            raise
        self._ends[task] = offset + len(data)

    def close(self) -> None:
        """Close the files (fsync first: the records are the run's only copy); every file is closed even when
        one cannot be synced, and that OSError is raised after."""
        failed: OSError | None = None
        for task, fd in self._files.items():
            try:
                os.fsync(fd)
            except OSError as exc:
                exc.filename = exc.filename or str(self.path(task))
                failed = failed or exc
            finally:
                os.close(fd)
        self._files.clear()
        if failed is not None:
            raise failed


def dumps(record: dict[str, Any]) -> str:
    """A record as its samples-file line (without the newline). Untrusted text cannot stop the run here: a lone
    surrogate (no UTF-8 file can hold one) becomes U+FFFD, in the line and in `record` itself (so what the run
    keeps of it is what the file says), with a note naming the fields; a record that cannot be JSON at all
    (nested deeper than Python can write) becomes that sample's error record."""
    try:
        line = json.dumps(record, ensure_ascii=False, default=str)
    except (RecursionError, ValueError) as exc:
        kept = {k: record.get(k) for k in ("id", "task", "model", "epoch", "fingerprint")}
        record.clear()
        record.update(kept, prompt=None, reference=None, status="error",
                      error=f"the record cannot be written as JSON ({type(exc).__name__}: {exc}); e.g. data nested "
                            "too deeply")
        return json.dumps(record, ensure_ascii=False, default=str)
    if line.isascii() or not SURROGATE.search(line):
        return line
    fields = [k for k, v in record.items() if SURROGATE.search(json.dumps(v, ensure_ascii=False, default=str))]
    cleaned = json.loads(SURROGATE.sub("\ufffd", line))
    record.clear()
    record.update(cleaned)
    record["notes"] = [*(record.get("notes") or []), f"lone surrogates (half of a UTF-16 pair, e.g. a cut emoji) "
                       f"in {', '.join(fields)} replaced by U+FFFD"]
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
    """Write JSON atomically (a reader never sees a half-written results file); lone surrogates in untrusted
    text become U+FFFD, and a number that is not finite (NaN, infinity: no JSON) is null. A failed write (disk
    full) removes its temporary file and raises the OSError."""
    try:
        text = json.dumps(data, indent=2, ensure_ascii=False, default=str, allow_nan=False) + "\n"
    except ValueError:  # a NaN or an infinity somewhere (a hand-edited record): absent, never `NaN` in the file
        text = json.dumps(_finite(data), indent=2, ensure_ascii=False, default=str) + "\n"
    if not text.isascii():
        text = SURROGATE.sub("\ufffd", text)
    tmp = path.with_suffix(path.suffix + ".tmp")
    try:
        tmp.write_bytes(text.encode("utf-8"))
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


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
    value, epoch = record["id"], _epoch(record)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (0, value, epoch)
    return (1, str(value), epoch)


def _finite(value: Any) -> Any:
    """`value` with every float that is not finite replaced by None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value
