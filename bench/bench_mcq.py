"""Benchmark: N single-answer MCQ samples through the real CLI against the fake OpenAI-compatible server.

    .venv/bin/python bench/bench_mcq.py                  # N=1000, L=0.2 s, C=128, 1 repeat
    .venv/bin/python bench/bench_mcq.py -n 2000 -l 0.1 -c 64 --repeats 3
    .venv/bin/python bench/bench_mcq.py --pycache-prefix /tmp/pyc   # as with a bytecode-compiled venv
    .venv/bin/python bench/bench_mcq.py --profile        # same workload in-process under a profiler
    .venv/bin/python bench/bench_mcq.py --fixed          # model.adaptive=false: no slow start

Per repeat, against one fresh server process (`bench/timed_fake_llm.py`: `tests/fake_llm.py` with exact
handler timestamps in `/stats`; one server per pair because the cache key includes api_base, i.e. the port):

1. a cold run  : `python -m runner benchmark=eve ... model.concurrency=C cache.dir=FRESH hydra.run.dir=RUN1`
2. a cached run: the same command with the same cache dir and a new run dir (must send 0 requests)

and once (unless --no-breakdown) an instrumented cold run (`bench/_probe.py`, which wraps the same
`runner.__main__.main`) that timestamps start-up (interpreter, Hydra compose, build, litellm import,
first request), the CPU of each phase and the time spent in garbage collection, plus a few isolated
measurements in separate processes (bare interpreter, `import litellm`, Hydra compose).

Measurements
* request phase: server-side, from the first chat request entering the handler to the last handler
  returning its reply, both on CLOCK_MONOTONIC in the server process (exact to well under 1 ms; no
  extra network hop, unlike a proxy, and no polling), compared with the ideal ceil(N/C)*L.
* wall: `time.monotonic()` around Popen ... wait of the runner process.
* CPU: user+sys of the runner process (and its own children) from `os.wait4`.
* first request: the server's first_request minus the monotonic time just before Popen (same clock).
* requests: the server's request count delta over each run (the cached run must add 0).

Bytecode matters most for start-up: a venv installed by `uv pip install` without --compile-bytecode has
no .pyc files, and with PYTHONDONTWRITEBYTECODE=1 none get written, so every process compiles every
module from source. The bench prints which case it measures; --pycache-prefix measures the compiled case
without touching the venv. --jitter J (diagnostic) spreads the server latency over L*(1±J).

The entry's limiter is adaptive by default: it starts at C/4 in flight and doubles per round, so at N=1000
the first two rounds carry 96 requests instead of 2*C and the request phase is at best 10 rounds (0.8 of
ideal at C=128); --fixed keeps C in flight from the start and measures the CPU limit alone.
Results go to stdout as a table and to bench/results/mcq-<time>.json (git-ignored).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
RESULTS = BENCH / "results"
PY = sys.executable

TARGETS = {"request_ratio": 0.9, "wall_s": 4.0, "first_request_s": 2.5, "cached_wall_s": 1.0}

WORDS = ("orbit", "radar", "band", "swath", "albedo", "aerosol", "ozone", "sentinel", "landsat", "pixel",
         "spectral", "thermal", "ice", "ocean", "canopy", "cloud", "geoid", "altimeter", "lidar", "soil")


PYCACHE_PREFIX: str | None = None  # --pycache-prefix: a bytecode cache outside the venv


def env() -> dict[str, str]:
    """The offline environment the tests use (no cost-map fetch, no W&B, no hub)."""
    e = dict(os.environ)
    e.update({"LITELLM_LOCAL_MODEL_COST_MAP": "True", "WANDB_MODE": "offline", "WANDB_SILENT": "true",
              "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "PYTHONUNBUFFERED": "1"})
    e.pop("WANDB_API_KEY", None)
    if PYCACHE_PREFIX:
        e["PYTHONPYCACHEPREFIX"] = PYCACHE_PREFIX
        e.pop("PYTHONDONTWRITEBYTECODE", None)
    return e


def bytecode_status() -> dict[str, Any]:
    """Whether imports can use compiled bytecode: it decides most of the start-up time.

    A venv installed by `uv pip install` without --compile-bytecode has no .pyc files, and with
    PYTHONDONTWRITEBYTECODE=1 none are written either, so every process compiles every module from
    source (`import litellm`: ~4.5 s instead of ~2.3 s here).
    """
    import importlib.util

    spec = importlib.util.find_spec("litellm")  # where it is installed, without importing it
    site = Path(spec.origin).parent if spec and spec.origin else Path(".")
    return {"PYTHONDONTWRITEBYTECODE": os.environ.get("PYTHONDONTWRITEBYTECODE"),
            "pycache_prefix": PYCACHE_PREFIX,
            "litellm_pyc_in_venv": any(site.glob("__pycache__/*.pyc"))}


# ----------------------------------------------------------------------------------------- data
def write_data(data_dir: Path, n: int, seed: int = 0) -> Path:
    """N distinct rows of mcqa_single_answer.jsonl: Question, Choices (4 texts), Answer letter."""
    rng = random.Random(seed)
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / "mcqa_single_answer.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            q = " ".join(rng.choice(WORDS) for _ in range(12))
            row = {"Question": f"Q{i}: which statement about {q} is right?",
                   "Choices": [f"{rng.choice(WORDS)} option {i}-{k}" for k in range(4)],
                   "Answer": "ABCD"[i % 4]}
            fh.write(json.dumps(row) + "\n")
    return path


# --------------------------------------------------------------------------------------- server
class Server:
    """The timed fake server in its own process."""

    def __init__(self, latency: float, default: str = "B", jitter: float = 0.0) -> None:
        self.proc = subprocess.Popen(
            [PY, str(BENCH / "timed_fake_llm.py"), "--port", "0", "--latency", str(latency),
             "--default", default] + (["--jitter", str(jitter)] if jitter else []),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env(), cwd=ROOT)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if not line.startswith("READY "):
            self.stop()
            detail = self.proc.stderr.read() if self.proc.stderr else ""
            raise RuntimeError(f"fake server did not start: {line!r} {detail}")
        self.base_url = line.split(" ", 1)[1]
        self.host = self.base_url.rsplit("/v1", 1)[0]

    def stats(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"{self.host}/stats", timeout=10) as r:  # noqa: S310 - 127.0.0.1
            return json.loads(r.read())

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


# ------------------------------------------------------------------------------------------ runs
ADAPTIVE = True  # --fixed: the entry's in-flight level stays at its ceiling (model.adaptive=false)
OVERRIDES: list[str] = []  # --override KEY=VALUE: more of the runner's overrides (e.g. workers=2)


def cli_args(data_dir: Path, base_url: str, concurrency: int, cache_dir: Path, run_dir: Path) -> list[str]:
    """The overrides of the measured command line."""
    return [*([] if ADAPTIVE else ["model.adaptive=false"]),
            "benchmark=eve", f"benchmark.data_dir={data_dir}", "benchmark.tasks=[mcqa_single_answer]",
            "benchmark.num_fewshot=0", "model=openai-compatible", f"model.api_base={base_url}",
            "model.model=openai/fake", "model.name=fake", "model.api_key=x",
            f"model.concurrency={concurrency}", "judges=none", "tracker=none", "progress=false",
            f"cache.dir={cache_dir}", f"hydra.run.dir={run_dir}", *OVERRIDES]


def run_cli(argv: list[str], extra_env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run a command; wall time, the child's own rusage (os.wait4) and its output."""
    e = env()
    e.update(extra_env or {})
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e, cwd=ROOT)
    # communicate() would reap the child and lose its rusage: read the pipes in threads, then wait4.
    import threading

    out: dict[str, bytes] = {}

    def drain(name: str, stream: Any) -> None:
        out[name] = stream.read()

    threads = [threading.Thread(target=drain, args=(n, s)) for n, s in (("out", proc.stdout),
                                                                        ("err", proc.stderr))]
    for t in threads:
        t.start()
    _, status, ru = os.wait4(proc.pid, 0)
    t1 = time.monotonic()
    proc.returncode = os.waitstatus_to_exitcode(status)
    for t in threads:
        t.join()
    return {"t0": t0, "t1": t1, "wall_s": t1 - t0, "cpu_user_s": ru.ru_utime, "cpu_sys_s": ru.ru_stime,
            "cpu_s": ru.ru_utime + ru.ru_stime, "max_rss_mb": ru.ru_maxrss / 1024, "rc": proc.returncode,
            "stdout": out.get("out", b"").decode(errors="replace"),
            "stderr": out.get("err", b"").decode(errors="replace")}


