"""Wall time and refusals against a provider that limits requests in flight: adaptive versus fixed.

    .venv/bin/python bench/bench_rate_limits.py            # N=160 calls, ceiling 64, limit 8, latency 0.1 s

The fake server (tests/fake_llm.py, in this process's thread) answers a request beyond `--limit` in flight
with HTTP 429 (Retry-After `--retry-after`, x-ratelimit-remaining-requests: 0). Each mode sends N calls
through `Endpoint.complete` with `concurrency` = `--ceiling`; the figure is the median of `--repeat` runs,
with the machine's load average. Ideal wall time: ceil(N / limit) * latency.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from fake_llm import FakeLLM  # noqa: E402

from runner.models.litellm_model import Endpoint  # noqa: E402


async def one_run(base_url: str, n: int, ceiling: int, adaptive: bool) -> tuple[float, Endpoint]:
    endpoint = Endpoint(name="bench", model="openai/fake-model", api_base=base_url, api_key="k",
                        concurrency=ceiling, adaptive=adaptive, max_retries=5)
    t0 = time.perf_counter()
    await asyncio.gather(*(endpoint.complete([{"role": "user", "content": f"q{i}"}]) for i in range(n)))
    return time.perf_counter() - t0, endpoint


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=160)
    parser.add_argument("--ceiling", type=int, default=64)
    parser.add_argument("--limit", type=int, default=8)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--retry-after", default="0")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    report: dict[str, Any] = {"n": args.n, "ceiling": args.ceiling, "limit": args.limit, "latency_s": args.latency,
                              "retry_after": args.retry_after,
                              "ideal_s": math.ceil(args.n / args.limit) * args.latency,
                              "load_average": os.getloadavg()}
    with FakeLLM(default="A", latency=args.latency, max_in_flight=args.limit, retry_after=args.retry_after) as srv:
        asyncio.run(one_run(srv.base_url, 4, 4, False))  # import litellm and warm the connection pool
        for mode, adaptive in (("adaptive", True), ("fixed", False)):
            walls, refused, failed, final = [], [], [], []
            for _ in range(args.repeat):
                srv.reset()
                wall, endpoint = asyncio.run(one_run(srv.base_url, args.n, args.ceiling, adaptive))
                walls.append(wall)
                refused.append(srv.refused)
                failed.append(endpoint.stats.failures)
                final.append(endpoint.usage()["concurrency"]["final"])
            report[mode] = {"wall_s": round(statistics.median(walls), 3), "refused": statistics.median(refused),
                            "failed_calls": max(failed), "final_level": statistics.median(final),
                            "runs": [round(w, 3) for w in walls]}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
