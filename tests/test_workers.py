"""`workers=N`: the pending samples asked by N processes give the same records, metrics and usage as one
process, resume the same way, and stop the same way (a refused endpoint, the budget, Ctrl-C, a crash)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import EVE_SAMPLE, ROOT, cli, fake_model_overrides, one_line_error, read_jsonl
from fake_llm import FakeLLM
from test_pipeline import scripted_reply

from runner.models.litellm_model import Endpoint
from runner.run import workers
from runner.run.store import read_records

TASKS = "[mcqa_single_answer,hallucination_detection,open_ended]"
PRICED = "model.pricing={input_per_mtok:1.5,output_per_mtok:2.5}"
TIMING = {"duration_s", "started", "finished"}
"""Record fields that may differ between two runs of the same samples (none today)."""
USAGE_COUNTS = ("requests", "cached_requests", "prompt_tokens", "completion_tokens", "retries", "failures",
                "successes", "cache_hits", "rate_limited")


def args(url: str, run_dir: Path, *extra: str, tasks: str = TASKS) -> list[str]:
    return fake_model_overrides(url, judges=2, concurrency=4) + [
        "benchmark=eve", f"benchmark.data_dir={EVE_SAMPLE}", f"benchmark.tasks={tasks}", "tracker=none",
        "progress=false", "cache.enabled=false", f"hydra.run.dir={run_dir}", "model.backoff=0.01",
        "judges.panel.0.backoff=0.01", "judges.panel.1.backoff=0.01", *extra]


def samples(run_dir: Path) -> dict[str, list[dict[str, Any]]]:
    """Each task's records as the store reads them (a torn line skipped), by id and epoch (files are in
    completion order), without timing fields."""
    out = {}
    for path in sorted((run_dir / "samples").glob("*.jsonl")):
        rows = [{k: v for k, v in r.items() if k not in TIMING} for r in read_records(path).values()]
        out[path.stem] = sorted(rows, key=lambda r: (str(r["id"]), r.get("epoch", 0)))
    return out


def results(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "results.json").read_text(encoding="utf-8"))


def counts(usage: dict[str, Any]) -> dict[str, Any]:
    return {name: {k: u.get(k) for k in USAGE_COUNTS} for name, u in usage.items()}


def test_two_workers_give_the_records_metrics_and_usage_of_one_process(fake_llm, tmp_path):
    fake_llm.default = scripted_reply
    fake_llm.faults = ["500"]  # every distinct request fails once: each worker's retries must add up
    one = cli(args(fake_llm.base_url, tmp_path / "one", "workers=1", "epochs=2", PRICED))
    assert one.returncode == 0, one.stderr
    asked = fake_llm.count
    fake_llm.reset()
    fake_llm.faults = ["500"]
    two = cli(args(fake_llm.base_url, tmp_path / "two", "workers=2", "epochs=2", PRICED))
    assert two.returncode == 0, two.stderr
    assert "in 2 worker processes" in two.stdout
    assert fake_llm.count == asked

    assert samples(tmp_path / "two") == samples(tmp_path / "one")
    a, b = results(tmp_path / "one"), results(tmp_path / "two")
    assert b["tasks"] == a["tasks"] and b["summary"] == a["summary"]
    assert counts(b["usage"]) == counts(a["usage"])
    assert b["usage"]["fake-model"]["retries"] == b["usage"]["fake-model"]["successes"] > 0
    for name, usage in a["usage"].items():
        assert b["usage"][name]["cost_usd"] == pytest.approx(usage["cost_usd"])
        assert b["usage"][name]["served_models"] == usage["served_models"]
        assert b["usage"][name]["concurrency"]["ceiling"] == usage["concurrency"]["ceiling"] == 4
    assert a["usage"]["fake-model"]["cost_usd"] > 0
    assert b["totals"]["requests"] == a["totals"]["requests"]


def test_a_run_with_workers_resumes_a_partly_filled_samples_file_asking_only_the_rest(fake_llm, tmp_path):
    fake_llm.default = scripted_reply
    whole = cli(args(fake_llm.base_url, tmp_path / "whole", "workers=1", tasks="[mcqa_single_answer]"))
    assert whole.returncode == 0, whole.stderr
    lines = (tmp_path / "whole" / "samples" / "mcqa_single_answer.jsonl").read_text().splitlines(keepends=True)
    part = tmp_path / "part" / "samples" / "mcqa_single_answer.jsonl"
    part.parent.mkdir(parents=True)
    part.write_text("".join(lines[:5]) + lines[5][:40])  # five records and a torn line, as a killed run leaves
    fake_llm.reset()
    resumed = cli(args(fake_llm.base_url, tmp_path / "part", "workers=2", tasks="[mcqa_single_answer]"))
    assert resumed.returncode == 0, resumed.stderr
    assert fake_llm.count == len(lines) - 5, "finished samples must not be asked again"
    assert samples(tmp_path / "part") == samples(tmp_path / "whole")
    assert results(tmp_path / "part")["tasks"] == results(tmp_path / "whole")["tasks"]


def _children(pid: int) -> list[int]:
    """The worker processes of the runner process `pid` (spawned: their command line runs spawn_main)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) == pid and b"spawn_main" in cmdline:
            found.append(int(stat.parent.name))
    return found