def check_results(run_dir: Path, n: int) -> dict[str, Any]:
    """What results.json says: samples, errors, accuracy (the server always answers B)."""
    res = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    task = res["tasks"]["mcqa_single_answer"]
    usage = res.get("usage", {}).get("fake", {})
    return {"n_samples": task.get("n_samples", task.get("n")), "summary": res.get("summary"),
            "metrics": task.get("metrics"), "usage": usage}


def measured_run(args: argparse.Namespace, data_dir: Path, cache_dir: Path, run_dir: Path,
                 probe: str | None = None, srv: Server | None = None) -> dict[str, Any]:
    """One run of the CLI against `srv` (or a fresh server); server-side timestamps and counts.

    With a shared server, requests are the count delta; first/last timestamps are only meaningful
    for the first run on a server (the cached run must send none anyway).
    """
    own = srv is None
    if srv is None:
        srv = Server(args.latency, jitter=args.jitter)
    try:
        before = srv.stats()
        overrides = cli_args(data_dir, srv.base_url, args.concurrency, cache_dir, run_dir)
        extra: dict[str, str] = {}
        if probe:
            argv = [PY, str(BENCH / "_probe.py"), *overrides]
            extra["BENCH_PROBE_OUT"] = probe
        else:
            argv = [PY, "-m", "runner", *overrides]
        load = os.getloadavg()[0]
        r = run_cli(argv, extra)
        st = srv.stats()
    finally:
        if own:
            srv.stop()
    r["loadavg_1m_before"] = load
    r["server"] = st
    r["requests"] = st["count"] - before["count"]
    r["server_cpu_s"] = st["cpu_seconds"] - before["cpu_seconds"]
    if r["rc"] != 0:
        raise SystemExit(f"runner failed (rc={r['rc']}):\n{r['stderr'][-3000:]}")
    if before["count"] == 0 and st.get("first_request") is not None:
        r["first_request_s"] = st["first_request"] - r["t0"]
        r["request_phase_s"] = st["last_reply"] - st["first_request"]
        r["after_last_reply_s"] = r["t1"] - st["last_reply"]
        r["server_in_flight_max"] = st.get("in_flight_max")
    r["results"] = check_results(run_dir, args.n)
    r.pop("stdout")
    r["stderr_tail"] = r.pop("stderr")[-2000:]
    return r


