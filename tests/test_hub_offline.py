"""A hub dataset with no hub to reach (issue 35, point 6): one line at once, from the cache only, instead of the
hub client's retries (~24 s, each warning twice). The hub is a real closed port on 127.0.0.1 and the cache a
real empty folder."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from conftest import ROOT, fake_model_overrides, one_line_error


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed when the with ends: nothing listens there


def test_a_hub_dataset_with_no_hub_and_no_cache_is_one_line_without_retries(fake_llm, tmp_path):
    port = closed_port()
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")}
    env.update(HF_ENDPOINT=f"http://127.0.0.1:{port}", HF_HOME=str(tmp_path / "hf"))
    proc = subprocess.run([sys.executable, "-m", "runner", *fake_model_overrides(fake_llm.base_url, judges=0),
                           "benchmark=eve", "benchmark.tasks=[mcqa_single_answer]", "tracker=none",
                           f"hydra.run.dir={tmp_path / 'run'}"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2
    line = one_line_error(proc)
    assert "eve-esa/mcqa-single-answer" in line and "not in the local cache" in line
    assert f"127.0.0.1:{port}" in line and "benchmark.data_dir=DIR" in line
    assert "retry" not in (proc.stdout + proc.stderr).lower() and fake_llm.count == 0
