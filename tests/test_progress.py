"""The live progress bars as a user sees them: the CLI on a pseudo-terminal, its final frame read back.

rich draws bars only when stderr is a terminal, so the runner runs with stderr on a pty (200 columns) and
stdout on a pipe; the escape sequences become line ends and the last frame of each bar is compared with
results.json. The fake server fails every attempt at one question, so one sample ends as an error.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import struct
import subprocess
import sys
import termios
import threading
from pathlib import Path

from conftest import ROOT, fake_model_overrides

MOVES = re.compile(r"\x1b\[[0-9;?]*[A-HJKST]|\r")  # cursor moves and erases: a redraw of a line
STYLE = re.compile(r"\x1b\[[0-9;?]*[a-zA-Z]|\x1b\][^\x07]*\x07")  # colours, cursor visibility, titles
FAILING = "Sentinel-1 synthetic aperture radar"  # the question of sample 1 in the bundled sample


def on_a_terminal(args: list[str], timeout: float = 180) -> tuple[int, str, str]:
    """Run `python -m runner ARGS` with stderr on a 200-column pty; (exit status, stdout, stderr text)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 60, 200, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "200"}
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen([sys.executable, "-m", "runner", *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=slave, stdin=subprocess.DEVNULL, env=env)
    os.close(slave)
    chunks: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every writer of the pty has gone
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    assert proc.stdout is not None
    out = proc.stdout.read().decode()
    status = proc.wait(timeout=timeout)
    reader.join(10)
    os.close(master)
    # a redraw moves the cursor instead of starting a line: here each move ends one
    text = MOVES.sub("\n", b"".join(chunks).decode(errors="replace"))
    return status, out, STYLE.sub("", text)


def last_frame(text: str, label: str) -> str:
    """The last line drawn for the bar labelled `label`."""
    lines = [ln for ln in text.split("\n") if re.match(rf"\s*{re.escape(label)}\s", ln)]
    assert lines, f"no bar '{label}' in:\n{text[-3000:]}"
    return lines[-1]


def args_for(url: str, run_dir: Path) -> list[str]:
    return [*fake_model_overrides(url), "model.max_retries=1", "benchmark=eve_sample",
            "benchmark.tasks=[mcqa_single_answer]", "benchmark.num_fewshot=0", "benchmark.limit=4",
            "tracker=none", "cache.enabled=false", "progress=true", f"hydra.run.dir={run_dir}"]


def test_the_bars_end_with_what_results_json_says(fake_llm, tmp_path):
    fake_llm.faults, fake_llm.fault_only_matching = ["500"] * 6, FAILING
    status, out, err = on_a_terminal(args_for(fake_llm.base_url, tmp_path / "run"))
    assert status == 1, err[-2000:]  # one sample ended as an error: not every sample was scored
    block = json.loads((tmp_path / "run" / "results.json").read_text())["tasks"]["mcqa_single_answer"]
    assert (block["n"], block["n_errors"]) == (4, 1)

    task = last_frame(err, "mcqa_single_answer")
    assert "4/4" in task and "errors 1" in task and "ETA" in task
    whole = last_frame(err, "all")
    # the failing sample was asked twice (max_retries=1): one retry, seen on the whole run's bar
    assert "4/4" in whole and "errors 1" in whole and "retries 1" in whole
    assert "done:" in out and "results.json" in out


def test_a_resume_logs_the_kept_samples_above_the_bars_not_through_them(fake_llm, tmp_path):
    fake_llm.faults, fake_llm.fault_only_matching = ["500"] * 2, FAILING
    first, _, _ = on_a_terminal(args_for(fake_llm.base_url, tmp_path / "run"))
    assert first == 1
    # attempts 3 and 4 of the failing request succeed now: the resume asks only that sample
    status, _, err = on_a_terminal(args_for(fake_llm.base_url, tmp_path / "run"))
    assert status == 0, err[-2000:]
    kept = [ln for ln in err.split("\n") if "kept from an earlier run" in ln]
    assert kept and all("━" not in ln for ln in kept), kept
    assert any(ln.rstrip().endswith("mcqa_single_answer: 3 of 4 samples kept from an earlier run") for ln in kept)
    task = last_frame(err, "mcqa_single_answer")
    assert "4/4" in task and "errors 0" in task
    whole = last_frame(err, "all")
    assert "4/4" in whole and "errors 0" in whole