def isolated(stmt: str, repeats: int = 2) -> dict[str, float]:
    """Wall and CPU of `python -c stmt` (best of `repeats`)."""
    best: dict[str, float] | None = None
    for _ in range(repeats):
        r = run_cli([PY, "-c", stmt])
        if r["rc"] != 0:
            return {"error": r["stderr"][-500:]}  # type: ignore[dict-item]
        cur = {"wall_s": r["wall_s"], "cpu_s": r["cpu_s"]}
        if best is None or cur["wall_s"] < best["wall_s"]:
            best = cur
    assert best is not None
    return best


def breakdown(args: argparse.Namespace, data_dir: Path, tmp: Path) -> dict[str, Any]:
    """Start-up, phase by phase, from an instrumented cold run plus a few isolated measurements."""
    probe_out = tmp / "probe.json"
    r = measured_run(args, data_dir, tmp / "cache-probe", tmp / "run-probe", probe=str(probe_out))
    p = json.loads(probe_out.read_text())
    t0 = r["t0"]
    ev = {k: round(v - t0, 3) for k, v in p["events"].items() if isinstance(v, float)}
    cpu = p.get("cpu", {})
    phases = {}
    if "first_litellm_call" in cpu and "last_litellm_return" in cpu:
        phases["request phase CPU (all threads)"] = cpu["last_litellm_return"] - cpu["first_litellm_call"]
        phases["request phase CPU per sample, ms"] = 1000 * phases["request phase CPU (all threads)"] / args.n
    if "first_litellm_call" in cpu:
        phases["CPU before first request (all threads)"] = cpu["first_litellm_call"]
    if "first_request" in r:
        ev["server_first_request"] = round(r["first_request_s"], 3)
        ev["server_last_reply"] = round(r["first_request_s"] + r["request_phase_s"], 3)
    ev["process_exit"] = round(r["wall_s"], 3)
    compose = (
        "import sys; sys.path.insert(0, 'tests'); import os; from hydra import compose, initialize_config_dir; "
        "from runner.config import register; register(); "
        f"initialize_config_dir(config_dir={str(ROOT / 'conf')!r}, version_base='1.3').__enter__(); "
        "compose(config_name='config', overrides=['benchmark=eve','model=openai-compatible',"
        "'judges=none','tracker=none'])")
    iso = {
        "python -c pass": isolated("pass"),
        "import litellm (alone)": isolated("import litellm"),
        "hydra compose (alone)": isolated(compose),
        "import runner.run.app (no litellm)": isolated(
            "import runner.run.app, sys; assert 'litellm' not in sys.modules"),
    }
    return {"events_s_since_popen": dict(sorted(ev.items(), key=lambda kv: kv[1])), "cpu_phases": phases,
            "datasets_imported": p["datasets_imported"], "litellm_import_thread": p.get("litellm_import"),
            "gc": p.get("gc"),
            "isolated": iso, "run": {k: r[k] for k in ("wall_s", "cpu_s", "requests")}}


