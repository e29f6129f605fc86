"""Deterministic OpenAI-compatible fake LLM server on 127.0.0.1 for tests and benchmarks.

Its one responsibility is to answer ``/v1/chat/completions`` over real HTTP with
rule-selected replies, configurable latency and deterministic fault injection.

Reply selection: ``rules`` patterns are searched (re.S) in the text of the LAST
``user`` message (only ``text`` parts of list contents count); if the request has
no user message, the text of all messages joined by newlines is used instead.
The first matching rule wins, else ``default``. Both are read per request, so
they may be swapped on a running server.

Faults: attempt ``i`` (0-based) of a distinct request body (canonical JSON,
sorted keys) fails with ``faults[i]``; later attempts succeed.

Tool calling: ``tool_scripts`` pairs a pattern (searched like ``rules``) with a script, a list of
steps for a request that offers ``tools``. Step ``k`` answers the request that follows ``k`` assistant
turns after the last user message, so the conversation itself says where the script is and replies
stay deterministic. A step is ``{"tool_calls": [{"name", "arguments"}]}`` (arguments a dict, or a string
sent verbatim, malformed or not) or ``{"content": "..."}``; past the end the last step repeats.

Rate limits, as a provider enforces them: with ``max_in_flight`` set, a request beyond that many in
progress gets HTTP 429 with ``Retry-After`` (``retry_after``) and ``x-ratelimit-*`` headers saying no
request remains; every reply carries the limit and what remained when it was admitted. ``refused``
counts those 429s and ``peak_in_flight`` the most requests ever in progress at once.

Hostile replies, for the tests of what the runner makes of them: ``usage`` (a dict, or a callable given
the request body) replaces numbers of the reply's ``usage`` object (negative, absurd, not numbers);
``raw_reply`` (bytes, text, a JSON-able object, or a callable given the request body) is sent verbatim
as a 200 body instead of the chat completion (no ``choices``, ``message: null``, not JSON, not UTF-8).

Credentials and models, as a real provider checks them: with ``api_key`` set, a request whose bearer
token differs gets HTTP 401; with ``models`` set, a request for another model gets HTTP 404.

Library use: ``with FakeLLM(default="B") as srv: ... srv.base_url ...``
CLI use:     ``python tests/fake_llm.py --port 0 --latency 0.2 --default B``
             prints ``READY http://127.0.0.1:PORT/v1`` and serves until SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from aiohttp import web

Reply = str | Callable[[dict[str, Any]], str]
Step = dict[str, Any]
FAULT_KINDS = frozenset({"401", "403", "404", "429", "quota", "500", "503", "timeout", "broken", "disconnect"})
# What a real provider says for each refusal, so the client maps them as it would in production.
_REFUSALS = {
    401: ("Incorrect API key provided (fake)", "invalid_request_error", "invalid_api_key"),
    403: ("You are not allowed to use this model (fake)", "permission_error", "permission_denied"),
    404: ("The model does not exist or you do not have access to it (fake)", "invalid_request_error",
          "model_not_found"),
}


def _text_of(content: Any) -> str:
    """Text of a message content: a string, or the ``text`` parts of a part list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text"
        )
    return ""


def _match_text(body: dict[str, Any]) -> str:
    messages = body.get("messages") or []
    for msg in reversed(messages):
        if isinstance(msg, dict) and msg.get("role") == "user":
            return _text_of(msg.get("content"))
    return "\n".join(_text_of(m.get("content")) for m in messages if isinstance(m, dict))


def _words(text: str) -> int:
    return max(1, len(text.split()))


def _error(status: int, message: str, etype: str, headers: dict[str, str] | None = None) -> web.Response:
    payload = {"error": {"message": message, "type": etype, "param": None, "code": str(status)}}
    return web.json_response(payload, status=status, headers=headers)


