"""`python -m runner ARGS` with start-up timestamps (used by bench_mcq.py's breakdown run).

Runs the same `runner.__main__.main()`, wrapping a few functions to record CLOCK_MONOTONIC times:
probe_start (interpreter up), main_start, litellm import start/end (the prewarm thread), hydra job
start (config composed), build end, execute start/end, first/last litellm call (DirectCalls.complete), what follows
the last reply (jobs done, samples files closed, tasks closed, the first interval computed), exit.
Writes {"events": {...}, "datasets_imported": bool, "litellm_import": {...}} to $BENCH_PROBE_OUT.
"""

from __future__ import annotations

import time

T_START = time.monotonic()

import asyncio  # noqa: E402
import atexit  # noqa: E402
import functools  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
events: dict[str, float] = {"probe_start": T_START}
cpu: dict[str, float] = {"probe_start": time.process_time()}  # process CPU (all threads) at each event
info: dict[str, Any] = {}


def mark(name: str) -> None:
    if name not in events:
        events[name] = time.monotonic()
        cpu[name] = time.process_time()


gc_time = {0: [0, 0.0], 1: [0, 0.0], 2: [0, 0.0]}
_gc_t0 = [0.0]


def _gc_callback(phase: str, gcinfo: dict[str, Any]) -> None:
    if phase == "start":
        _gc_t0[0] = time.perf_counter()
    else:
        g = gc_time[gcinfo["generation"]]
        g[0] += 1
        g[1] += time.perf_counter() - _gc_t0[0]


import gc  # noqa: E402

gc.callbacks.append(_gc_callback)


def dump() -> None:
    mark("exit")
    out = os.environ.get("BENCH_PROBE_OUT")
    if out:
        Path(out).write_text(json.dumps({"events": events, "cpu": cpu, "datasets_imported": "datasets" in sys.modules,
                                         "litellm_import": info.get("litellm_import"),
                                         "gc": {str(k): {"collections": v[0], "seconds": round(v[1], 4)}
                                                for k, v in gc_time.items()}}), encoding="utf-8")


atexit.register(dump)

import runner.__main__ as entry  # noqa: E402
import runner.models.litellm_import as lm  # noqa: E402
from runner.models.direct_calls import DirectCalls  # noqa: E402

mark("runner_main_imported")
_orig_import = lm.import_litellm


def timed_import() -> Any:
    mark("litellm_import_start")
    w0, c0 = time.monotonic(), time.thread_time()
    mod = _orig_import()
    info.setdefault("litellm_import", {"wall_s": time.monotonic() - w0, "thread_cpu_s": time.thread_time() - c0,
                              "thread": threading.current_thread().name})
    mark("litellm_import_end")
    return mod


# Every model call passes here, whether litellm's acompletion or its HTTP handler sends it (direct_calls.py).
_orig_complete = DirectCalls.complete


@functools.wraps(_orig_complete)
async def complete(self: DirectCalls, litellm: Any, kwargs: dict[str, Any]) -> Any:
    mark("first_litellm_call")
    try:
        return await _orig_complete(self, litellm, kwargs)
    finally:
        events["last_litellm_return"] = time.monotonic()
        cpu["last_litellm_return"] = time.process_time()


DirectCalls.complete = complete  # type: ignore[method-assign]

lm.import_litellm = timed_import
_orig_job = entry._job


def job(cfg: Any) -> None:
    mark("hydra_job_start")
    import runner.run.app as app

    orig_build, orig_execute = getattr(app, "build"), getattr(app, "execute")  # noqa: B009 - not re-exported

    def build(*a: Any, **k: Any) -> Any:
        mark("build_start")
        try:
            return orig_build(*a, **k)
        finally:
            mark("build_end")

    async def execute(*a: Any, **k: Any) -> Any:
        mark("execute_start")
        try:
            return await orig_execute(*a, **k)
        finally:
            mark("execute_end")

    setattr(app, "build", build)  # noqa: B010
    setattr(app, "execute", execute)  # noqa: B010
    _wrap_after_requests()
    try:
        _orig_job(cfg)
    finally:
        mark("hydra_job_end")


def _wrap(module: Any, name: str, start: str | None, end: str) -> None:
    """Mark `end` (and `start`) around `module.name`, if the module has it (a sync or async function)."""
    orig = getattr(module, name, None)
    if orig is None or getattr(orig, "_probe", False):
        return
    if asyncio.iscoroutinefunction(orig):
        async def wrapped_async(*a: Any, **k: Any) -> Any:
            if start:
                mark(start)
            try:
                return await orig(*a, **k)
            finally:
                mark(end)
        wrapped: Any = wrapped_async
    else:
        def wrapped_sync(*a: Any, **k: Any) -> Any:
            if start:
                mark(start)
            try:
                return orig(*a, **k)
            finally:
                mark(end)
        wrapped = wrapped_sync
    wrapped._probe = True
    setattr(module, name, wrapped)


def _wrap_after_requests() -> None:
    """What runs between the last reply and the end of `execute`: the jobs ending, the samples files
    closed, the first aggregate (numpy and scipy imported on use)."""
    import runner.metrics.uncertainty as uncertainty
    import runner.run.pipeline as pipeline
    import runner.run.store as store

    _wrap(pipeline, "_run_jobs", None, "jobs_done")
    _wrap(store.SampleStore, "close", None, "samples_closed")
    _wrap(pipeline, "_close_tasks", None, "tasks_closed")
    _wrap(uncertainty, "with_uncertainty", "uncertainty_start", "uncertainty_end")


entry._job = job
sys.argv = [str(ROOT / "runner" / "__main__.py"), *sys.argv[1:]]
mark("main_start")
entry.main()