# ----------------------------------------------------------------------------------------- report
def fmt(x: Any, nd: int = 3) -> str:
    return f"{x:.{nd}f}" if isinstance(x, float) else str(x)


def summarize(args: argparse.Namespace, cold: list[dict[str, Any]], cached: list[dict[str, Any]]
              ) -> dict[str, Any]:
    ideal = math.ceil(args.n / args.concurrency) * args.latency

    def med(rows: list[dict[str, Any]], key: str) -> float | None:
        vals = [r[key] for r in rows if r.get(key) is not None]
        return statistics.median(vals) if vals else None

    s = {
        "ideal_request_phase_s": ideal,
        "request_phase_s": med(cold, "request_phase_s"),
        "wall_s": med(cold, "wall_s"),
        "cpu_s": med(cold, "cpu_s"),
        "first_request_s": med(cold, "first_request_s"),
        "after_last_reply_s": med(cold, "after_last_reply_s"),
        "requests": [r["requests"] for r in cold],
        "cached_wall_s": med(cached, "wall_s"),
        "cached_cpu_s": med(cached, "cpu_s"),
        "cached_requests": [r["requests"] for r in cached],
    }
    rp = s["request_phase_s"]
    s["request_ratio"] = ideal / rp if rp else None  # >= 0.9 means within ~11% of ideal
    s["targets"] = TARGETS
    s["met"] = {
        "request_ratio": bool(s["request_ratio"] and s["request_ratio"] >= TARGETS["request_ratio"]),
        "wall_s": bool(s["wall_s"] is not None and s["wall_s"] < TARGETS["wall_s"]),
        "first_request_s": bool(s["first_request_s"] is not None
                                and s["first_request_s"] < TARGETS["first_request_s"]),
        "cached_wall_s": bool(s["cached_wall_s"] is not None and s["cached_wall_s"] < TARGETS["cached_wall_s"]
                              and all(c == 0 for c in s["cached_requests"])),
    }
    return s