def _start(url: str, run_dir: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "runner", *args(url, run_dir, *extra, tasks="[mcqa_single_answer]")],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for_records(path: Path, n: int, proc: subprocess.Popen[str]) -> None:
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None and (not path.exists() or len(read_jsonl(path)) < n):
        time.sleep(0.05)
    assert proc.poll() is None, proc.communicate()[1]


def test_ctrl_c_stops_every_worker_keeps_their_records_and_a_rerun_asks_only_the_rest(fake_llm, tmp_path):
    fake_llm.default = "Answer: B"
    fake_llm.latency = 0.3
    run_dir = tmp_path / "run"
    path = run_dir / "samples" / "mcqa_single_answer.jsonl"
    proc = _start(fake_llm.base_url, run_dir, "workers=2", "model.concurrency=2")
    _wait_for_records(path, 3, proc)
    workers = _children(proc.pid)
    assert len(workers) == 2
    proc.send_signal(signal.SIGINT)
    ended = _ended(proc)
    assert ended.returncode == 130, ended.stderr
    assert "interrupted" in one_line_error(ended)
    time.sleep(0.5)
    asked = fake_llm.count
    time.sleep(1.0)
    assert fake_llm.count == asked, "a stopped worker must send nothing more"
    assert not [pid for pid in workers if Path(f"/proc/{pid}").exists() and "Z" not in _state(pid)]
    done = {r["id"] for r in read_jsonl(path)}
    assert 3 <= len(done) < 13 and len(read_jsonl(path)) == len(done)

    fake_llm.reset()
    fake_llm.latency = 0.0
    finished = cli(args(fake_llm.base_url, run_dir, "workers=2", tasks="[mcqa_single_answer]"))
    assert finished.returncode == 0, finished.stderr
    assert fake_llm.count == 13 - len(done)
    assert sorted(r["id"] for r in read_jsonl(path)) == list(range(2, 15))
    assert results(run_dir)["run"]["invocations"] == 2


def _ended(proc: subprocess.Popen[str]) -> subprocess.CompletedProcess[str]:
    out, err = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def test_a_killed_worker_stops_the_run_with_one_line_and_keeps_the_finished_records(fake_llm, tmp_path):
    fake_llm.default = "Answer: B"
    fake_llm.latency = 0.3
    run_dir = tmp_path / "run"
    path = run_dir / "samples" / "mcqa_single_answer.jsonl"
    proc = _start(fake_llm.base_url, run_dir, "workers=2", "model.concurrency=2")
    _wait_for_records(path, 2, proc)
    victim = _children(proc.pid)[0]
    os.kill(victim, signal.SIGKILL)
    ended = _ended(proc)
    assert ended.returncode == 1, ended.stderr
    line = one_line_error(ended)
    assert "worker process" in line and "killed by signal 9" in line and f"hydra.run.dir={run_dir}" in line
    assert len(read_jsonl(path)) >= 2


def test_a_refused_key_in_a_worker_stops_the_run_with_exit_3(tmp_path):
    with FakeLLM(default="Answer: B", api_key="the-right-key") as srv:
        proc = cli(args(srv.base_url, tmp_path / "run", "workers=2", tasks="[mcqa_single_answer]"), timeout=120)
        sent = srv.count
    assert proc.returncode == 3, proc.stderr
    line = one_line_error(proc)
    assert line.startswith("error: fake-model: HTTP 401") and "api_key" in line
    assert sent <= 4, "a refusal is not retried and stops both workers"
    assert not (tmp_path / "run" / "results.json").exists()


