"""A sweep exits with the worst of its jobs' statuses on every launcher (issue 34, point 2): the basic and joblib
launchers here (Ray and Slurm: tests/test_launcher_ray.py, tests/test_launcher_slurm.py). A job refused by its
provider (exit 3) beside one that succeeds: the sweep exits 3, the report is written for the job with results
and names the other. Real CLI sweeps against the fake server; the outcome rules on their own below."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import EVE_SAMPLE, cli
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