def print_table(args: argparse.Namespace, s: dict[str, Any], cold: list[dict[str, Any]],
                cached: list[dict[str, Any]], bd: dict[str, Any] | None) -> None:
    print(f"\nN={args.n}  L={args.latency}s{f' (jitter ±{args.jitter:.0%})' if args.jitter else ''}  "
          f"C={args.concurrency}  repeats={args.repeats}  "
          f"(medians; per-repeat values in brackets)")
    rows = [
        ("request phase (server first req -> last reply)", s["request_phase_s"],
         [r.get("request_phase_s") for r in cold], ""),
        ("ideal ceil(N/C)*L", s["ideal_request_phase_s"], [], ""),
        ("ideal / request phase", s["request_ratio"], [], f">= {TARGETS['request_ratio']}"),
        ("whole run wall", s["wall_s"], [r["wall_s"] for r in cold], f"< {TARGETS['wall_s']}"),
        ("runner CPU user+sys", s["cpu_s"], [r["cpu_s"] for r in cold], ""),
        ("start -> first request", s["first_request_s"], [r.get("first_request_s") for r in cold],
         f"< {TARGETS['first_request_s']}"),
        ("last reply -> process exit", s["after_last_reply_s"], [r.get("after_last_reply_s") for r in cold], ""),
        ("requests received (cold)", None, s["requests"], f"== {args.n}"),
        ("cached re-run wall", s["cached_wall_s"], [r["wall_s"] for r in cached], f"< {TARGETS['cached_wall_s']}"),
        ("cached re-run CPU", s["cached_cpu_s"], [r["cpu_s"] for r in cached], ""),
        ("requests received (cached)", None, s["cached_requests"], "== 0"),
    ]
    w = max(len(r[0]) for r in rows)
    print(f"{'metric'.ljust(w)}  {'value':>8}  {'target':>8}  per repeat")
    for name, val, per, target in rows:
        per_s = "[" + ", ".join(fmt(p, 2) for p in per) + "]" if per else ""
        print(f"{name.ljust(w)}  {fmt(val) if val is not None else '':>8}  {target:>8}  {per_s}")
    print("targets met: " + ", ".join(f"{k}={'yes' if v else 'NO'}" for k, v in s["met"].items()))
    if bd:
        print("\nstart-up breakdown (seconds since Popen, instrumented cold run):")
        for k, v in bd["events_s_since_popen"].items():
            print(f"  {v:7.3f}  {k}")
        lit = bd.get("litellm_import_thread") or {}
        if lit:
            print(f"  litellm import in its thread: {lit.get('wall_s', 0):.3f}s wall, "
                  f"{lit.get('thread_cpu_s', 0):.3f}s CPU of that thread")
        for k, v in bd.get("cpu_phases", {}).items():
            print(f"  {k}: {v:.3f}")
        print(f"  datasets imported: {bd['datasets_imported']}")
        if bd.get("gc"):
            print("  garbage collection over the whole run: " + ", ".join(
                f"gen{g} {v['collections']}x {v['seconds']:.3f}s" for g, v in bd["gc"].items()))
        print("isolated (best of 2, separate processes):")
        for k, v in bd["isolated"].items():
            print(f"  {k:<34} wall {fmt(v.get('wall_s'))}s  cpu {fmt(v.get('cpu_s'))}s")