def _refusal(status: int) -> web.Response:
    message, etype, code = _REFUSALS[status]
    payload = {"error": {"message": message, "type": etype, "param": None, "code": code}}
    return web.json_response(payload, status=status)


class FakeLLM:
    """An aiohttp server running on its own event loop in a daemon thread."""

    def __init__(
        self,
        rules: Sequence[tuple[str | re.Pattern[str], Reply]] = (),
        default: Reply = "A",
        latency: float = 0.0,
        faults: Sequence[str] = (),
        retry_after: str = "0",
        hang: float = 5.0,
        fault_only_matching: str | None = None,
        model: str = "fake-model",
        port: int = 0,
        api_key: str | None = None,
        models: Sequence[str] | None = None,
        tool_scripts: Sequence[tuple[str | re.Pattern[str], Sequence[Step]]] = (),
        max_in_flight: int | None = None,
        usage: dict[str, Any] | Callable[[dict[str, Any]], dict[str, Any]] | None = None,
        raw_reply: Any = None,
    ) -> None:
        bad = [f for f in faults if f not in FAULT_KINDS]
        if bad:
            raise ValueError(f"unknown fault kinds {bad}; expected one of {sorted(FAULT_KINDS)}")
        self.rules = list(rules)
        self.tool_scripts = list(tool_scripts)
        self.max_in_flight = max_in_flight
        self.in_flight = 0
        self.peak_in_flight = 0
        self.refused = 0
        self.arrivals: list[tuple[float, int]] = []
        """(time.monotonic(), HTTP status) of every chat request as it arrived: 429, or 0 when admitted."""
        self.default = default
        self.usage = usage
        self.raw_reply = raw_reply
        self.latency = latency
        self.faults = list(faults)
        self.retry_after = retry_after
        self.hang = hang
        self.fault_only_matching = fault_only_matching
        self.model = model
        self.api_key = api_key
        self.models = None if models is None else set(models)
        self.requests: list[dict[str, Any]] = []
        self.attempts: dict[str, int] = {}
        self.count = 0
        self.port: int = port
        self._bind_port = port  # kept separately so a stopped server can restart on port 0
        self.base_url: str | None = None
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None

    # ---------------------------------------------------------------- lifecycle
    def start(self) -> str:
        """Bind 127.0.0.1 and return the ``/v1`` base URL once connections are accepted."""
        if self._thread is not None and self.base_url is not None:
            return self.base_url
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self._setup())
            except BaseException as exc:  # surface bind errors in the caller's thread
                failure.append(exc)
                ready.set()
                loop.close()
                return
            ready.set()
            loop.run_forever()
            loop.close()

        self._thread = threading.Thread(target=run, name="fake-llm", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            self._loop = self._thread = None
            raise failure[0]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        return self.base_url

    async def _setup(self) -> None:
        app = web.Application(client_max_size=256 * 1024**2)  # audio parts can be large
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/models", self._models)
        app.router.add_get("/health", self._health)
        app.router.add_get("/stats", self._stats)
        # access_log=None: logging every request would dominate the CPU budget.
        # handler_cancellation: a client that gave up (timeout) cancels its handler, like a
        # real server; short shutdown_timeout: stop() cancels rather than waits for handlers.
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.2, handler_cancellation=True)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self._bind_port, backlog=1024).start()
        self.port = self._runner.addresses[0][1]

    def stop(self) -> None:
        """Shut down (idempotent); cancels in-flight requests rather than waiting for them."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        self._loop = self._thread = None
        if self._runner is not None and loop.is_running():
            fut = asyncio.run_coroutine_threadsafe(self._shutdown(), loop)
            # Best effort: never let teardown hang or mask a test failure.
            with contextlib.suppress(Exception):
                fut.result(timeout=5)
        if not loop.is_closed():
            loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=5)

    async def _shutdown(self) -> None:
        assert self._runner is not None
        await self._runner.cleanup()
        # Handlers orphaned by closed connections are not tracked by aiohttp: cancel them
        # so the loop closes without "Task was destroyed but it is pending" noise.
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=1)

    def __enter__(self) -> FakeLLM:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def reset(self) -> None:
        """Forget recorded requests, the request count and fault attempt counters."""
        with self._lock:
            self.requests.clear()
            self.attempts.clear()
            self.count = 0
            self.refused = 0
            self.peak_in_flight = 0
            self.arrivals.clear()

    # ----------------------------------------------------------------- handlers
    async def _health(self, request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def _stats(self, request: web.Request) -> web.Response:
        # process_time covers the whole process: exact for the CLI, approximate in-thread.
        return web.json_response(
            {"count": self.count, "cpu_seconds": time.process_time(), "thread_cpu_seconds": time.thread_time()}
        )

    async def _models(self, request: web.Request) -> web.Response:
        data = [{"id": self.model, "object": "model", "created": 0, "owned_by": "fake-llm"}]
        return web.json_response({"object": "list", "data": data})

    def reply_for(self, body: dict[str, Any]) -> str:
        """The deterministic reply text for a request body."""
        text = _match_text(body)
        for pattern, reply in list(self.rules):
            if re.search(pattern, text, re.S):
                return reply(body) if callable(reply) else reply
        default = self.default
        return default(body) if callable(default) else default

    def step_for(self, body: dict[str, Any]) -> Step | None:
        """The scripted step answering a request that offers tools; None when no script matches."""
        if not body.get("tools"):
            return None
        text = _match_text(body)
        for pattern, script in list(self.tool_scripts):
            if script and re.search(pattern, text, re.S):
                messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
                last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
                done = sum(1 for m in messages[last_user + 1:] if m.get("role") == "assistant")
                return dict(script[min(done, len(script) - 1)])
        return None

    def _check_access(self, request: web.Request, body: dict[str, Any]) -> web.Response | None:
        if self.api_key is not None:
            auth = request.headers.get("Authorization", "")
            if auth != f"Bearer {self.api_key}":
                return _refusal(401)
        if self.models is not None and str(body.get("model")) not in self.models:
            return _refusal(404)
        return None

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        limit = self.max_in_flight
        with self._lock:
            if limit is not None and self.in_flight >= limit:
                self.refused += 1
                self.count += 1
                refused = True
                self.arrivals.append((time.monotonic(), 429))
            else:
                refused = False
                self.arrivals.append((time.monotonic(), 0))
                self.in_flight += 1
                self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
                remaining = None if limit is None else limit - self.in_flight
        if refused:
            return _error(429, "Rate limit reached for requests (fake)", "rate_limit_error",
                          {"Retry-After": str(self.retry_after), "x-ratelimit-limit-requests": str(limit),
                           "x-ratelimit-remaining-requests": "0"})
        try:
            response = await self._answer(request)
        finally:
            with self._lock:
                self.in_flight -= 1
        if limit is not None and remaining is not None:
            response.headers["x-ratelimit-limit-requests"] = str(limit)
            response.headers["x-ratelimit-remaining-requests"] = str(remaining)
        return response

    async def _answer(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        with self._lock:
            self.count += 1
        try:
            body = json.loads(raw)
            if not isinstance(body, dict):
                raise ValueError("body must be a JSON object")
        except ValueError as exc:
            return _error(400, f"invalid JSON body: {exc}", "invalid_request_error")
        key = hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
        with self._lock:
            self.requests.append(body)
            attempt = self.attempts.get(key, 0)
            self.attempts[key] = attempt + 1
        refused = self._check_access(request, body)
        if refused is not None:
            return refused
        if body.get("stream"):
            return _error(400, "streaming is not supported by the fake LLM server", "invalid_request_error")
        if self.latency > 0:
            await asyncio.sleep(self.latency)

        faults, only = self.faults, self.fault_only_matching
        fault = faults[attempt] if attempt < len(faults) else None
        if fault and only is not None and not re.search(only, _match_text(body), re.S):
            fault = None
        if fault in ("401", "403", "404"):
            return _refusal(int(fault))
        if fault == "quota":  # a 429 that waiting cannot fix, as OpenAI sends it
            payload = {"error": {"message": "You exceeded your current quota (fake)", "type": "insufficient_quota",
                                 "param": None, "code": "insufficient_quota"}}
            return web.json_response(payload, status=429)
        if fault == "429":
            return _error(429, "Rate limit reached (fake)", "rate_limit_error", {"Retry-After": str(self.retry_after)})
        if fault in ("500", "503"):
            return _error(int(fault), f"Injected server error {fault} (fake)", "server_error")
        if fault == "broken":
            return web.Response(status=200, text='{"id": "chatcmpl-broken", "choices": [{"mess',
                                content_type="application/json")
        if fault == "disconnect":
            # abort() drops the socket with no status line; aiohttp stops the handler
            # from writing anything further on the closed transport.
            assert request.transport is not None
            request.transport.abort()
            raise asyncio.CancelledError
        if fault == "timeout":
            await asyncio.sleep(self.hang)

        raw = self.raw_reply(body) if callable(self.raw_reply) else self.raw_reply
        if raw is not None:
            data = raw if isinstance(raw, bytes) else raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) \
                else json.dumps(raw).encode()
            return web.Response(status=200, body=data, content_type="application/json")
        step = self.step_for(body)
        calls = (step or {}).get("tool_calls")
        try:
            content = str(step.get("content") or "") if step is not None else self.reply_for(body)
        except Exception as exc:  # a buggy test callable should surface as a readable 500
            return _error(500, f"reply callable failed: {exc!r}", "server_error")
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if calls:
            message = {"role": "assistant", "content": content or None, "tool_calls": [
                {"id": f"call_{key[:8]}_{i}", "type": "function",
                 "function": {"name": c["name"], "arguments": c["arguments"] if isinstance(c["arguments"], str)
                              else json.dumps(c["arguments"])}}
                for i, c in enumerate(calls)]}
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        prompt = _words("\n".join(_text_of(m.get("content")) for m in messages))
        completion = _words(content + " " + json.dumps(calls)) if calls else _words(content)
        usage: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion,
                                 "total_tokens": prompt + completion}
        usage.update((self.usage(body) if callable(self.usage) else self.usage) or {})
        return web.json_response(
            {
                "id": f"chatcmpl-fake-{key[:16]}-{attempt}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", self.model),
                "choices": [
                    {
                        "index": 0,
                        "message": message,
                        "finish_reason": "tool_calls" if calls else "stop",
                        "logprobs": None,
                    }
                ],
                "usage": usage,
            }
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--default", default="A")
    parser.add_argument("--faults", default="", help="comma-separated kinds, e.g. 429,500")
    parser.add_argument("--retry-after", default="0")
    parser.add_argument("--hang", type=float, default=5.0)
    parser.add_argument("--fault-only-matching", default=None)
    parser.add_argument("--rule", nargs=2, action="append", default=[], metavar=("PATTERN", "REPLY"))
    parser.add_argument("--model", default="fake-model")
    parser.add_argument("--api-key", default=None, help="answer 401 to any other bearer token")
    args = parser.parse_args(argv)

    # Block the signals before the server thread exists so only sigwait() sees them.
    sigs = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
    srv = FakeLLM(
        rules=[tuple(r) for r in args.rule],
        default=args.default,
        latency=args.latency,
        faults=[f for f in args.faults.split(",") if f],
        retry_after=args.retry_after,
        hang=args.hang,
        fault_only_matching=args.fault_only_matching,
        model=args.model,
        port=args.port,
        api_key=args.api_key,
    )
    print(f"READY {srv.start()}", flush=True)
    signal.sigwait(sigs)
    srv.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
