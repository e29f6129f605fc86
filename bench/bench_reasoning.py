"""What recording a reasoning model's reasoning costs per sample: the runner's CPU and the samples file's bytes,
against the same replies without reasoning (issue 43).

    .venv/bin/python bench/bench_reasoning.py                 # N=500 samples, 300 words of reasoning, 3 rounds
    .venv/bin/python bench/bench_reasoning.py -n 2000 -w 1000 --style think

The fake server (tests/fake_llm.py, in this process's thread) answers every question with "Answer: B" and, in
the reasoning runs, W words of reasoning first (`reasoning_content`, or a leading `<think>` block with
--style think). The runner runs as a child process (cache off, no tracker); its CPU is the child's own rusage.
Rounds interleave the two kinds so that machine load hits both alike. Prints the medians and the ratios.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))

from bench_mcq import PY, cli_args, run_cli, write_data  # noqa: E402
from fake_llm import FakeLLM  # noqa: E402


def one_run(srv: FakeLLM, data: Path, tmp: Path, label: str, concurrency: int) -> dict[str, Any]:
    run_dir = tmp / label
    argv = [PY, "-m", "runner", *cli_args(data, str(srv.base_url), concurrency, tmp / "cache", run_dir),
            "cache.enabled=false", "preflight=false", "params.max_tokens=100000"]
    out = run_cli(argv)
    if out["rc"] != 0:
        raise RuntimeError(f"{label}: exit {out['rc']}: {out['stderr'][-2000:]}")
    samples = run_dir / "samples" / "mcqa_single_answer.jsonl"
    return {"cpu_s": out["cpu_s"], "wall_s": out["wall_s"], "bytes": samples.stat().st_size}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=500, help="samples (default 500)")
    ap.add_argument("-w", "--words", type=int, default=300, help="words of reasoning per reply (default 300)")
    ap.add_argument("-r", "--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    ap.add_argument("-c", "--concurrency", type=int, default=64)
    ap.add_argument("--style", choices=("field", "think"), default="field")
    args = ap.parse_args()
    thought = " ".join(f"step{i}" for i in range(args.words))
    rows: dict[str, list[dict[str, Any]]] = {"plain": [], "reasoning": []}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        write_data(tmp / "data", args.n)
        data = tmp / "data"
        with FakeLLM(default="Answer: B", reasoning_style=args.style) as srv:
            for i in range(args.rounds):
                for kind in ("plain", "reasoning"):
                    srv.reasoning = thought if kind == "reasoning" else None
                    rows[kind].append(one_run(srv, data, tmp, f"{kind}{i}", args.concurrency))
    med = {k: {m: statistics.median(r[m] for r in v) for m in ("cpu_s", "wall_s", "bytes")} for k, v in rows.items()}
    n = args.n
    print(f"N={n} samples, {args.words} words of reasoning ({args.style}), {args.rounds} interleaved rounds")
    print(f"{'':10} {'CPU ms/sample':>14} {'wall s':>8} {'bytes/sample':>13}")
    for kind, m in med.items():
        print(f"{kind:10} {1000 * m['cpu_s'] / n:14.3f} {m['wall_s']:8.2f} {m['bytes'] / n:13.0f}")
    p, r = med["plain"], med["reasoning"]
    print(f"reasoning costs {1000 * (r['cpu_s'] - p['cpu_s']) / n:+.3f} ms of CPU and "
          f"{(r['bytes'] - p['bytes']) / n:+.0f} bytes per sample ({r['cpu_s'] / p['cpu_s']:.2f}x CPU, "
          f"{r['bytes'] / p['bytes']:.2f}x bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