# ---------------------------------------------------------------------------------------- profile
def profile(args: argparse.Namespace, data_dir: Path, tmp: Path) -> None:
    """The same workload in this process under cProfile (or pyinstrument), with the litellm import
    thread profiled on its own; writes .prof files to bench/results/ and prints the top entries."""
    import cProfile
    import io
    import pstats
    import threading

    os.environ.update({k: v for k, v in env().items()
                       if k not in os.environ or k.startswith(("LITELLM", "WANDB", "HF_"))})
    if PYCACHE_PREFIX:  # this process imports the runner itself: give it the same bytecode cache
        sys.pycache_prefix = PYCACHE_PREFIX
        sys.dont_write_bytecode = False
    sys.path.insert(0, str(ROOT))
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    with Server(args.latency) as srv:
        sys.argv = ["runner", *cli_args(data_dir, srv.base_url, args.concurrency, tmp / "cache-prof",
                                          tmp / "run-prof")]
        import runner.models.litellm_import as lm

        orig_import = lm.import_litellm
        import_prof = cProfile.Profile()

        def profiled_import() -> Any:
            # Only the prewarm thread's import: a second profiler enabled on the main thread would
            # replace the main profiler's hook there.
            if threading.current_thread() is threading.main_thread():
                return orig_import()
            import_prof.enable()
            try:
                return orig_import()
            finally:
                import_prof.disable()

        lm.import_litellm = profiled_import
        from runner.__main__ import main

        use_pyinstrument = args.profiler == "pyinstrument"
        if use_pyinstrument:
            from pyinstrument import Profiler

            prof: Any = Profiler(async_mode="enabled")
            prof.start()
        else:
            prof = cProfile.Profile()
            prof.enable()
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            main()
        except SystemExit as exc:
            if exc.code not in (0, None):
                raise
        t1, c1 = time.perf_counter(), time.process_time()
        if use_pyinstrument:
            prof.stop()
            html = RESULTS / f"profile-{stamp}.html"
            html.write_text(prof.output_html(), encoding="utf-8")
            print(prof.output_text(unicode=False, color=False, show_all=False))
            print(f"written {html}")
        else:
            prof.disable()
            main_path = RESULTS / f"profile-{stamp}-main.prof"
            prof.dump_stats(main_path)
            for title, p, sort in (("main thread, by cumulative", prof, "cumulative"),
                                   ("main thread, by own time", prof, "tottime")):
                buf = io.StringIO()
                pstats.Stats(p, stream=buf).strip_dirs().sort_stats(sort).print_stats(args.top)
                print(f"==== {title} ====\n{buf.getvalue()}")
        st = srv.stats()
    imp_path = RESULTS / f"profile-{stamp}-litellm-import.prof"
    try:
        import_prof.dump_stats(imp_path)
        buf = io.StringIO()
        pstats.Stats(import_prof, stream=buf).sort_stats("cumulative").print_stats(15)
        print(f"==== litellm import thread, by cumulative ====\n{buf.getvalue()}")
    except (TypeError, ValueError):
        pass
    print(f"in-process: wall {t1 - t0:.3f}s, process CPU (all threads) {c1 - c0:.3f}s, "
          f"server requests {st['count']}, request phase "
          f"{(st['last_reply'] or 0) - (st['first_request'] or 0):.3f}s (profiler overhead included)")


