"""Which filesystem holds a path, and whether it is a network one (NFS, Lustre, GPFS, CIFS, ...): there SQLite's
WAL mode and POSIX locks cannot be trusted (runner/models/cache.py) and another node's files show up late
(runner/launchers/slurm_jobs.py). Read from /proc/self/mounts (Linux); elsewhere every path counts as local.
"""

from __future__ import annotations

import os
from pathlib import Path

NETWORK = frozenset({
    "nfs", "nfs4", "lustre", "gpfs", "cifs", "smb3", "smbfs", "ceph", "glusterfs", "beegfs", "afs", "panfs",
    "wekafs", "9p", "orangefs", "pvfs2", "davfs", "ncpfs", "coda", "quobyte", "cvfs",
    "fuse.sshfs", "fuse.ceph", "fuse.glusterfs", "fuse.juicefs", "fuse.gcsfuse", "fuse.s3fs", "fuse.rclone",
    "fuse.davfs", "fuse.cephfs", "fuse.beegfs", "fuse.lustre", "fuse.weka", "fuse.blobfuse", "fuse.goofys",
})
"""Filesystem types whose files other machines write too (as /proc/mounts names them)."""


def _unescape(field: str) -> str:
    """/proc/mounts writes a space, tab, newline and backslash in a mount point as octal escapes."""
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(code, char)
    return field


def fs_type(path: str | Path, mounts: str | None = None) -> str | None:
    """The type of the filesystem `path` is on (the mount point that holds it most closely), as the mount
    table `mounts` (default: /proc/self/mounts) names it; None when there is no mount table to read."""
    if mounts is None:
        try:
            mounts = Path("/proc/self/mounts").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
    target = Path(os.path.abspath(path))
    missing: list[str] = []
    while not target.exists() and target != target.parent:  # a folder not made yet: under its nearest existing
        missing.insert(0, target.name)  # parent, whose links are resolved
        target = target.parent
    target = target.resolve().joinpath(*missing)
    best, found = -1, None
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        point = Path(_unescape(fields[1]))
        if (target == point or point in target.parents) and len(point.parts) > best:
            best, found = len(point.parts), fields[2]
    return found


def network_fs(path: str | Path, mounts: str | None = None) -> str | None:
    """The network filesystem type `path` is on (`nfs4`, `lustre`, ...), or None for a local one."""
    kind = fs_type(path, mounts)
    if kind is None:
        return None
    return kind if kind in NETWORK or kind.startswith("nfs") else None
