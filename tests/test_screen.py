"""What a person reads, at the terminal sizes people have (issue 35): the CLI on a real pseudo-terminal of
60, 80, 100 and 120 columns, both its outputs on it; every figure of results.json shown whole in the final
table (wide where it fits, stacked where not), the bars' counts never cut to `1…`, even with a three-judge
panel; and plain progress lines in a log when stderr is no terminal."""

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
from typing import Any

import pytest
from conftest import EVE_SAMPLE, JUDGE_CORRECT, JUDGE_INCORRECT, ROOT, fake_model_overrides

MOVES = re.compile(r"\x1b\[[0-9;?]*[A-HJKST]|\r")
STYLE = re.compile(r"\x1b\[[0-9;?]*[a-zA-Z]|\x1b\][^\x07]*\x07")


def on_a_pty(args: list[str], columns: int, env: dict[str, str] | None = None) -> tuple[int, str]:
    """`python -m runner ARGS` with stdout and stderr on one pty of `columns` x 50; (exit status, its text)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    full = {**os.environ, "TERM": "xterm-256color", "COLUMNS": str(columns), **(env or {})}
    full.pop("NO_COLOR", None)
    proc = subprocess.Popen([sys.executable, "-m", "runner", *args], cwd=ROOT, stdout=slave, stderr=slave,
                            stdin=subprocess.DEVNULL, env=full)
    os.close(slave)
    chunks: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    status = proc.wait(timeout=240)
    reader.join(10)
    os.close(master)
    return status, STYLE.sub("", MOVES.sub("\n", b"".join(chunks).decode(errors="replace")))


def judged(body: dict[str, Any]) -> str:
    """Three judges that disagree now and then; the model answers B and a sentence."""
    if "judgement" not in json.dumps(body):
        return "B. It is about radar."
    text = json.dumps(body["messages"])
    return JUDGE_INCORRECT if body["model"] == "judge3" and "radar" in text else JUDGE_CORRECT


def figures(results: dict[str, Any]) -> list[str]:
    """Every figure the final table shows, as it shows it."""
    shown = []
    for block in results["tasks"].values():
        shown.append(str(block["n"]))
        for metric, value in block["metrics"].items():
            if value is not None:
                shown.append(f"{value:.4f}")
            low_high = (block.get("ci") or {}).get(metric)
            if low_high:
                shown.append(f"[{low_high[0]:.3f}, {low_high[1]:.3f}]")
    return shown


@pytest.mark.parametrize("columns", [60, 80, 100, 120])
def test_every_figure_is_shown_whole_at_any_width(fake_llm, tmp_path, columns):
    fake_llm.default = judged
    run_dir = tmp_path / "run"
    status, text = on_a_pty([*fake_model_overrides(fake_llm.base_url, judges=3), "benchmark=eve",
                             f"benchmark.data_dir={EVE_SAMPLE}", "benchmark.limit=3", "tracker=none",
                             "cache.enabled=false", f"hydra.run.dir={run_dir}"], columns)
    assert status == 0, text[-3000:]
    results = json.loads((run_dir / "results.json").read_text())
    table = text[text.rindex(results["benchmark"] + " · model"):]
    assert "…" not in text  # nothing anywhere was cut to fit: neither the bars nor the table
    lines = table.split("\n")
    lines = lines[:next((i for i, ln in enumerate(lines) if ln.startswith(("done:", "[20"))), len(lines))]
    missing = [f for f in figures(results) if not any(f in line for line in lines)]
    assert missing == [], table
    assert max(len(line.rstrip()) for line in lines) <= columns
    bars = [ln for ln in text.split("\n") if re.match(r"\s*(all|mcqa_single_answer)\s", ln) and "ETA" in ln]
    assert bars and all(re.search(r"\b\d+/\d+\b", ln) for ln in bars), bars[-4:]


def test_a_log_gets_plain_progress_lines(fake_llm, tmp_path):
    fake_llm.latency = 0.2
    proc = subprocess.run([sys.executable, "-m", "runner", *fake_model_overrides(fake_llm.base_url, concurrency=1),
                           "judges=none", "benchmark=eve", f"benchmark.data_dir={EVE_SAMPLE}",
                           "benchmark.tasks=[mcqa_single_answer]", "benchmark.limit=8", "benchmark.num_fewshot=0",
                           "tracker=none", "cache.enabled=false", f"hydra.run.dir={tmp_path / 'run'}"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "RUNNER_PROGRESS_EVERY_S": "0.5"})
    assert proc.returncode == 0, proc.stderr
    lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if "progress: " in ln]  # where the log goes
    assert lines, proc.stdout + proc.stderr
    done = [int(m.group(1)) for ln in lines for m in [re.search(r"progress: (\d+)/8 samples done", ln)] if m]
    assert done == sorted(done) and done[-1] < 8 and "error(s)" in lines[0] and "/s" in lines[0]
