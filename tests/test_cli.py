"""The real command line: resume after a killed run, secrets kept off disk, one-line errors."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import EVE_SAMPLE, ROOT, cli, fake_model_overrides, one_line_error, read_jsonl, write_jsonl

SECRET = "sk-" + "testsecretDONOTLEAK1234567890abcdef"  # built, so no key-shaped literal sits in the repo


def base_args(url: str, run_dir: Path) -> list[str]:
    return fake_model_overrides(url) + [f"benchmark.data_dir={EVE_SAMPLE}", "tracker=none", "cache.enabled=false",
                                        f"hydra.run.dir={run_dir}"]


def test_killed_run_resumes_without_re_asking_finished_samples(fake_llm, tmp_path):
    fake_llm.default = "Answer: B"
    fake_llm.latency = 0.3
    run_dir = tmp_path / "run"
    args = base_args(fake_llm.base_url, run_dir) + ["benchmark.tasks=[hallucination_detection]",
                                                    "benchmark.limit=null", "model.concurrency=2"]
    proc = subprocess.Popen([sys.executable, "-m", "runner", *args], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    samples = run_dir / "samples" / "hallucination_detection.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline and (not samples.exists() or len(read_jsonl(samples)) < 4):
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    done = {r["id"] for r in read_jsonl(samples)}
    assert 4 <= len(done) < 16

    fake_llm.reset()
    fake_llm.latency = 0.0
    finished = cli(args)
    assert finished.returncode == 0, finished.stderr
    asked_again = fake_llm.count
    assert asked_again == 16 - len(done), "finished samples must not be re-asked"
    records = read_jsonl(samples)
    assert sorted(r["id"] for r in records) == list(range(16))  # each sample exactly once
    results = json.loads((run_dir / "results.json").read_text())
    rescored = subprocess.run([sys.executable, "-m", "runner.rescore", str(run_dir)], cwd=ROOT,
                              capture_output=True, text=True, timeout=120)
    assert rescored.returncode == 0, rescored.stderr
    assert json.loads(rescored.stdout) == results["tasks"]


def test_secrets_never_reach_the_run_dir_or_wandb(fake_llm, tmp_path):
    fake_llm.default = "Answer: B"
    run_dir = tmp_path / "run"
    args = [a for a in base_args(fake_llm.base_url, run_dir) if a != "tracker=none"] + [
        "tracker=wandb", f"model.api_key={SECRET}", "judges.panel.0.api_key=${oc.env:JUDGE_KEY}",
        "benchmark.tasks=[mcqa_single_answer,open_ended]", "benchmark.limit=2"]
    proc = cli(args, env={"JUDGE_KEY": SECRET + "judge", "WANDB_MODE": "offline"})
    assert proc.returncode == 0, proc.stderr
    assert list(run_dir.glob("wandb/offline-run-*")), "the W&B run must be saved offline"
    leaked = [p for p in run_dir.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]
    assert leaked == []
    assert SECRET not in proc.stdout + proc.stderr
    assert "***REDACTED***" in (run_dir / ".hydra" / "config.yaml").read_text()


@pytest.mark.parametrize("extra, expected", [
    (["benchmark.data_dir=/nonexistent/dir"], "benchmark.data_dir"),
    (["benchmark.tasks=[mcqa_single]"], "did you mean 'mcqa_single_answer'"),
    (["+model.concurency=3"], "'+' cannot add one (did you mean model.concurrency?)"),
    (["+seed=3"], "seed exists already; set it without the '+'"),
    (["benchmark=nosuchbenchmark"], "nosuchbenchmark"),
])
def test_bad_input_gives_one_clear_line_and_nonzero_exit(tmp_path, extra, expected):
    proc = cli(base_args("http://127.0.0.1:9/v1", tmp_path / "run") + extra)
    assert expected in one_line_error(proc)


def test_a_mistyped_key_names_the_key_and_its_close_match(tmp_path):
    from runner.config import ModelConfig
    from runner.config.keys import _fields

    proc = cli(base_args("http://127.0.0.1:9/v1", tmp_path / "run") + ["model.concurency=3"])
    assert proc.returncode == 2  # a config error (CONTRACT "exit statuses")
    assert one_line_error(proc) == ("error: config: model.concurency is not a key of the runner's config (did you "
                                    "mean model.concurrency?); the keys of model are: "
                                    + ", ".join(_fields(ModelConfig)))
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("override, expected", [
    ("judges.panel.0.concurency=3", "judges.panel.0.concurency is not a key of the runner's config (did you mean "
                                    "judges.panel.0.concurrency?)"),
    ("benchmark.limt=5", "benchmark.limt is not a key of the runner's config (did you mean benchmark.limit?)"),
    ("benchmark.specs.open_ended.scorrers=x", "(did you mean benchmark.specs.open_ended.scorers?)"),
    ("sed=1", "sed is not a key of the runner's config (did you mean seed?); the keys are: "),
    ("benchmark.nosuch.x=1", "benchmark.nosuch.x: benchmark.nosuch is not a key of the runner's config; the keys "
                             "of benchmark are: "),
    ("++model.concurency=3", "'++' cannot add one (did you mean model.concurrency?)"),
])
def test_unknown_keys_get_did_you_mean_and_never_plus_advice(tmp_path, override, expected):
    proc = cli(base_args("http://127.0.0.1:9/v1", tmp_path / "run") + [override])
    line = one_line_error(proc)
    assert proc.returncode == 2
    assert expected in line
    assert "+" not in line.replace(f"'{override}'", "").replace("'++'", "")  # Hydra's "use +key" is wrong here


def test_a_sweep_with_a_mistyped_key_stops_before_any_job(tmp_path):
    proc = cli(["-m", *base_args("http://127.0.0.1:9/v1", tmp_path / "run"), "model.concurency=3,4",
                f"hydra.sweep.dir={tmp_path / 'sweep'}"])
    assert proc.returncode == 2
    assert "model.concurency is not a key of the runner's config (did you mean model.concurrency?)" in \
        one_line_error(proc)
    assert not list((tmp_path / "sweep").glob("*/results.json"))


def test_missing_task_file_names_the_file_and_what_is_there(tmp_path):
    write_jsonl(tmp_path / "data" / "open_ended.jsonl", [{"Question": "q", "Answer": "a"}])
    proc = cli(base_args("http://127.0.0.1:9/v1", tmp_path / "run") +
               [f"benchmark.data_dir={tmp_path / 'data'}", "benchmark.tasks=[mcqa_single_answer]"])
    line = one_line_error(proc)
    assert "mcqa_single_answer.jsonl" in line and "open_ended" in line


def test_unreachable_endpoint_stops_the_run_with_one_line(tmp_path):
    import socket

    with socket.socket() as s:  # a port that nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = cli(base_args(f"http://127.0.0.1:{port}/v1", tmp_path / "run") +
               ["benchmark.tasks=[mcqa_single_answer]", "model.max_retries=1", "model.backoff=0.01"])
    line = one_line_error(proc)
    assert f"127.0.0.1:{port}" in line and "fake-model" in line


def test_version_names_the_runner_and_its_version(tmp_path):
    import runner

    for command in ([sys.executable, "-m", "runner", "--version"], [str(Path(sys.executable).parent / "runner"),
                                                                     "--version"]):
        proc = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert (proc.returncode, proc.stdout, proc.stderr) == (0, f"runner {runner.__version__}\n", "")


def test_the_log_file_is_runner_log(fake_llm, tmp_path):
    run_dir = tmp_path / "run"
    proc = cli(fake_model_overrides(fake_llm.base_url) + [
        "benchmark=eve", f"benchmark.data_dir={EVE_SAMPLE}", "benchmark.tasks=[mcqa_single_answer]",
        "benchmark.limit=1", "tracker=none", "cache.enabled=false", f"hydra.run.dir={run_dir}"])
    assert proc.returncode == 0, proc.stderr
    assert (run_dir / "runner.log").is_file() and not (run_dir / "__main__.log").exists()