# ------------------------------------------------------------------------------------------- main
def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", "--n", type=int, default=1000, help="samples (default 1000)")
    ap.add_argument("-l", "--latency", type=float, default=0.2, help="server latency per request, s")
    ap.add_argument("-c", "--concurrency", type=int, default=128, help="model.concurrency")
    ap.add_argument("--jitter", type=float, default=0.0,
                    help="latency uniform in L*(1±J) instead of exactly L (diagnostic; the targets are for 0)")
    ap.add_argument("-r", "--repeats", type=int, default=1, help="cold+cached pairs to run")
    ap.add_argument("--no-cached", action="store_true", help="skip the cached re-runs")
    ap.add_argument("--no-breakdown", action="store_true", help="skip the instrumented start-up run")
    ap.add_argument("--profile", action="store_true", help="run in-process under a profiler instead")
    ap.add_argument("--profiler", choices=("cprofile", "pyinstrument"), default="cprofile")
    ap.add_argument("--top", type=int, default=40, help="rows of the profile to print")
    ap.add_argument("--fixed", action="store_true",
                    help="model.adaptive=false: all C requests in flight from the start, no slow start")
    ap.add_argument("--label", default="", help="free text stored with the JSON results")
    ap.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                    help="one more override of the measured command (repeatable), e.g. --override workers=2")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir (data, caches, run dirs)")
    ap.add_argument("--pycache-prefix", default=None, metavar="DIR",
                    help="give the runner a bytecode cache in DIR (PYTHONPYCACHEPREFIX, and "
                         "PYTHONDONTWRITEBYTECODE unset) and warm it with one untimed run first; "
                         "the venv itself is not touched")
    args = ap.parse_args()

    global PYCACHE_PREFIX, ADAPTIVE
    PYCACHE_PREFIX = args.pycache_prefix
    ADAPTIVE = not args.fixed
    OVERRIDES.extend(args.override)
    tmp = Path(tempfile.mkdtemp(prefix="bench-mcq-"))
    try:
        data_dir = tmp / "data"
        write_data(data_dir, args.n)
        bytecode = bytecode_status()
        print(f"bytecode: {bytecode}")
        if PYCACHE_PREFIX:  # warm the bytecode cache: one small untimed run through every import
            write_data(tmp / "warm", 8)
            measured_run(argparse.Namespace(**{**vars(args), "n": 8}), tmp / "warm", tmp / "cache-warm",
                         tmp / "run-warm")
        if args.profile:
            profile(args, data_dir, tmp)
            return 0
        cold: list[dict[str, Any]] = []
        cached: list[dict[str, Any]] = []
        for i in range(args.repeats):
            cache_dir = tmp / f"cache-{i}"
            # One server per pair: the cache key includes api_base (the port).
            srv = Server(args.latency, jitter=args.jitter)
            try:
                r = measured_run(args, data_dir, cache_dir, tmp / f"run-{i}-cold", srv=srv)
                if not args.no_cached:
                    c = measured_run(args, data_dir, cache_dir, tmp / f"run-{i}-cached", srv=srv)
            finally:
                srv.stop()
            cold.append(r)
            print(f"repeat {i + 1}: cold wall {r['wall_s']:.3f}s  request phase {r.get('request_phase_s', 0):.3f}s  "
                  f"first request {r.get('first_request_s', 0):.3f}s  cpu {r['cpu_s']:.3f}s  "
                  f"requests {r['requests']}  (load {r['loadavg_1m_before']:.2f})", flush=True)
            if r["requests"] != args.n:
                print(f"  WARNING: server received {r['requests']} requests for {args.n} samples")
            if not args.no_cached:
                cached.append(c)
                print(f"          cached wall {c['wall_s']:.3f}s  cpu {c['cpu_s']:.3f}s  requests {c['requests']}",
                      flush=True)
        bd = None if args.no_breakdown else breakdown(args, data_dir, tmp)
        s = summarize(args, cold, cached)
        print_table(args, s, cold, cached, bd)
        RESULTS.mkdir(parents=True, exist_ok=True)
        out = RESULTS / f"mcq-{time.strftime('%Y%m%d-%H%M%S')}.json"
        for r in cold + cached:
            r.pop("t0", None), r.pop("t1", None)
        out.write_text(json.dumps({
            "params": {"n": args.n, "latency": args.latency, "jitter": args.jitter,
                       "concurrency": args.concurrency, "adaptive": ADAPTIVE,
                       "repeats": args.repeats, "label": args.label},
            "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0],
                        "loadavg_at_end": os.getloadavg()},
            "bytecode": bytecode,
            "summary": s, "breakdown": bd, "cold": cold, "cached": cached,
        }, indent=2, default=str), encoding="utf-8")
        print(f"\nwritten {out.relative_to(ROOT)}")
        return 0
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
