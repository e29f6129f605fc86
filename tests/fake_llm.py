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

Batches, as OpenAI's Files and Batches APIs serve them (``/v1/files``, ``/v1/batches``; all 404 with
``batches=False``, a server without them): upload, create (lines checked: JSON, unique ``custom_id``,
``POST /v1/chat/completions``, at most 50,000 lines and 200 MB), retrieve, list and cancel. A batch is
``validating`` when created, ``in_progress`` from its first retrieve, and finishes at the retrieve after
``batch_polls`` retrieves once ``batch_seconds`` have passed (never while ``batch_hold`` is set). Each line is
answered as a chat request with the same body would be (rules, tool scripts, usage, ``faults`` by attempt of
the distinct body: a faulted line is an error-file line with that status); ``batch_script`` gives the
outcome of the batches created, in order (``{"status": "expired", "done": N}``: the first N lines answered,
the rest ``batch_expired``; ``{"status": "failed"}``); then ``completed``. ``batch_lines`` records every line
submitted (batch id, custom_id, body), ``batches`` and ``files`` the server's state.

Reasoning models, as they answer: ``reasoning`` (text, or a callable given the request body; None: none)
is the model's thinking before its reply, sent as ``message.reasoning_content`` (``reasoning_style="field"``,
as o-series proxies, DeepSeek and vLLM's reasoning parser do) or inline as a leading ``<think>…</think>``
block of the content (``"think"``, as Qwen3 and DeepSeek-R1 served raw do); its words count in
``completion_tokens`` and in ``completion_tokens_details.reasoning_tokens``. With ``enforce_max_tokens`` a
request's ``max_tokens`` (or ``max_completion_tokens``) bounds reasoning plus reply in words, as a real server
bounds tokens: what does not fit is cut, and ``finish_reason`` is ``length`` (a cut inside the reasoning
leaves an unclosed ``<think>`` and no reply). ``served_model`` is the dated name the reply's ``model`` gives
(e.g. ``fake-model-2026-01-15``); None: the requested name. A reply (a rule's, the default's) may also be a
dict ``{"content", "reasoning", "finish_reason", "model"}`` for one reply's own values.

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

Reply = str | dict[str, Any] | Callable[[dict[str, Any]], "str | dict[str, Any]"]
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


def _bounded(content: str, thinking: str | None, body: dict[str, Any]) -> tuple[str, str | None, bool]:
    """(content, reasoning, cut): both within the request's max_tokens in words, reasoning first (a reasoning
    model thinks before it answers); unchanged when the body sets no limit."""
    limit = body.get("max_completion_tokens", body.get("max_tokens"))
    if not isinstance(limit, int) or isinstance(limit, bool):
        return content, thinking, False
    thought = thinking.split() if thinking else []
    if len(thought) >= limit and thought:
        return "", " ".join(thought[:limit]), len(thought) > limit or bool(content.split())
    words = content.split()
    room = limit - len(thought)
    if len(words) <= room:
        return content, thinking, False
    return " ".join(words[:room]), thinking, True


def _error(status: int, message: str, etype: str, headers: dict[str, str] | None = None) -> web.Response:
    payload = {"error": {"message": message, "type": etype, "param": None, "code": str(status)}}
    return web.json_response(payload, status=status, headers=headers)


def _refusal(status: int) -> web.Response:
    message, etype, code = _REFUSALS[status]
    payload = {"error": {"message": message, "type": etype, "param": None, "code": code}}
    return web.json_response(payload, status=status)


BATCH_MAX_LINES = 50_000
BATCH_MAX_BYTES = 200 * 1024**2
_FAULT_STATUS = {"401": 401, "403": 403, "404": 404, "429": 429, "quota": 429, "500": 500, "503": 503,
                 "timeout": 500, "broken": 500, "disconnect": 500}
"""A fault of a batch line: the status its error-file line carries (a batch has no socket to drop)."""


