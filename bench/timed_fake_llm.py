"""`tests/fake_llm.py` run as its own process, with exact request-phase timestamps in `/stats`.

Same CLI and behaviour as `python tests/fake_llm.py ...` (it calls that module's `main`); the only
difference is that `/stats` also reports, on the system-wide CLOCK_MONOTONIC (so a benchmark in another
process can compare them with its own `time.monotonic()`):

* ``first_request``: when the first chat request entered the handler (body read),
* ``last_reply``: when the last chat handler returned its response (aiohttp writes it right after),
* ``in_flight_max``: the highest number of chat requests being handled at once,
* ``connections``: distinct client connections (transports) that sent chat requests.

``GET /stats?timeline=1`` returns every arrival and reply time instead.

Extra option ``--jitter J`` (0..1, default 0): each request waits uniform(L*(1-J), L*(1+J)) instead of
exactly L (same mean). Real servers never answer in exactly L; a constant L lines all replies of a
wave up in one burst, which is the worst case for a single-threaded client.

``POST /stats/reset`` is not added: the benchmark starts a fresh server for every measured run.
This wraps the handler in-process rather than proxying, so it adds no network hop and ~1 µs per request.
"""

from __future__ import annotations

import asyncio
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import fake_llm  # noqa: E402
from aiohttp import web  # noqa: E402


class TimedFakeLLM(fake_llm.FakeLLM):
    """FakeLLM recording first-request / last-reply times and peak concurrency."""

    jitter = 0.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.mean_latency = self.latency
        if self.jitter > 0:
            self.latency = 0.0  # this class sleeps instead
        self._rng = random.Random(0)
        self.first_request: float | None = None
        self.last_reply: float | None = None
        self.in_flight = 0
        self.in_flight_max = 0
        self.connections: set[Any] = set()  # the transports themselves, so ids are never reused
        self.arrivals: list[float] = []
        self.replies: list[float] = []

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        now = time.monotonic()
        if self.first_request is None:
            self.first_request = now
        self.arrivals.append(now)
        self.in_flight += 1  # handlers run on the one server loop: no lock needed
        self.connections.add(request.transport)
        self.in_flight_max = max(self.in_flight_max, self.in_flight)
        try:
            if self.jitter > 0 and self.mean_latency > 0:
                j = self.jitter
                await asyncio.sleep(self._rng.uniform(self.mean_latency * (1 - j), self.mean_latency * (1 + j)))
            return await super()._chat(request)
        finally:
            self.in_flight -= 1
            self.last_reply = time.monotonic()
            self.replies.append(self.last_reply)

    async def _stats(self, request: web.Request) -> web.Response:
        if request.query.get("timeline"):
            return web.json_response({"arrivals": self.arrivals, "replies": self.replies})
        return web.json_response({
            "count": self.count, "cpu_seconds": time.process_time(), "thread_cpu_seconds": time.thread_time(),
            "first_request": self.first_request, "last_reply": self.last_reply,
            "in_flight_max": self.in_flight_max, "connections": len(self.connections),
            "monotonic_now": time.monotonic(),
        })


if __name__ == "__main__":
    argv = sys.argv[1:]
    if "--jitter" in argv:
        i = argv.index("--jitter")
        TimedFakeLLM.jitter = float(argv[i + 1])
        del argv[i:i + 2]
    fake_llm.FakeLLM = TimedFakeLLM  # main() looks the class up at call time
    sys.exit(fake_llm.main(argv))