def test_the_budget_is_one_for_all_workers(tmp_path):
    # A one-token reply costs $1 and a request may cost at most that (the run's max_tokens 1, over the task's 64;
    # input free): the two workers reserve from one ledger, so exactly three requests fit in $3.50 and the fourth
    # stops the run.
    priced = "model.pricing={input_per_mtok:0,output_per_mtok:1000000}"
    with FakeLLM(default="B", latency=0.05) as srv:
        proc = cli(args(srv.base_url, tmp_path / "run", "workers=2", "model.concurrency=2", priced,
                        "params.max_tokens=1", "budget.max_usd=3.5", tasks="[mcqa_single_answer]"), timeout=120)
        sent = srv.count
    assert proc.returncode == 4, proc.stderr
    assert sent == 3, (proc.stderr, results(tmp_path / "run"))
    res = results(tmp_path / "run")
    assert res["stopped"] == "budget" and res["tasks"]["mcqa_single_answer"]["n"] == sent


def test_null_picks_one_process_for_little_work_and_a_bad_value_is_refused(fake_llm, tmp_path):
    fake_llm.default = "Answer: B"
    auto = cli(args(fake_llm.base_url, tmp_path / "auto", tasks="[mcqa_single_answer]"))
    assert auto.returncode == 0 and "worker processes" not in auto.stdout
    bad = cli(args(fake_llm.base_url, tmp_path / "bad", "workers=0", tasks="[mcqa_single_answer]"))
    assert bad.returncode == 2 and "workers: 0" in one_line_error(bad)
    written = {p.name for p in (tmp_path / "bad").iterdir()} if (tmp_path / "bad").exists() else set()
    assert written <= {"runner.log"}, "a bad value stops the run before anything is written"


class _Built:
    def __init__(self, *endpoints: Endpoint) -> None:
        self._endpoints = list(endpoints)

    def endpoints(self) -> list[Endpoint]:
        return self._endpoints


def test_null_chooses_from_the_cores_the_samples_and_the_requests_in_flight(monkeypatch):
    monkeypatch.setattr(workers, "cores", lambda: 4)
    model = Endpoint(name="m", model="openai/m", concurrency=32)
    assert workers.workers_for(None, 100_000, _Built(model)) == 2  # 32 in flight can keep two processes busy
    judge = Endpoint(name="j", model="openai/j", concurrency=64)
    assert workers.workers_for(None, 100_000, _Built(model, judge)) == 4  # no more than the cores
    assert workers.workers_for(None, 3_000, _Built(model, judge)) == 1  # too few samples to pay a start-up
    assert workers.workers_for(None, 100_000, _Built(Endpoint(name="m", model="openai/m", concurrency=16))) == 1
    assert workers.workers_for(3, 100, _Built(Endpoint(name="m", model="openai/m", concurrency=2))) == 2
    local = Endpoint(name="l", model="openai/l", concurrency=128, origin="embedded:model.gguf")
    assert workers.workers_for(2, 100_000, _Built(local)) == 1
    monkeypatch.setattr(workers, "cores", lambda: 1)
    assert workers.workers_for(None, 100_000, _Built(model, judge)) == 1
    assert workers.shares(10, 3) == [4, 3, 3] and workers.shares(2, 2) == [1, 1]


def test_a_worker_that_dies_before_reading_its_jobs_stops_the_run_instead_of_hanging(fake_llm, tmp_path):
    # A script without `if __name__ == "__main__":` makes every spawned worker run the script again, which
    # fails before the worker reads a thing. With thousands of jobs (more than a pipe holds) handed over as
    # the process's arguments, the parent used to block on that write for good.
    data = tmp_path / "data"
    data.mkdir()
    with open(data / "mcqa_single_answer.jsonl", "w", encoding="utf-8") as fh:
        for i in range(3000):
            fh.write(json.dumps({"Question": f"Question {i}?", "Choices": ["a", "b", "c", "d"],
                                 "Answer": "ABCD"[i % 4]}) + "\n")
    script = tmp_path / "unguarded.py"
    script.write_text("import sys\nfrom runner.__main__ import main\nsys.argv = ['runner', *sys.argv[1:]]\nmain()\n",
                      encoding="utf-8")
    run_dir = tmp_path / "run"
    overrides = [f"benchmark.data_dir={data}" if o.startswith("benchmark.data_dir=") else o
                 for o in args(fake_llm.base_url, run_dir, "workers=2", tasks="[mcqa_single_answer]")]
    proc = subprocess.run([sys.executable, str(script), *overrides], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 1, proc.stderr
    mine = [ln for ln in proc.stderr.splitlines() if ln.startswith("error: worker process")]
    assert len(mine) == 1 and "before finishing its samples" in mine[0], proc.stderr
    assert fake_llm.count == 0
    assert not (run_dir / "results.json").exists()
