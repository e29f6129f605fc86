"""Per-call CPU of the call layer, in-process, against the fake server in its own process.

    .venv/bin/python bench/bench_calls.py                    # N=1000 calls at C=128, latency 0
    .venv/bin/python bench/bench_calls.py --profile endpoint # cProfile one mode, print the top entries

Modes (each: warm-up calls, then N timed calls with C in flight; CPU = this process's user+sys over
the timed calls, all threads, divided by N; the server's CPU is in the other process):
* endpoint       : `Endpoint.complete` with no cache (what the runner does per sample, minus the task)
* endpoint_cache : `Endpoint.complete` with a fresh ResponseCache (miss + put on every call)
* cache_hit      : `Endpoint.complete` answered from the cache (no request)
* litellm        : bare `litellm.acompletion(...)` with the runner's module settings, as the runner calls it
                   (the loop's default executor runs its non-blocking `completion()` inline)
* litellm_hop    : the same with asyncio's own default executor: `completion()` in a thread on every call
* openai         : bare `openai.AsyncOpenAI().chat.completions.create` (reference floor; not a runner path)
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from bench_mcq import RESULTS, Server  # noqa: E402

MODES = ("endpoint", "endpoint_cache", "cache_hit", "litellm", "litellm_hop", "openai")


def messages(i: int) -> list[dict[str, str]]:
    return [{"role": "system", "content": "Answer with the letter of the correct option."},
            {"role": "user", "content": f"Question {i}: which band?\nA. L\nB. C\nC. X\nD. Ku\nAnswer:"}]


async def run_mode(mode: str, base_url: str, n: int, c: int, warm: int, prof: cProfile.Profile | None,
                   tmp: Path) -> dict[str, Any]:
    from runner.models import litellm_model as lm
    from runner.models.cache import ResponseCache

    litellm = lm._import_litellm()
    clients: list[Any] = []
    restore: list[Any] = []
    sem = asyncio.Semaphore(c)
    call: Any
    if mode in ("endpoint", "endpoint_cache", "cache_hit"):
        cache = ResponseCache(tmp / f"cache-{mode}") if mode != "endpoint" else None
        ep = lm.Endpoint(name="fake", model="openai/fake", api_base=base_url, api_key="x", concurrency=c,
                         params={"temperature": 0.0, "max_tokens": 1024}, cache=cache)

        async def call(i: int) -> Any:
            return await ep.complete(messages(i))

        if mode == "cache_hit":  # fill the cache first (untimed)
            await asyncio.gather(*(call(i) for i in range(n + warm)))
    elif mode in ("litellm", "litellm_hop"):
        from concurrent.futures import ThreadPoolExecutor

        from runner.models.inline_calls import use_inline_executor

        use_inline_executor()
        if mode == "litellm_hop":  # until the next mode: asyncio's own pool, as without the runner
            loop = asyncio.get_running_loop()
            inline = getattr(loop, "_default_executor", None)
            loop.set_default_executor(ThreadPoolExecutor(thread_name_prefix="asyncio"))
            restore.append(lambda: loop.set_default_executor(inline))

        async def call(i: int) -> Any:
            async with sem:
                return await litellm.acompletion(model="openai/fake", api_base=base_url, messages=messages(i),
                                                 temperature=0.0, max_tokens=1024, api_key="x", timeout=120.0,
                                                 num_retries=0, max_retries=0)
    else:
        import openai

        client = openai.AsyncOpenAI(base_url=base_url, api_key="x", max_retries=0)
        clients.append(client)

        async def call(i: int) -> Any:
            async with sem:
                return await client.chat.completions.create(model="fake", messages=messages(i),  # type: ignore[arg-type]
                                                            temperature=0.0, max_tokens=1024)

    await asyncio.gather(*(call(-1 - i) for i in range(warm)))  # connections, lazy imports, price lookup
    w0, c0 = time.perf_counter(), time.process_time()
    if prof:
        prof.enable()
    await asyncio.gather(*(call(i) for i in range(n)))
    if prof:
        prof.disable()
    w1, c1 = time.perf_counter(), time.process_time()
    for cl in clients:
        await cl.close()
    for undo in restore:
        undo()
    return {"mode": mode, "n": n, "concurrency": c, "wall_s": w1 - w0, "cpu_s": c1 - c0,
            "cpu_ms_per_call": 1000 * (c1 - c0) / n, "calls_per_s": n / (w1 - w0)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", "--n", type=int, default=1000)
    ap.add_argument("-c", "--concurrency", type=int, default=128)
    ap.add_argument("-l", "--latency", type=float, default=0.0)
    ap.add_argument("--warm", type=int, default=50)
    ap.add_argument("--modes", default="endpoint,endpoint_cache,cache_hit,litellm,litellm_hop,openai")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--profile", choices=MODES, default=None, help="cProfile the timed calls of one mode")
    ap.add_argument("--top", type=int, default=45)
    ap.add_argument("--sort", default="tottime")
    ap.add_argument("--label", default="")
    args = ap.parse_args()
    modes = [args.profile] if args.profile else [m.strip() for m in args.modes.split(",") if m.strip()]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-calls-") as tmpd, Server(args.latency) as srv:
        asyncio.run(all_modes(args, modes, srv.base_url, Path(tmpd), rows))
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"calls-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps({"label": args.label, "params": vars(args), "rows": rows}, indent=2),
                   encoding="utf-8")
    print(f"written {out.relative_to(ROOT)}")
    return 0


async def all_modes(args: argparse.Namespace, modes: list[str], base_url: str, tmp: Path,
                    rows: list[dict[str, Any]]) -> None:
    """Every mode on one event loop, like the runner (litellm keeps its clients per loop)."""
    for rep in range(args.repeats):
        for mode in modes:
            prof = cProfile.Profile() if args.profile else None
            r = await run_mode(mode, base_url, args.n, args.concurrency, args.warm, prof, tmp / f"r{rep}")
            r["loadavg_1m"] = os.getloadavg()[0]
            rows.append(r)
            print(f"{mode:<15} {r['cpu_ms_per_call']:7.3f} ms CPU/call   {r['calls_per_s']:8.0f} calls/s   "
                  f"wall {r['wall_s']:.3f}s  (load {r['loadavg_1m']:.2f})", flush=True)
            if prof:
                buf = io.StringIO()
                pstats.Stats(prof, stream=buf).sort_stats(args.sort).print_stats(args.top)
                print(buf.getvalue())
                RESULTS.mkdir(parents=True, exist_ok=True)
                prof.dump_stats(RESULTS / f"calls-{mode}-{time.strftime('%Y%m%d-%H%M%S')}.prof")


if __name__ == "__main__":
    sys.exit(main())
