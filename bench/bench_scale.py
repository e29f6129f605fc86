"""Benchmark: the runner's wall time, CPU per sample and peak memory as N grows, in one process or several.

    .venv/bin/python bench/bench_scale.py                          # N = 1k, 10k, 100k; workers 1 and 2; 3 repeats
    .venv/bin/python bench/bench_scale.py -n 1000 10000 -w 1 2 -r 3 -l 0.2 -c 128
    .venv/bin/python bench/bench_scale.py -n 2000 -w 1 -- seed=1   # extra overrides after --

The workload is bench/bench_mcq.py's (N single-answer MCQs through the real CLI against the timed fake
server, `tests/fake_llm.py` in its own process, latency L, `model.concurrency` C; tracker=none, a fresh
cache dir per run, so every sample is a request). Per run:

* wall: monotonic time around Popen ... wait4 of the runner process;
* CPU per sample: user+sys of the runner process and of its worker processes (they are waited for, so
  `os.wait4` counts them), divided by N;
* peak RSS: `ru_maxrss` from `os.wait4`, which is the largest of the runner process and its workers; the
  runner process's own (RUSAGE_SELF, written at its exit); and, sampled every 50 ms from /proc, the
  largest worker's VmHWM and the peak of the whole tree's summed RSS;
* the machine's 1-minute load average just before the run (the machine is shared: figures are noisy).

Each figure is the median of the repeats. Results go to stdout and bench/results/scale-<time>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_mcq import PY, RESULTS, ROOT, Server, cli_args, env, write_data  # noqa: E402


def _status(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (KB) of a process; empty once it is gone."""
    out = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(("VmRSS:", "VmHWM:")):
                out[line.split(":")[0]] = int(line.split()[1])
    except OSError:
        pass
    return out


def _children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _is_worker(pid: int) -> bool:
    """A worker process (spawned by multiprocessing), not e.g. a `git` call forked but not yet exec'd."""
    try:
        return b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


