"""A sweep exits with the worst of its jobs' statuses on every launcher (issue 34, point 2): the basic and joblib
launchers here (Ray and Slurm: tests/test_launcher_ray.py, tests/test_launcher_slurm.py). A job refused by its
provider (exit 3) beside one that succeeds: the sweep exits 3, the report is written for the job with results
and names the other. Real CLI sweeps against the fake server; the outcome rules on their own below."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, NoReturn

import pytest
from conftest import EVE_SAMPLE, ROOT, cli
from test_cli import SECRET
from test_sweep import reply

from runner.launchers.outcomes import Outcome, resume_line, sweep_status


def configs(tmp_path: Path, url: str) -> Path:
    """m1 with the key the server wants, m2 with one it refuses (401: exit 3 for a run alone)."""
    conf = tmp_path / "userconf"
    (conf / "model").mkdir(parents=True)
    for name, key in (("m1", "good-key"), ("m2", "wrong-key")):
        (conf / "model" / f"{name}.yaml").write_text(
            f"name: {name}\nmodel: openai/{name}\napi_base: {url}\napi_key: {key}\nconcurrency: 2\nmax_retries: 1\n"
            "backoff: 0.01\ntimeout: 5\n")
    return conf


@pytest.mark.parametrize("launcher", ["basic", "joblib"])
def test_a_sweep_exits_with_its_worst_jobs_status_and_reports_the_others(fake_llm, tmp_path, launcher):
    fake_llm.default = reply
    fake_llm.api_key = "good-key"
    sweep_dir = tmp_path / "sweep"
    proc = cli(["-m", "model=m1,m2", "judges=none", f"hydra.searchpath=[file://{configs(tmp_path, fake_llm.base_url)}]",
                f"benchmark.data_dir={EVE_SAMPLE}", "benchmark.tasks=[mcqa_single_answer]", "benchmark.limit=3",
                "cache.enabled=false", "tracker=none", "preflight=false", f"launcher={launcher}",
                f"hydra.sweep.dir={sweep_dir}"], timeout=300)
    assert proc.returncode == 3, proc.stderr[-3000:]  # the refused key's status, not a generic 1
    (line,) = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert "1 of 2 job(s) of the sweep failed" in line and "1_m2" in line and "Traceback" not in proc.stderr
    assert "internal error" not in proc.stderr
    assert json.loads((sweep_dir / "0_m1" / "results.json").read_text())["model"] == "m1"
    md = (sweep_dir / "report" / "comparison.md").read_text()
    assert "| m1 |" in md and "## Failed jobs" in md and "1_m2" in md.split("## Failed jobs")[1]
    assert "Sweep comparison (1 run(s)" in proc.stdout


def test_the_worst_status_wins_and_a_signal_or_a_lost_job_is_a_failure():
    def job(num: int, status: int, lost: bool = False) -> Outcome:
        return Outcome(num=num, run_dir=f"/s/{num}", status=status, lost=lost)

    assert sweep_status([job(0, 0), job(1, 0)]) == 0
    assert sweep_status([job(0, 0), job(1, 3), job(2, 2)]) == 3
    assert sweep_status([job(0, 0), job(1, 143)]) == 1  # stopped by SIGTERM: a failed job
    assert sweep_status([job(0, 0), job(1, 1, lost=True)]) == 1
    assert sweep_status([job(0, 4), job(1, 1, lost=True)]) == 4


def test_a_lost_jobs_line_says_how_to_resume_it_alone_without_the_sweeps_own_overrides_or_a_key():
    lost = Outcome(num=1, run_dir="/shared/sweep/1_m2", status=1, lost=True,
                   error="lost: Slurm job 7_1 ended CANCELLED without a result",
                   overrides=["model=m2", f"model.api_key={SECRET}", "launcher=slurm", "hydra.launcher.partition=x",
                              "hydra.searchpath=[file:///conf]"])
    line = resume_line(lost, Path("/shared/sweep"))
    assert line.startswith("job 1 (1_m2) lost: Slurm job 7_1 ended CANCELLED")
    assert line.endswith("or resume it alone: runner model=m2 'model.api_key=***REDACTED***' "
                         "'hydra.searchpath=[file:///conf]' hydra.run.dir=/shared/sweep/1_m2")
    assert SECRET not in line


# --- Shared by the tests on real clusters (tests/test_launcher_slurm.py, tests/test_launcher_ray.py) ------------

CLUSTER_TESTS = os.environ.get("RUNNER_CLUSTER_TESTS") == "1"
"""Set by .ci/run, which starts a one-node Slurm and a Ray head: there a missing engine fails its tests."""
KEY_VAR = "CLUSTER_TEST_KEY"
"""The provider key the models read through ${oc.env:...}: exported in the submitting shell only."""
KEY = "cluster-test-" + "key-0123456789abcdef"
MODELS = ("m1", "m2", "m3")


def engine_missing(why: str) -> NoReturn:
    """Skip a cluster test where the engine is absent, unless CI asked for the cluster tests: then fail."""
    if CLUSTER_TESTS:
        pytest.fail(f"RUNNER_CLUSTER_TESTS=1 but {why}", pytrace=False)
    pytest.skip(why)


def cluster_configs(tmp_path: Path, url: str) -> Path:
    """Three models (m1 answers B, m2 A, m3 C: test_sweep.reply) whose key is ${oc.env:CLUSTER_TEST_KEY}."""
    conf = tmp_path / "userconf"
    (conf / "model").mkdir(parents=True, exist_ok=True)
    for name in MODELS:
        (conf / "model" / f"{name}.yaml").write_text(
            f"name: {name}\nmodel: openai/{name}\napi_base: {url}\napi_key: ${{oc.env:{KEY_VAR}}}\nconcurrency: 1\n"
            "max_retries: 1\nbackoff: 0.01\ntimeout: 10\n")
    return conf


def cluster_sweep(conf: Path, sweep_dir: str, *extra: str, cwd: Path, env: dict[str, str] | None = None,
                  limit: int = 6) -> subprocess.Popen[str]:
    """Start `runner -m model=m1,m2,m3` in `cwd` (a relative sweep dir means a folder there), the key exported."""
    argv = [sys.executable, "-m", "runner", "-m", f"model={','.join(MODELS)}", "judges=none",
            f"hydra.searchpath=[file://{conf}]", f"benchmark.data_dir={EVE_SAMPLE}",
            "benchmark.tasks=[mcqa_single_answer]", f"benchmark.limit={limit}", "cache.enabled=false",
            "tracker=none", "preflight=false", "progress=false", f"hydra.sweep.dir={sweep_dir}", *extra]
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)  # runner from here
    return subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, KEY_VAR: KEY, "PYTHONPATH": path, **(env or {})})


def finished(proc: subprocess.Popen[str], timeout: float = 240) -> subprocess.CompletedProcess[str]:
    out, err = proc.communicate(timeout=timeout)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def same_as_basic(sweep_dir: Path, basic_dir: Path) -> None:
    """The cluster's sweep has the basic launcher's results (per job) and comparison report, to the last digit
    (durations and costs' timing aside)."""
    def results(root: Path) -> dict[str, Any]:
        found = {p.parent.name: json.loads(p.read_text()) for p in root.glob("*/results.json")}
        return {name: (r["model"], r["tasks"], r.get("summary")) for name, r in found.items()}

    def table(path: Path) -> list[dict[str, str]]:
        with open(path, newline="") as fh:
            return list(csv.DictReader(fh))

    assert set(results(sweep_dir)) == {"0_m1", "1_m2", "2_m3"}
    assert results(sweep_dir) == results(basic_dir)
    for name in ("comparison.csv", "pairs.csv"):
        assert table(sweep_dir / "report" / name) == table(basic_dir / "report" / name), name
    first = [(basic_dir / "report" / "comparison.md").read_text(), (sweep_dir / "report" / "comparison.md").read_text()]
    assert first[0].split("## Cost")[0] == first[1].split("## Cost")[0]


def basic_sweep(fake_llm: Any, conf: Path, tmp_path: Path) -> Path:
    """The same sweep on the basic launcher, for the cluster's to equal (the server's log is cleared after)."""
    done = finished(cluster_sweep(conf, str(tmp_path / "basic"), cwd=tmp_path))
    assert done.returncode == 0, done.stderr[-3000:]
    fake_llm.reset()
    return tmp_path / "basic"


class _FlakyHead:
    """Stands in for the `ray` module at its client's door: `ray.init` fails with the given errors in turn, then
    connects. (A real head's proxy failing to fork the client's server, seen once on CI, cannot be provoked.)"""

    def __init__(self, *errors: Exception) -> None:
        self.errors, self.inits, self.shutdowns = list(errors), 0, 0

    def init(self, **_: Any) -> None:
        self.inits += 1
        if self.errors:
            raise self.errors.pop(0)

    def shutdown(self) -> None:
        self.shutdowns += 1


def test_ray_asks_again_only_when_the_head_could_not_start_the_clients_server():
    ray_jobs = pytest.importorskip("runner.launchers.ray_jobs")
    died = RuntimeError("Starting Ray client server failed. See ray_client_server_23000.err for detailed logs.")
    head = _FlakyHead(died, died)
    ray_jobs._init(head, {}, pause=0)
    assert (head.inits, head.shutdowns) == (3, 2)

    head = _FlakyHead(*[died] * ray_jobs.CONNECT_ATTEMPTS)
    with pytest.raises(RuntimeError, match="Starting Ray client server failed"):
        ray_jobs._init(head, {}, pause=0)
    assert head.inits == ray_jobs.CONNECT_ATTEMPTS

    for other in (ConnectionError("ray client connection timeout"), RuntimeError("Authentication required")):
        head = _FlakyHead(other)
        with pytest.raises(type(other)):
            ray_jobs._init(head, {}, pause=0)
        assert (head.inits, head.shutdowns) == (1, 0)