class _Batches:
    """OpenAI's Files and Batches endpoints for FakeLLM (its state lives on the server object)."""

    batches_enabled: bool
    batch_polls: int
    batch_seconds: float
    batch_script: list[dict[str, Any]]
    batch_hold: bool
    files: dict[str, dict[str, Any]]
    batches: dict[str, dict[str, Any]]
    batch_lines: list[tuple[str, str, dict[str, Any]]]
    attempts: dict[str, int]
    faults: list[str]
    fault_only_matching: str | None
    models: set[str] | None
    api_key: str | None
    _lock: threading.Lock

    def completion(self, body: dict[str, Any], key: str, attempt: int) -> dict[str, Any]:
        raise NotImplementedError

    def _batch_refusal(self, request: web.Request) -> web.Response | None:
        if not self.batches_enabled:
            return _error(404, f"Invalid URL ({request.method} {request.path})", "invalid_request_error")
        if self.api_key is not None and request.headers.get("Authorization", "") != f"Bearer {self.api_key}":
            return _refusal(401)
        return None

    def _new_file(self, data: bytes, purpose: str, filename: str) -> dict[str, Any]:
        with self._lock:
            fid = f"file-{len(self.files) + 1:04d}"
            self.files[fid] = {"id": fid, "object": "file", "bytes": len(data), "created_at": int(time.time()),
                               "filename": filename, "purpose": purpose, "status": "processed", "data": data}
        return self.files[fid]

    @staticmethod
    def _file_object(f: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in f.items() if k != "data"}

    async def _file_upload(self, request: web.Request) -> web.Response:
        refused = self._batch_refusal(request)
        if refused is not None:
            return refused
        form = await request.post()
        upload, purpose = form.get("file"), str(form.get("purpose") or "")
        if not isinstance(upload, web.FileField) or purpose not in ("batch", "assistants", "fine-tune"):
            return _error(400, "a file and a purpose are required", "invalid_request_error")
        return web.json_response(self._file_object(self._new_file(upload.file.read(), purpose, upload.filename)))

    def _file(self, request: web.Request) -> dict[str, Any] | web.Response:
        refused = self._batch_refusal(request)
        if refused is not None:
            return refused
        found = self.files.get(request.match_info["id"])
        if found is None:
            return _error(404, f"No such File object: {request.match_info['id']}", "invalid_request_error")
        return found

    async def _file_get(self, request: web.Request) -> web.Response:
        found = self._file(request)
        return found if isinstance(found, web.Response) else web.json_response(self._file_object(found))

    async def _file_content(self, request: web.Request) -> web.Response:
        found = self._file(request)
        return found if isinstance(found, web.Response) else \
            web.Response(body=found["data"], content_type="application/octet-stream")

    async def _file_delete(self, request: web.Request) -> web.Response:
        found = self._file(request)
        if isinstance(found, web.Response):
            return found
        del self.files[found["id"]]
        return web.json_response({"id": found["id"], "object": "file", "deleted": True})

    async def _batch_create(self, request: web.Request) -> web.Response:
        refused = self._batch_refusal(request)
        if refused is not None:
            return refused
        try:
            params = await request.json()
        except ValueError:
            return _error(400, "invalid JSON body", "invalid_request_error")
        source = self.files.get(str(params.get("input_file_id")))
        if source is None:
            return _error(400, f"input_file_id {params.get('input_file_id')!r} is no uploaded file",
                          "invalid_request_error")
        if params.get("endpoint") != "/v1/chat/completions" or params.get("completion_window") != "24h":
            return _error(400, "endpoint must be /v1/chat/completions and completion_window 24h",
                          "invalid_request_error")
        lines, errors = self._read_lines(source["data"])
        now = int(time.time())
        with self._lock:
            bid = f"batch_{len(self.batches) + 1:04d}"
            outcome = self.batch_script.pop(0) if self.batch_script else {"status": "completed"}
            batch = {"id": bid, "object": "batch", "endpoint": params["endpoint"], "errors": None,
                     "input_file_id": source["id"], "completion_window": "24h", "status": "validating",
                     "output_file_id": None, "error_file_id": None, "created_at": now, "in_progress_at": None,
                     "expires_at": now + 86400, "finalizing_at": None, "completed_at": None, "failed_at": None,
                     "expired_at": None, "cancelling_at": None, "cancelled_at": None,
                     "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
                     "metadata": params.get("metadata"), "_lines": lines, "_polls": 0, "_t0": time.monotonic(),
                     "_outcome": {"status": "failed"} if errors else outcome}
            if errors:
                batch["errors"] = {"object": "list", "data": errors}
            self.batches[bid] = batch
            self.batch_lines.extend((bid, line["custom_id"], line["body"]) for line in lines)
        return web.json_response(self._batch_object(batch))

    @staticmethod
    def _read_lines(data: bytes) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The lines of a batch input file, and what is wrong with it (OpenAI's `errors.data`)."""
        lines: list[dict[str, Any]] = []
        errors: list[dict[str, Any]] = []
        seen: set[str] = set()
        if len(data) > BATCH_MAX_BYTES:
            errors.append({"code": "file_too_large", "message": f"{len(data)} bytes > {BATCH_MAX_BYTES}",
                           "line": None})
        for number, raw in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            if not raw.strip():
                continue
            try:
                line = json.loads(raw)
            except ValueError:
                errors.append({"code": "invalid_json_line", "message": "not JSON", "line": number})
                continue
            cid = line.get("custom_id") if isinstance(line, dict) else None
            if not isinstance(cid, str) or cid in seen:
                errors.append({"code": "duplicate_custom_id" if cid in seen else "missing_custom_id",
                               "message": f"custom_id {cid!r}", "line": number})
            elif line.get("method") != "POST" or line.get("url") != "/v1/chat/completions" \
                    or not isinstance(line.get("body"), dict):
                errors.append({"code": "invalid_request", "message": "POST /v1/chat/completions with a body",
                               "line": number})
            else:
                seen.add(cid)
                lines.append(line)
        if len(lines) > BATCH_MAX_LINES:
            errors.append({"code": "too_many_requests", "message": f"{len(lines)} > {BATCH_MAX_LINES}",
                           "line": None})
        return lines, errors

    @staticmethod
    def _batch_object(batch: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in batch.items() if not k.startswith("_")}

    def _batch(self, request: web.Request) -> dict[str, Any] | web.Response:
        refused = self._batch_refusal(request)
        if refused is not None:
            return refused
        found = self.batches.get(request.match_info["id"])
        if found is None:
            return _error(404, f"No batch found with id '{request.match_info['id']}'", "invalid_request_error")
        return found

    async def _batch_get(self, request: web.Request) -> web.Response:
        batch = self._batch(request)
        if isinstance(batch, web.Response):
            return batch
        with self._lock:
            self._advance(batch)
        return web.json_response(self._batch_object(batch))

    async def _batch_cancel(self, request: web.Request) -> web.Response:
        batch = self._batch(request)
        if isinstance(batch, web.Response):
            return batch
        with self._lock:
            if batch["status"] in ("validating", "in_progress", "finalizing"):
                batch["status"], batch["cancelling_at"] = "cancelling", int(time.time())
        return web.json_response(self._batch_object(batch))

    async def _batch_list(self, request: web.Request) -> web.Response:
        refused = self._batch_refusal(request)
        if refused is not None:
            return refused
        limit = int(request.query.get("limit") or 20)
        ids = sorted(self.batches, reverse=True)
        after = request.query.get("after")
        if after in ids:
            ids = ids[ids.index(after) + 1:]
        page = [self._batch_object(self.batches[i]) for i in ids[:limit]]
        return web.json_response({"object": "list", "data": page, "first_id": page[0]["id"] if page else None,
                                  "last_id": page[-1]["id"] if page else None, "has_more": len(ids) > limit})

    def _advance(self, batch: dict[str, Any]) -> None:
        """One retrieve of `batch`: its status moves on (under the lock)."""
        now = int(time.time())
        status = batch["status"]
        if status in ("completed", "failed", "expired", "cancelled"):
            return
        batch["_polls"] += 1
        if status == "cancelling":
            self._finish(batch, {"status": "cancelled", "done": 0})
            return
        if batch["_outcome"]["status"] == "failed":
            batch.update(status="failed", failed_at=now)
            return
        ready = batch["_polls"] >= self.batch_polls and time.monotonic() - batch["_t0"] >= self.batch_seconds
        if self.batch_hold or not ready:
            if status == "validating":
                batch.update(status="in_progress", in_progress_at=now)
            return
        self._finish(batch, batch["_outcome"])

    def _finish(self, batch: dict[str, Any], outcome: dict[str, Any]) -> None:
        """Answer the batch's lines and write its output and error files (under the lock)."""
        status = str(outcome.get("status") or "completed")
        lines: list[dict[str, Any]] = batch["_lines"]
        done = len(lines) if status == "completed" else int(outcome.get("done") or 0)
        output: list[dict[str, Any]] = []
        failed: list[dict[str, Any]] = []
        for i, line in enumerate(lines):
            rid = f"batch_req_{batch['id']}_{i}"
            if i >= done:
                if status == "expired":
                    failed.append({"id": rid, "custom_id": line["custom_id"], "response": None,
                                   "error": {"code": "batch_expired", "message": "This request could not be "
                                             "executed before the completion window expired."}})
                continue
            code, payload = self._line_result(line["body"])
            entry = {"id": rid, "custom_id": line["custom_id"],
                     "response": {"status_code": code, "request_id": rid, "body": payload}, "error": None}
            (output if code == 200 else failed).append(entry)
        batch["request_counts"] = {"total": len(lines), "completed": len(output), "failed": len(failed)}
        for key, entries in (("output_file_id", output), ("error_file_id", failed)):
            if entries:
                data = "".join(json.dumps(e) + "\n" for e in entries).encode()
                fid = f"file-{len(self.files) + 1:04d}"
                self.files[fid] = {"id": fid, "object": "file", "bytes": len(data), "created_at": int(time.time()),
                                   "filename": f"{batch['id']}_{key[:-8]}.jsonl", "purpose": "batch_output",
                                   "status": "processed", "data": data}
                batch[key] = fid
        batch["status"] = status
        batch[f"{status}_at"] = int(time.time())

    def _line_result(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """What a chat request with this body gets (under the lock): 200 and the completion, or an error."""
        key = hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
        attempt = self.attempts.get(key, 0)
        self.attempts[key] = attempt + 1
        if self.models is not None and str(body.get("model")) not in self.models:
            message, etype, code = _REFUSALS[404]
            return 404, {"error": {"message": message, "type": etype, "param": None, "code": code}}
        fault = self.faults[attempt] if attempt < len(self.faults) else None
        if fault and self.fault_only_matching is not None and \
                not re.search(self.fault_only_matching, _match_text(body), re.S):
            fault = None
        if fault is not None:
            status = _FAULT_STATUS[fault]
            return status, {"error": {"message": f"Injected fault {fault} (fake)", "type": "server_error",
                                      "param": None, "code": str(status)}}
        try:
            return 200, self.completion(body, key, attempt)
        except Exception as exc:  # noqa: BLE001 - a buggy test callable: a readable 500 line
            return 500, {"error": {"message": f"reply callable failed: {exc!r}", "type": "server_error",
                                   "param": None, "code": "500"}}


class FakeLLM(_Batches):
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
        batches: bool = True,
        batch_polls: int = 2,
        batch_seconds: float = 0.0,
        batch_script: Sequence[dict[str, Any]] = (),
        reasoning: str | Callable[[dict[str, Any]], str] | None = None,
        reasoning_style: str = "field",
        enforce_max_tokens: bool = False,
        served_model: str | None = None,
    ) -> None:
        bad = [f for f in faults if f not in FAULT_KINDS]
        if bad:
            raise ValueError(f"unknown fault kinds {bad}; expected one of {sorted(FAULT_KINDS)}")
        if reasoning_style not in ("field", "think"):
            raise ValueError(f"reasoning_style must be 'field' or 'think', got {reasoning_style!r}")
        self.rules = list(rules)
        self.reasoning = reasoning
        self.reasoning_style = reasoning_style
        self.enforce_max_tokens = enforce_max_tokens
        self.served_model = served_model
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
        self.batches_enabled = batches
        self.batch_polls = batch_polls
        self.batch_seconds = batch_seconds
        self.batch_script = list(batch_script)
        self.batch_hold = False
        self.files: dict[str, dict[str, Any]] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.batch_lines: list[tuple[str, str, dict[str, Any]]] = []
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
        app.router.add_post("/v1/messages", self._anthropic)
        app.router.add_post("/v1/v1/messages", self._anthropic)
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/models", self._models)
        for prefix in ("/v1", ""):
            app.router.add_post(f"{prefix}/files", self._file_upload)
            app.router.add_get(f"{prefix}/files/{{id}}", self._file_get)
            app.router.add_get(f"{prefix}/files/{{id}}/content", self._file_content)
            app.router.add_delete(f"{prefix}/files/{{id}}", self._file_delete)
            app.router.add_post(f"{prefix}/batches", self._batch_create)
            app.router.add_get(f"{prefix}/batches", self._batch_list)
            app.router.add_get(f"{prefix}/batches/{{id}}", self._batch_get)
            app.router.add_post(f"{prefix}/batches/{{id}}/cancel", self._batch_cancel)
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
            self.batch_lines.clear()

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

    def reply_for(self, body: dict[str, Any]) -> str | dict[str, Any]:
        """The deterministic reply (text, or a dict of one reply's own values) for a request body."""
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
        try:
            return web.json_response(self.completion(body, key, attempt))
        except Exception as exc:  # a buggy test callable should surface as a readable 500
            return _error(500, f"reply callable failed: {exc!r}", "server_error")

    async def _anthropic(self, request: web.Request) -> web.Response:
        """A minimal Anthropic Messages endpoint (what litellm's anthropic provider sends with an `api_base`): the
        same replies as the chat endpoint, reasoning as a `thinking` block when the request enables thinking (or
        `reasoning` is set), `max_tokens` enforced on thinking plus text (`stop_reason` `max_tokens`)."""
        raw = await request.read()
        with self._lock:
            self.count += 1
        try:
            body = json.loads(raw)
        except ValueError as exc:
            return _error(400, f"invalid JSON body: {exc}", "invalid_request_error")
        with self._lock:
            self.requests.append(body)
        if self.api_key is not None and request.headers.get("x-api-key") != self.api_key:
            return web.json_response({"type": "error", "error": {"type": "authentication_error",
                                                                 "message": "invalid x-api-key (fake)"}}, status=401)
        chat = {**body, "messages": [m for m in body.get("messages") or [] if isinstance(m, dict)]}
        reply = self.reply_for(chat)
        spec = reply if isinstance(reply, dict) else {"content": reply}
        thinking = spec.get("reasoning", self.reasoning)
        thinking = thinking(chat) if callable(thinking) else thinking
        if thinking is None and isinstance(body.get("thinking"), dict):
            thinking = "Thinking it over before answering."
        content, thinking, cut = _bounded(str(spec.get("content") or ""), thinking,
                                          body if self.enforce_max_tokens else {})
        blocks: list[dict[str, Any]] = []
        if thinking is not None:
            blocks.append({"type": "thinking", "thinking": thinking, "signature": "fake-signature"})
        if content or not blocks:
            blocks.append({"type": "text", "text": content})
        prompt = _words(json.dumps(body.get("messages")) + json.dumps(body.get("system") or ""))
        output = _words(content) + (len(thinking.split()) if thinking else 0)
        return web.json_response({
            "id": f"msg_fake_{self.count}", "type": "message", "role": "assistant",
            "model": spec.get("model") or self.served_model or body.get("model", self.model), "content": blocks,
            "stop_reason": spec.get("finish_reason") or ("max_tokens" if cut else "end_turn"), "stop_sequence": None,
            "usage": {"input_tokens": prompt, "output_tokens": output}})

    def completion(self, body: dict[str, Any], key: str, attempt: int) -> dict[str, Any]:
        """The chat completion answering `body` (attempt `attempt` of the distinct body `key`)."""
        step = self.step_for(body)
        calls = (step or {}).get("tool_calls")
        reply = dict(step) if step is not None else self.reply_for(body)
        spec = reply if isinstance(reply, dict) else {"content": reply}
        content = str(spec.get("content") or "")
        thinking = spec.get("reasoning", self.reasoning)
        thinking = thinking(body) if callable(thinking) else thinking
        finish = spec.get("finish_reason")
        content, thinking, cut = _bounded(content, thinking, body if self.enforce_max_tokens else {})
        finish = finish or ("length" if cut else "tool_calls" if calls else "stop")
        if thinking is not None and self.reasoning_style == "think":
            content = f"<think>{thinking}" + ("" if cut and not content else "</think>\n") + content
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if thinking is not None and self.reasoning_style == "field":
            message["reasoning_content"] = thinking
        if calls:
            message = {"role": "assistant", "content": content or None, "tool_calls": [
                {"id": f"call_{key[:8]}_{i}", "type": "function",
                 "function": {"name": c["name"], "arguments": c["arguments"] if isinstance(c["arguments"], str)
                              else json.dumps(c["arguments"])}}
                for i, c in enumerate(calls)]}
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        prompt = _words("\n".join(_text_of(m.get("content")) for m in messages))
        completion = _words(content + " " + json.dumps(calls)) if calls else _words(content)
        thought = len(thinking.split()) if thinking else 0
        if thinking is not None and self.reasoning_style == "field":
            completion += thought  # reasoning is billed as output tokens, though not in the content
        usage: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion,
                                 "total_tokens": prompt + completion}
        if thinking is not None:
            usage["completion_tokens_details"] = {"reasoning_tokens": thought}
        usage.update((self.usage(body) if callable(self.usage) else self.usage) or {})
        return {
            "id": f"chatcmpl-fake-{key[:16]}-{attempt}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": spec.get("model") or self.served_model or body.get("model", self.model),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": finish,
                    "logprobs": None,
                }
            ],
            "usage": usage,
        }


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
