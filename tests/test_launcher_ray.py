"""`launcher=ray launcher.address=...` on a real Ray head (issue 34, points 1 and 2): scripts/ray_local.sh starts
one on 127.0.0.1 from its own folder with a bare environment, as a cluster's head is. A 3-model sweep from
another folder, with a relative sweep dir and the provider key exported only in the submitting shell, gives the
basic launcher's results and report, and the key is written nowhere (not in Ray's own logs either); a job whose
Ray worker is killed past its retries is a lost job, the others finish, the sweep exits 1 naming it."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ROOT
from test_launcher_outcomes import (
    KEY,
    basic_sweep,
    cluster_configs,
    cluster_sweep,
    engine_missing,
    finished,
    same_as_basic,
)
from test_sweep import reply

from runner.run.lock import LOCK_NAME

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("clusters")]

RAY_ROOT = Path(os.environ.get("RUNNER_RAY_ROOT", "/tmp/runner-ray"))
CLIENT = "ray://127.0.0.1:10091"
# The head's token authentication (Ray >= 2.59): a client says so, the token is ~/.ray/auth_token.
RAY_ENV = {"RAY_AUTH_MODE": "token", "RAY_USAGE_STATS_ENABLED": "0"}


def _script(command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(ROOT / "scripts" / "ray_local.sh"), command], capture_output=True, text=True,
                          timeout=300)


@pytest.fixture(scope="session")
def ray_head() -> Iterator[str]:
    """The Ray client address of a head on this machine, started by scripts/ray_local.sh when none runs (then
    stopped at the end)."""
    started = False
    if _script("status").returncode != 0:
        if importlib.util.find_spec("ray") is None or importlib.util.find_spec("hydra_plugins.hydra_ray_launcher") \
                is None:
            engine_missing("Ray is not installed: bash scripts/install.sh cluster")
        proc = _script("start")
        started = True
        if proc.returncode != 0:
            engine_missing(f"scripts/ray_local.sh start failed: {proc.stderr[-500:]}")
    yield CLIENT
    if started:
        _script("stop")


def test_a_ray_sweep_on_a_cluster_equals_the_basic_sweep_with_a_key_only_in_this_shell(fake_llm, tmp_path, ray_head):
    fake_llm.default, fake_llm.api_key = reply, KEY
    conf = cluster_configs(tmp_path, fake_llm.base_url)
    basic = basic_sweep(fake_llm, conf, tmp_path)
    done = finished(cluster_sweep(conf, "ray-sweep", "launcher=ray", f"launcher.address={ray_head}", cwd=tmp_path,
                                  env=RAY_ENV))
    assert done.returncode == 0, done.stderr[-3000:]
    same_as_basic(tmp_path / "ray-sweep", basic)
    assert len(fake_llm.requests) == 3 * 6, "each sample asked once"
    # The key went to the jobs, and nowhere else: not the sweep's output, files, or Ray's session logs.
    assert KEY not in done.stdout + done.stderr
    leaked = [p for root in (tmp_path, RAY_ROOT) for p in root.rglob("*")
              if p.is_file() and not p.is_symlink() and KEY.encode() in _bytes(p)]
    assert leaked == []
    assert "CLUSTER_TEST_KEY" in done.stdout + done.stderr  # its name is said, for a user who wonders


def _bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:  # a socket, a file gone meanwhile
        return b""


def test_a_job_whose_ray_worker_is_killed_past_its_retries_is_lost_and_the_others_finish(fake_llm, tmp_path,
                                                                                          ray_head):
    fake_llm.default, fake_llm.api_key, fake_llm.latency = reply, KEY, 0.3
    conf = cluster_configs(tmp_path, fake_llm.base_url)
    proc = cluster_sweep(conf, str(tmp_path / "sweep"), "launcher=ray", f"launcher.address={ray_head}",
                         "hydra.launcher.ray.remote.max_retries=0", cwd=tmp_path, env=RAY_ENV, limit=12)
    lock = tmp_path / "sweep" / "0_m1" / LOCK_NAME
    try:
        while len([b for b in list(fake_llm.requests) if b["model"] == "m1"]) < 2:
            assert proc.poll() is None, proc.communicate()[1][-3000:]
            time.sleep(0.1)
        os.kill(json.loads(lock.read_text())["pid"], signal.SIGKILL)  # the Ray worker running job 0
    finally:
        done = finished(proc)
    assert done.returncode == 1, done.stderr[-3000:]
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr
    (lost,) = [line for line in done.stderr.splitlines() if line.startswith("job 0 (0_m1) lost: its Ray worker died")]
    assert "resume it alone: runner model=m1" in lost
    sweep = tmp_path / "sweep"
    assert {p.parent.name for p in sweep.glob("*/results.json")} == {"1_m2", "2_m3"}  # the pending job ran too
    assert "0_m1: lost" in (sweep / "report" / "comparison.md").read_text()
