"""The response cache on a network filesystem (issue 34, point 6): NFS, Lustre, GPFS, CIFS and the like are found
in the mount table, and there the cache keeps no WAL (its index lives in memory other machines cannot see) but a
rollback journal with SQLite's dot-file locks. Four real processes writing one cache at once in that mode leave
every reply and an intact file; a lock a killed process left is removed once stale."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time

import pytest
from conftest import ROOT

from runner.models import cache as cache_module
from runner.models.cache import ResponseCache, network_cache
from runner.run.mounts import fs_type, network_fs

MOUNTS = """\
/dev/sda1 / ext4 rw,relatime 0 0
server:/export/home /shared nfs4 rw,vers=4.2 0 0
/dev/nvme0n1 /shared/scratch xfs rw 0 0
10.0.0.5@o2ib:/lfs /lustre lustre rw,flock 0 0
gpfs1 /gpfs gpfs rw 0 0
//nas/team /mnt/team\\040drive cifs rw 0 0
me@host:/data /mnt/sshfs fuse.sshfs rw 0 0
tmpfs /tmp tmpfs rw 0 0
"""


@pytest.mark.parametrize(("path", "kind"), [
    ("/shared/runs/cache", "nfs4"), ("/lustre/proj/cache", "lustre"), ("/gpfs/x", "gpfs"),
    ("/mnt/team drive/cache", "cifs"), ("/mnt/sshfs/c", "fuse.sshfs"),
    ("/shared/scratch/cache", None),  # a local disk mounted inside the NFS tree
    ("/home/me/.cache/runner", None), ("/tmp/c", None),
])
def test_network_filesystems_are_found_in_the_mount_table(path, kind):
    assert network_fs(path, MOUNTS) == kind


def test_this_machines_own_mount_table_is_read(tmp_path):
    assert fs_type(tmp_path / "not" / "made" / "yet") == fs_type(tmp_path)  # its nearest existing folder's


WRITER = """
import sys
from runner.models.cache import ResponseCache
cache = ResponseCache(sys.argv[1])
for i in range(int(sys.argv[3])):
    cache.put(f"{sys.argv[2]}-{i}", {"text": f"reply {i} of {sys.argv[2]}", "i": i})
    if i % 10 == 9:
        cache.flush()
cache.close()
"""


def test_processes_writing_one_cache_on_a_network_filesystem_keep_every_reply(tmp_path, monkeypatch):
    monkeypatch.setenv("RUNNER_CACHE_FS", "network")
    env = {**os.environ, "RUNNER_CACHE_FS": "network"}
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), f"w{n}", "150"], cwd=ROOT, env=env)
             for n in range(4)]
    assert [proc.wait(timeout=120) for proc in procs] == [0, 0, 0, 0]
    cache = ResponseCache(tmp_path)
    assert cache.network == "RUNNER_CACHE_FS=network"
    keys = [f"w{n}-{i}" for n in range(4) for i in range(150)]
    found = cache.get_many(keys)
    assert len(found) == 600 and found["w3-149"] == {"text": "reply 149 of w3", "i": 149}
    conn = cache._conn()
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    cache.close()
    assert not (tmp_path / "responses.sqlite-wal").exists() and not (tmp_path / "responses.sqlite.lock").exists()


def test_a_local_cache_keeps_wal_and_the_override_says_which(tmp_path, monkeypatch):
    monkeypatch.setenv("RUNNER_CACHE_FS", "local")
    cache = ResponseCache(tmp_path)
    assert cache.network is None and cache._conn().execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    cache.close()
    monkeypatch.delenv("RUNNER_CACHE_FS")
    assert network_cache(tmp_path) == network_fs(tmp_path)


def test_a_lock_left_by_a_killed_process_is_removed_once_stale(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("RUNNER_CACHE_FS", "network")
    ResponseCache(tmp_path).close()
    lock = tmp_path / "responses.sqlite.lock"
    lock.mkdir()  # what SQLite's dot-file lock is: a folder made atomically, here left behind
    old = time.time() - cache_module.STALE_LOCK_S - 60
    os.utime(lock, (old, old))
    cache = ResponseCache(tmp_path)
    cache.put("k", {"text": "x"})
    cache.flush()
    assert cache.get("k") == {"text": "x"} and not lock.exists()
    assert "a lock of the response cache left" in caplog.text
    cache.close()
    with sqlite3.connect(tmp_path / "responses.sqlite") as conn:
        assert conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0] == 1
