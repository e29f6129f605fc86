"""`launcher=slurm` on a real one-node Slurm (issue 34): scripts/slurm_local.sh runs two clusters on this machine,
one with accounting (slurmdbd, sacct) and one without. A 3-model sweep gives the basic launcher's results and
report; `scancel` of one array task stops that job with its books written (the others finish, the report names
it, exit 1, a re-run completes it without asking a finished sample again); a job killed outright (SIGKILL, as
the OOM killer would) is a lost job on a cluster without sacct too, found in seconds. The jobs reach the fake
server on 127.0.0.1."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ROOT, read_jsonl
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

SLURM_ROOT = Path(os.environ.get("RUNNER_SLURM_ROOT", "/var/lib/runner-slurm"))
# One CPU and a small memory request each, so the three jobs run at once on a small node.
SMALL = ("launcher=slurm", "hydra.launcher.cpus_per_task=1", "hydra.launcher.mem_gb=1")


def _answers(conf: Path) -> bool:
    try:
        proc = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, timeout=20,
                              env={**os.environ, "SLURM_CONF": str(conf)})
    except (OSError, subprocess.SubprocessError):
        return False
    return proc.returncode == 0 and any(s in proc.stdout for s in ("idle", "mixed", "allocated"))


@pytest.fixture(scope="session")
def slurm() -> Iterator[dict[str, Path]]:
    """SLURM_CONF of each local cluster (`acct`, `noacct`), started by scripts/slurm_local.sh when it is not up
    and this is root with Slurm installed (then stopped again at the end)."""
    confs = {name: SLURM_ROOT / name / "slurm.conf" for name in ("acct", "noacct")}
    started = False
    if not all(_answers(conf) for conf in confs.values()):
        if shutil.which("slurmctld") is None or os.geteuid() != 0:
            engine_missing("no one-node Slurm runs here: as root with slurm-wlm, slurmdbd, munge and mariadb-server "
                           "installed, `bash scripts/slurm_local.sh start` starts one (.ci/run does)")
        proc = subprocess.run(["bash", str(ROOT / "scripts" / "slurm_local.sh"), "start"], capture_output=True,
                              text=True, timeout=300)
        started = True
        if proc.returncode != 0 or not all(_answers(conf) for conf in confs.values()):
            engine_missing(f"scripts/slurm_local.sh start failed: {proc.stderr[-500:]}")
    yield confs
    if started:
        subprocess.run(["bash", str(ROOT / "scripts" / "slurm_local.sh"), "stop"], capture_output=True, timeout=120)


def asked(fake_llm, model: str) -> list[str]:
    """The questions the server was asked for `model`, in order."""
    return [body["messages"][-1]["content"] for body in list(fake_llm.requests) if body["model"] == model]


def test_a_slurm_sweep_without_accounting_equals_the_basic_sweep(fake_llm, tmp_path, slurm):
    fake_llm.default, fake_llm.api_key = reply, KEY
    conf = cluster_configs(tmp_path, fake_llm.base_url)
    basic = basic_sweep(fake_llm, conf, tmp_path)
    # A relative sweep dir: the jobs write where the submitter meant (its folder), as the basic launcher does.
    done = finished(cluster_sweep(conf, "slurm-sweep", *SMALL, cwd=tmp_path, env={"SLURM_CONF": str(slurm["noacct"])}))
    assert done.returncode == 0, done.stderr[-3000:]
    same_as_basic(tmp_path / "slurm-sweep", basic)
    assert len(fake_llm.requests) == 3 * 6, "each sample asked once"


def test_scancel_of_one_task_stops_it_with_its_books_and_a_rerun_completes_it(fake_llm, tmp_path, slurm):
    fake_llm.default, fake_llm.api_key, fake_llm.latency = reply, KEY, 0.3
    conf = cluster_configs(tmp_path, fake_llm.base_url)
    env = {"SLURM_CONF": str(slurm["acct"])}
    proc = cluster_sweep(conf, str(tmp_path / "sweep"), *SMALL, cwd=tmp_path, env=env, limit=15)
    try:
        while len(asked(fake_llm, "m2")) < 3:  # job 1 is sending
            assert proc.poll() is None, proc.communicate()[1][-3000:]
            time.sleep(0.1)
        queue = subprocess.run(["squeue", "-h", "-r", "-o", "%i"], capture_output=True, text=True, env={
            **os.environ, **env}, check=True).stdout.split()
        (task,) = [job for job in queue if job.endswith("_1")]
        subprocess.run(["scancel", task], check=True, env={**os.environ, **env})
    finally:
        done = finished(proc)
    assert done.returncode == 1, done.stderr[-3000:]
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr
    resume = [line for line in done.stderr.splitlines() if line.startswith("job 1 (1_m2) stopped by SIGTERM")]
    assert len(resume) == 1 and "hydra.run.dir=" in resume[0], done.stderr[-3000:]
    assert "1 of 3 job(s) of the sweep failed" in done.stderr.splitlines()[-1]
    sweep = tmp_path / "sweep"
    assert {p.parent.name for p in sweep.glob("*/results.json")} >= {"0_m1", "2_m3"}
    assert "1_m2" in (sweep / "report" / "comparison.md").read_text().split("## Failed jobs")[1]
    # Its spend is in its books: every request the server answered before the signal is counted.
    (invocation,) = [json.loads(line) for line in (sweep / "1_m2" / "invocations.jsonl").read_text().splitlines()]
    kept = read_jsonl(sweep / "1_m2" / "samples" / "mcqa_single_answer.jsonl")
    sent = len(asked(fake_llm, "m2"))
    assert len(kept) <= invocation["usage"]["m2"]["requests"] <= sent and 1 <= len(kept) < 15

    fake_llm.reset()
    fake_llm.latency = 0.0
    again = finished(cluster_sweep(conf, str(sweep), *SMALL, cwd=tmp_path, env=env, limit=15))
    assert again.returncode == 0, again.stderr[-3000:]
    assert asked(fake_llm, "m1") == asked(fake_llm, "m3") == []  # finished jobs: nothing asked again
    assert {p.parent.name for p in sweep.glob("*/results.json")} == {"0_m1", "1_m2", "2_m3"}
    final = read_jsonl(sweep / "1_m2" / "samples" / "mcqa_single_answer.jsonl")
    assert len(asked(fake_llm, "m2")) == len(final) - len(kept), "only the samples not finished are asked"
    assert sorted(str(r["id"]) for r in final) == sorted({str(r["id"]) for r in final})


def test_a_job_killed_outright_is_lost_and_found_fast_without_sacct(fake_llm, tmp_path, slurm):
    fake_llm.default, fake_llm.api_key, fake_llm.latency = reply, KEY, 0.3
    conf = cluster_configs(tmp_path, fake_llm.base_url)
    env = {"SLURM_CONF": str(slurm["noacct"])}
    proc = cluster_sweep(conf, str(tmp_path / "sweep"), *SMALL, cwd=tmp_path, env=env, limit=15)
    try:
        while len(asked(fake_llm, "m3")) < 2:
            assert proc.poll() is None, proc.communicate()[1][-3000:]
            time.sleep(0.1)
        # As the kernel's OOM killer or a crash would: the job's process ends at once, no handler runs.
        os.kill(json.loads((tmp_path / "sweep" / "2_m3" / LOCK_NAME).read_text())["pid"], signal.SIGKILL)
    finally:
        done = finished(proc, timeout=180)
    assert done.returncode == 1, done.stderr[-3000:]
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr
    (lost,) = [line for line in done.stderr.splitlines() if line.startswith("job 2 (2_m3) lost: Slurm job")]
    assert "without a result" in lost and "resume it alone: runner model=m3" in lost
    assert "1 of 3 job(s) of the sweep failed, 1 of them lost" in done.stderr.splitlines()[-1]
    sweep = tmp_path / "sweep"
    assert {p.parent.name for p in sweep.glob("*/results.json")} == {"0_m1", "1_m2"}
    assert (sweep / "2_m3" / "error.txt").read_text().startswith("lost: Slurm job")
    assert "2_m3: lost" in (sweep / "report" / "comparison.md").read_text()
