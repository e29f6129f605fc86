"""One writer per run dir (issue 34, point 4): a second runner process on a run dir a live one holds stops at once
(exit 2, naming the holder's host and pid) and sends nothing; a lock whose holder is gone (a dead pid here, a
reused pid, a machine restarted, a heartbeat older than STALE_S from another host) is taken over with a note.
Real CLI processes against the fake server; the lock's own rules on lock files written as a holder leaves them."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT, read_jsonl
from test_faults import args, data, ended, start

from runner.run import lock as run_lock
from runner.run.lock import LOCK_NAME, RunDirBusy, RunDirLock, me, stale_reason

TASK = "mcqa_single_answer"


def wait_for(path: Path, proc: subprocess.Popen[str]) -> None:
    """Until `path` exists (the first run holds its run dir), or the process has ended (a failure to report)."""
    while not path.exists():
        assert proc.poll() is None, proc.communicate()[1][-2000:]
        time.sleep(0.05)


def dead_pid() -> int:
    """The pid of a process that has ended (reaped): no process runs under it now."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_a_second_process_on_a_held_run_dir_exits_2_naming_the_holder_and_sends_nothing(fake_llm, tmp_path):
    fake_llm.latency = 0.3
    run_dir = tmp_path / "run"
    folder = data(tmp_path, 20)  # 6 s of requests one at a time: the second process starts well before the end
    first = start(args(fake_llm.base_url, folder, run_dir, concurrency=1))
    try:
        while fake_llm.count == 0:  # the first run is sending: it holds the run dir
            assert first.poll() is None, first.communicate()[1][-2000:]
            time.sleep(0.05)
        holder = json.loads((run_dir / LOCK_NAME).read_text())
        second = subprocess.run([sys.executable, "-m", "runner", *args(fake_llm.base_url, folder, run_dir)],
                                cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert second.returncode == 2, second.stderr[-2000:]
        (line,) = [ln for ln in second.stderr.splitlines() if ln.startswith("error:")]
        assert f"pid {first.pid} on host {socket.gethostname()}" in line and str(run_dir) in line
        assert holder["pid"] == first.pid and "Traceback" not in second.stderr
        assert first.poll() is None, "the second was refused while the first still ran"
    finally:
        done = ended(first)
    assert done.returncode == 0, done.stderr[-2000:]
    assert fake_llm.count == 20, "every sample asked exactly once: the second process sent nothing"
    assert len(read_jsonl(run_dir / "samples" / f"{TASK}.jsonl")) == 20
    assert not (run_dir / LOCK_NAME).exists(), "the lock is given back when the run ends"


def test_a_killed_holders_lock_is_taken_over_with_a_note_and_the_run_resumes(fake_llm, tmp_path):
    fake_llm.latency = 0.2
    run_dir = tmp_path / "run"
    folder = data(tmp_path, 10)
    first = start(args(fake_llm.base_url, folder, run_dir, concurrency=1))
    try:
        wait_for(run_dir / "samples" / f"{TASK}.jsonl", first)
        first.send_signal(signal.SIGKILL)  # no chance to give the lock back
    finally:
        ended(first)
    kept = len(read_jsonl(run_dir / "samples" / f"{TASK}.jsonl"))
    assert (run_dir / LOCK_NAME).exists() and kept < 10
    asked = fake_llm.count
    second = subprocess.run([sys.executable, "-m", "runner", *args(fake_llm.base_url, folder, run_dir)],
                            cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert second.returncode == 0, second.stderr[-2000:]
    note = f"took over its lock (pid {first.pid} on {socket.gethostname()} is no longer running)"
    assert note in second.stdout + second.stderr
    assert fake_llm.count - asked == 10 - kept, "the samples the killed run finished are not asked again"
    assert not (run_dir / LOCK_NAME).exists()


def write_lock(run_dir: Path, **fields: object) -> Path:
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / LOCK_NAME
    path.write_text(json.dumps({**me(), **fields}))
    return path


def test_stale_locks_on_this_host_dead_reused_pid_restarted_machine(tmp_path):
    gone = dead_pid()
    assert stale_reason({**me(), "pid": gone}, 1.0) == f"pid {gone} on {socket.gethostname()} is no longer running"
    parent = os.getppid()  # alive, started at another time than the holder said: a reused pid
    reused = stale_reason({**me(), "pid": parent, "start": "1"}, 1.0)
    assert reused == f"pid {parent} on {socket.gethostname()} is now another process"
    assert stale_reason({**me(), "boot": "another-boot"}, 1.0) is not None
    assert stale_reason(me(), 1.0) is None, "this very process holds it: alive"
    assert stale_reason(None, 1.0) is None and stale_reason(None, 3600.0) is not None  # a torn file: only once old
    with RunDirLock(tmp_path / "run") as held:  # this process holds it: a second taker is refused, naming it
        with pytest.raises(RunDirBusy, match=f"pid {os.getpid()} on host {socket.gethostname()}"):
            RunDirLock(tmp_path / "run").acquire()
        assert held.held()
    assert not (tmp_path / "run" / LOCK_NAME).exists()


def test_a_lock_from_another_host_holds_while_its_heartbeat_is_fresh(tmp_path, caplog):
    run_dir = tmp_path / "run"
    path = write_lock(run_dir, host="node-17.cluster", pid=4242, beat=time.time())
    with pytest.raises(RunDirBusy, match="pid 4242 on host node-17.cluster"):
        RunDirLock(run_dir).acquire()
    old = time.time() - run_lock.STALE_S - 5  # its node died: no heartbeat for longer than STALE_S
    write_lock(run_dir, host="node-17.cluster", pid=4242, beat=old)
    with RunDirLock(run_dir) as taker:
        assert json.loads(path.read_text())["pid"] == os.getpid() and taker.held()
    assert "took over its lock (pid 4242 on node-17.cluster has not refreshed it for" in caplog.text
    assert not path.exists()


def test_the_holder_refreshes_its_heartbeat(tmp_path, monkeypatch):
    monkeypatch.setattr(run_lock, "HEARTBEAT_S", 0.05)
    with RunDirLock(tmp_path) as held:
        first = held.mine["beat"]
        path = tmp_path / LOCK_NAME
        while json.loads(path.read_text())["beat"] == first:
            time.sleep(0.02)
        assert json.loads(path.read_text())["token"] == held.mine["token"]