class TreeSampler(threading.Thread):
    """Polls the runner's process tree: peak summed RSS, and the last VmHWM seen of each process."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.stop = pid, threading.Event()
        self.peak_sum_kb = 0
        self.hwm_kb: dict[int, int] = {}

    def run(self) -> None:
        while not self.stop.is_set():
            tree, total = [self.pid], 0
            for pid in tree:
                tree.extend(_children(pid))
                st = _status(pid)
                total += st.get("VmRSS", 0)
                if st.get("VmHWM") and pid != self.pid and _is_worker(pid):
                    self.hwm_kb[pid] = max(self.hwm_kb.get(pid, 0), st["VmHWM"])
            self.peak_sum_kb = max(self.peak_sum_kb, total)
            self.stop.wait(0.05)


# `python -m runner`, plus: at exit the runner process writes its own peak RSS and CPU seconds (RUSAGE_SELF,
# without its workers) to $BENCH_RSS_OUT. Polling /proc misses its last moments (the metrics import numpy at the end).
RUNNER = ("import atexit, os, resource, sys\n"
          "def report():\n"
          "    me = resource.getrusage(resource.RUSAGE_SELF)\n"
          "    open(os.environ['BENCH_RSS_OUT'], 'w').write(f'{me.ru_maxrss} {me.ru_utime + me.ru_stime}')\n"
          "atexit.register(report)\n"
          "sys.argv[0] = 'runner'\n"
          "from runner.__main__ import main\n"
          "main()\n")


def run_once(argv: list[str]) -> dict[str, Any]:
    """One CLI run: wall, rusage of the runner and its waited-for workers, sampled memory of the tree."""
    load = os.getloadavg()[0]
    rss_out = Path(tempfile.mkstemp(prefix="bench-rss-")[1])
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
                            env={**env(), "BENCH_RSS_OUT": str(rss_out)})
    sampler = TreeSampler(proc.pid)
    sampler.start()
    out: dict[str, bytes] = {}

    def drain(name: str, stream: Any) -> None:
        out[name] = stream.read()

    readers = [threading.Thread(target=drain, args=(n, s)) for n, s in (("out", proc.stdout), ("err", proc.stderr))]
    for t in readers:
        t.start()
    _, status, ru = os.wait4(proc.pid, 0)  # not communicate(): it would reap the child and lose its rusage
    wall = time.monotonic() - t0
    sampler.stop.set()
    sampler.join()
    for t in readers:
        t.join()
    hwm = dict(sampler.hwm_kb)
    parent, parent_cpu = (rss_out.read_text() or "0 0").split()
    rss_out.unlink()
    return {"rc": os.waitstatus_to_exitcode(status), "t0": t0, "wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime,
            "max_rss_mb": ru.ru_maxrss / 1024, "tree_peak_sum_mb": sampler.peak_sum_kb / 1024,
            "runner_hwm_mb": int(parent) / 1024, "runner_cpu_s": float(parent_cpu),
            "worker_hwm_mb": max(hwm.values(), default=0) / 1024,
            "loadavg_1m": load, "stdout": out.get("out", b"").decode(errors="replace"),
            "stderr": out.get("err", b"").decode(errors="replace")}


def measure(n: int, workers: int, args: argparse.Namespace, data_dir: Path, tmp: Path, i: int) -> dict[str, Any]:
    run_dir, cache = tmp / f"run-{n}-{workers}-{i}", tmp / f"cache-{n}-{workers}-{i}"
    with Server(args.latency) as srv:
        before = srv.stats()["count"]
        overrides = cli_args(data_dir, srv.base_url, args.concurrency, cache, run_dir)
        r = run_once([PY, "-c", RUNNER, *overrides, f"workers={workers}", *args.extra])
        st = srv.stats()
        r["requests"] = st["count"] - before
        # The server's clock is CLOCK_MONOTONIC too (bench/timed_fake_llm.py).
        r["first_request_s"] = st["first_request"] - r.pop("t0")
        r["request_phase_s"] = st["last_reply"] - st["first_request"]
    if r["rc"] != 0:
        raise SystemExit(f"runner failed (rc={r['rc']}):\n{r['stderr'][-3000:]}")
    res = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))["tasks"]["mcqa_single_answer"]
    if res["n"] != n or r["requests"] != n:
        raise SystemExit(f"expected {n} samples and requests, got {res['n']} and {r['requests']}")
    r["cpu_ms_per_sample"] = 1000 * r["cpu_s"] / n
    r["workers_used"] = workers if "worker processes" in r["stdout"] else 1
    r.pop("stdout")
    r["stderr"] = r["stderr"][-500:]
    shutil.rmtree(run_dir, ignore_errors=True)
    shutil.rmtree(cache, ignore_errors=True)
    return r


KEYS = ("wall_s", "first_request_s", "request_phase_s", "cpu_ms_per_sample", "max_rss_mb", "runner_hwm_mb",
        "worker_hwm_mb", "tree_peak_sum_mb", "loadavg_1m")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", "--n", type=int, nargs="+", default=[1000, 10_000, 100_000])
    ap.add_argument("-w", "--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("-r", "--repeats", type=int, default=3)
    ap.add_argument("-l", "--latency", type=float, default=0.0)
    ap.add_argument("-c", "--concurrency", type=int, default=32)
    ap.add_argument("--label", default="")
    ap.add_argument("extra", nargs="*", help="overrides added to every run (after --)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    rows: list[dict[str, Any]] = []
    try:
        for n in args.n:
            data_dir = tmp / f"data-{n}"
            write_data(data_dir, n)
            for workers in args.workers:
                runs = []
                for i in range(args.repeats):
                    r = measure(n, workers, args, data_dir, tmp, i)
                    runs.append(r)
                    print(f"N={n} workers={workers} #{i + 1}: wall {r['wall_s']:.2f}s  first request "
                          f"{r['first_request_s']:.2f}s  request phase {r['request_phase_s']:.2f}s  cpu/sample "
                          f"{r['cpu_ms_per_sample']:.3f}ms  maxrss {r['max_rss_mb']:.0f}MB  runner "
                          f"{r['runner_hwm_mb']:.0f}MB  worker {r['worker_hwm_mb']:.0f}MB  tree "
                          f"{r['tree_peak_sum_mb']:.0f}MB  runner cpu {r['runner_cpu_s']:.1f}s  "
                          f"(load {r['loadavg_1m']:.2f})", flush=True)
                med = {k: statistics.median(r[k] for r in runs) for k in KEYS}
                rows.append({"n": n, "workers": workers, "median": med, "runs": runs})
        print(f"\nL={args.latency}s C={args.concurrency} medians of {args.repeats} "
              f"({os.cpu_count()} cores; load = 1-minute load average before each run)")
        print(f"{'N':>7} {'w':>2} {'wall s':>8} {'1st req s':>9} {'req phase s':>11} {'CPU ms/sample':>13} "
              f"{'maxrss MB':>9} {'runner MB':>9} {'worker MB':>9} {'tree MB':>8} {'load':>5}")
        for row in rows:
            m = row["median"]
            print(f"{row['n']:>7} {row['workers']:>2} {m['wall_s']:>8.2f} {m['first_request_s']:>9.2f} "
                  f"{m['request_phase_s']:>11.2f} {m['cpu_ms_per_sample']:>13.3f} "
                  f"{m['max_rss_mb']:>9.0f} {m['runner_hwm_mb']:>9.0f} {m['worker_hwm_mb']:>9.0f} "
                  f"{m['tree_peak_sum_mb']:>8.0f} {m['loadavg_1m']:>5.2f}")
        RESULTS.mkdir(parents=True, exist_ok=True)
        out = RESULTS / f"scale-{time.strftime('%Y%m%d-%H%M%S')}.json"
        out.write_text(json.dumps({"params": {k: v for k, v in vars(args).items()}, "cpus": os.cpu_count(),
                                   "rows": rows}, indent=2), encoding="utf-8")
        print(f"\nwritten {out.relative_to(ROOT)}")
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
