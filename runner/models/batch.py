"""One endpoint's requests sent through its provider's batch API (OpenAI's Files and Batches protocol, through
litellm): collected into batches, submitted, polled, and each reply handed back as a direct call's would be.

A request waits in the open batch until it holds `batch_size` requests (or MAX_BYTES of input) or `batch_wait`
seconds have passed since its first; then the batch's input file is uploaded, written down in the run dir's
journal (runner/models/batch_journal.py) and created. Each line's custom_id is the request's cache key, so a
request asked twice in a run is sent once, and a restarted run finds the batch that already holds it: it polls
that batch instead of submitting the request again. Polls back off from POLL_FIRST_S to POLL_MAX_S, with jitter.
A line the provider answers with an error is classified as a direct call's would be: 429, 5xx, and lines left
unanswered by an expired or failed batch go into a later batch until the entry's `max_retries` are used up;
400/413/422 fail that request; 401/403/404 stop the run.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from runner.errors import CallError, EndpointError
from runner.models.batch_journal import TERMINAL, Entry, Journal, counts_of, first_error, result_lines, track
from runner.models.budget import worst_case
from runner.models.failures import classify
from runner.models.sent_params import unsent
from runner.models.tokens import count_tokens
from runner.types import CURRENT_SAMPLE, ModelOutput

if TYPE_CHECKING:
    from runner.models.litellm_model import Endpoint

log = logging.getLogger("runner.calls")

MAX_LINES = 50_000
"""OpenAI's most requests in one batch."""
MAX_BYTES = 190 * 1024**2
"""Input bytes one batch file may hold: OpenAI allows 200 MB, less a margin for the multipart upload."""
POLL_MAX_S = float(os.environ.get("RUNNER_BATCH_POLL_MAX_S") or 60.0)
"""The longest wait between two polls of a batch (`RUNNER_BATCH_POLL_MAX_S`; tests poll faster)."""
POLL_FIRST_S = min(2.0, POLL_MAX_S)
"""The wait before a new batch's first poll; each next wait is half as long again, up to POLL_MAX_S."""
POLL_FAILURES = 10
"""Polls of one batch in a row that fail (no answer, 5xx) before the run stops (exit 3); its batches go on at
the provider and a re-run polls them again."""


class _Item:
    """One distinct request (its custom_id is its cache key) and the callers waiting for its reply."""

    __slots__ = ("attempts", "body", "future", "key", "line", "sample")

    def __init__(self, key: str, body: dict[str, Any], sample: list[str]) -> None:
        self.key, self.body, self.sample, self.attempts = key, body, sample, 0
        self.future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.line = (json.dumps({"custom_id": key, "method": "POST", "url": "/v1/chat/completions", "body": body},
                                ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


class Batcher:
    """The batches of one endpoint in this run (attached by runner/models/batch_setup.py `open_batches`)."""

    def __init__(self, endpoint: Endpoint, journal: Journal, litellm: Any, provider: str) -> None:
        self.endpoint, self.journal, self.litellm, self.provider = endpoint, journal, litellm, provider
        self.size = max(1, min(int(endpoint.batch_size), MAX_LINES))
        self._open: dict[str, _Item] = {}
        self._open_bytes = 0
        self._timer: asyncio.TimerHandle | None = None
        self._waiting: dict[str, _Item] = {}
        """Every request not answered yet: open, submitted, or in a batch of an earlier invocation."""
        self._earlier: dict[str, Entry] = {}
        for entry in journal.entries:  # later batches win: a request retried after an expired batch
            if entry.endpoint == endpoint.name:
                self._earlier.update(dict.fromkeys(entry.custom_ids, entry))
        self._members: dict[str, dict[str, _Item]] = {}
        """Per batch (by input file id): the requests of this invocation waiting for it."""
        self._results: dict[str, tuple[Any, dict[str, dict[str, Any]]]] = {}
        """Finished batches' status and lines, for requests that find their batch finished."""
        self._tasks: set[asyncio.Task[None]] = set()
        self.created = 0
        self.lines = 0

    # ------------------------------------------------------------------ asking
    async def send(self, req: dict[str, Any], key: str) -> tuple[ModelOutput, float | None]:
        """One request through a batch, as `Endpoint.send` sends one directly: its worst case (at batch prices)
        reserved from the budget while it waits, its reply accounted (a shared one as a cache hit)."""
        e = self.endpoint
        if e._unusable is not None:  # the run is stopping: nothing more goes into a batch
            raise EndpointError(e._unusable)
        budget = e.budget if e.budget is not None and e.budget.limited else None
        held = None
        if budget is not None:
            worst = worst_case(req, e.name, e.price, lambda: count_tokens(e.model, req["messages"], req.get("tools")))
            held = await budget.reserve(worst, e.name)  # BudgetStop: not sent
        try:
            resp, owner = await self.ask(req, key)
            out, litellm_cost = e._output(resp, self.litellm, batch="owned" if owner else "shared")
        except BaseException:
            if budget is not None and held is not None:
                budget.release(held)
            raise
        if budget is not None and held is not None:
            budget.settle(held, out.usage.cost, e.name) if owner else budget.release(held)
        if owner:
            e.stats.successes += 1
            e._failing = 0
        return out, litellm_cost

    async def ask(self, req: dict[str, Any], key: str) -> tuple[Any, bool]:
        """The provider's reply to `req` (a litellm ModelResponse) and whether this caller owns it (False: the
        same request was already waiting, and the reply is shared, like a cache hit)."""
        item = self._waiting.get(key)
        owner = item is None
        if item is None:
            sample = CURRENT_SAMPLE.get()
            item = _Item(key, self.body(req), list(sample) if sample else [])
            self._waiting[key] = item
            item.future.add_done_callback(lambda _: self._waiting.pop(key, None))
            entry = self._earlier.get(key)
            if entry is not None:
                self._join(entry, item)
            else:
                self._enqueue(item)
        # Shielded: a sample cancelled (Ctrl-C) must not cancel a reply others wait for.
        body = await asyncio.shield(item.future)
        return self.response(body), owner

    def body(self, req: dict[str, Any]) -> dict[str, Any]:
        """The body litellm would send for `req` to this provider (its parameter mapping and transformation)."""
        litellm = self.litellm
        model, provider, _, _ = litellm.get_llm_provider(req["model"], api_base=req.get("api_base"))
        params = {k: v for k, v in unsent(req).items() if k not in ("model", "api_base", "messages")}
        optional = litellm.get_optional_params(model=model, custom_llm_provider=provider, **params)
        config = litellm.ProviderConfigManager.get_provider_chat_config(model=model,
                                                                         provider=litellm.LlmProviders(provider))
        body: dict[str, Any] = config.transform_request(model=model, messages=req["messages"],
                                                        optional_params=dict(optional), litellm_params={},
                                                        headers={})
        body.update(body.pop("extra_body", None) or {})  # the HTTP client merges it into the body it sends
        if not body.get("stream"):  # as litellm's HTTP handler sends it: no `stream: false` (a batch never streams)
            body.pop("stream", None)
        return body

    def response(self, body: dict[str, Any]) -> Any:
        """A reply line's body as the ModelResponse a direct call returns."""
        from litellm.litellm_core_utils.llm_response_utils.convert_dict_to_response import (
            convert_to_model_response_object,
        )

        return convert_to_model_response_object(response_object=body,
                                                model_response_object=self.litellm.ModelResponse())

    def _enqueue(self, item: _Item) -> None:
        if self._open and (len(self._open) >= self.size or self._open_bytes + len(item.line) > MAX_BYTES):
            self._flush()
        self._open[item.key] = item
        self._open_bytes += len(item.line)
        if len(self._open) >= self.size:
            self._flush()
        elif self._timer is None:
            wait = max(0.0, float(self.endpoint.batch_wait))
            self._timer = asyncio.get_running_loop().call_later(wait, self._flush)

    def _flush(self) -> None:
        """Submit the open batch (full, or its wait is over)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        items, self._open, self._open_bytes = list(self._open.values()), {}, 0
        if items:
            self._spawn(self._submit(items), lambda: items)

    def _spawn(self, work: Any, waiting: Callable[[], list[_Item]]) -> None:
        """Run `work` in the background; whatever it raises fails the requests that wait for it."""
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)

        def done(t: asyncio.Task[None]) -> None:
            self._tasks.discard(t)
            exc = None if t.cancelled() else t.exception()
            if exc is None:  # finished: every request of it was answered, failed or moved to a later batch
                return
            for item in waiting():
                if not item.future.done():
                    item.future.set_exception(exc)
        task.add_done_callback(done)

    # -------------------------------------------------------------- submitting
    async def _submit(self, items: list[_Item]) -> None:
        e = self.endpoint
        data = b"".join(i.line for i in items)
        uploaded = await self._api("upload its batch file", self.litellm.acreate_file,
                                   file=(f"runner-{e.name}.jsonl", data, "application/jsonl"), purpose="batch")
        entry = self.journal.submitted(e.name, str(uploaded.id), [i.key for i in items], [i.sample for i in items])
        self._members[entry.file_id] = {i.key: i for i in items}
        for item in items:
            self._earlier[item.key] = entry
            e.stats.requests += 1
        self.lines += len(items)
        batch = await self._create(entry)
        self.created += 1
        log.info("%s: batch %s submitted with %d request(s)", e.name, batch.id, len(items))
        await self._poll(entry, first=POLL_FIRST_S)

    async def _create(self, entry: Entry) -> Any:
        """Create the batch of an uploaded file. A create that may have reached the provider (a timeout, a
        dropped connection) is looked up by its file before it is tried again: never two batches of one file."""
        attempts = 1 + max(0, int(self.endpoint.max_retries))
        for attempt in range(attempts):
            if attempt:
                found = await self._find(entry.file_id)
                if found is not None:
                    self.journal.created(entry, str(found.id), str(found.status))
                    return found
            try:
                batch = await self._api("create its batch", self.litellm.acreate_batch, tries=1,
                                        completion_window="24h", endpoint="/v1/chat/completions",
                                        input_file_id=entry.file_id, metadata={"runner": self.endpoint.name})
            except CallError:
                if attempt == attempts - 1:
                    raise
                await asyncio.sleep(self.endpoint._backoff(attempt))
                continue
            self.journal.created(entry, str(batch.id), str(batch.status))
            return batch
        raise AssertionError("unreachable")

    async def _find(self, file_id: str) -> Any:
        """The provider's batch made from `file_id`, among its latest 1,000; None when there is none."""
        after = None
        for _ in range(10):
            page = await self._api("list its batches", self.litellm.alist_batches, limit=100,
                                   **({"after": after} if after else {}))
            for batch in page.data:
                if batch.input_file_id == file_id:
                    return batch
            if not page.has_more or not page.data:
                return None
            after = page.data[-1].id
        return None

    async def _api(self, what: str, call: Callable[..., Any], *, tries: int | None = None, **kwargs: Any) -> Any:
        """One call of litellm's batch API for this endpoint, with the entry's retries on transient failures;
        401/403/404 stop the run (EndpointError); anything else left is a CallError."""
        e = self.endpoint
        attempts = tries or 1 + max(0, int(e.max_retries))
        last: BaseException | None = None
        for attempt in range(attempts):
            try:
                return await call(custom_llm_provider=self.provider, api_base=e.api_base, api_key=e.api_key,
                                  timeout=e.timeout, max_retries=0, **kwargs)
            except (asyncio.CancelledError, KeyboardInterrupt):
                raise
            except Exception as exc:  # noqa: BLE001 - classified below
                last = exc
                kind = classify(exc, self.litellm)
                if kind == "fatal":
                    raise e._stop(e._refused(exc) + f" (the batch API, to {what})") from None
                if kind != "retry" or attempt == attempts - 1:
                    break
                await asyncio.sleep(e._backoff(attempt))
        assert last is not None
        raise CallError(f"{e._describe(last)} (the batch API, to {what})", attempts=attempts)

    # ----------------------------------------------------------------- polling
    def _join(self, entry: Entry, item: _Item) -> None:
        """A request already in a batch (of this invocation or an earlier one): wait for that batch."""
        finished = self._results.get(entry.file_id)
        if finished is not None:
            self._settle(item, finished[1].get(item.key), finished[0])
            return
        members = self._members.get(entry.file_id)
        if members is None:  # a batch of an earlier invocation: polled from now on
            members = self._members[entry.file_id] = {}
            self._spawn(self._resume(entry), lambda: list(members.values()))
        members[item.key] = item

    async def _resume(self, entry: Entry) -> None:
        if entry.batch_id is None:  # stopped between its upload and its creation: created or not?
            found = await self._find(entry.file_id)
            if found is None:
                log.info("%s: the batch of file %s was never created: its requests go into a new batch",
                         self.endpoint.name, entry.file_id)
                for item in self._members.pop(entry.file_id, {}).values():
                    self._enqueue(item)
                return
            self.journal.created(entry, str(found.id), str(found.status))
        log.info("%s: polling batch %s again (%s when last seen)", self.endpoint.name, entry.batch_id, entry.status)
        await self._poll(entry, first=0.0)

    async def _poll(self, entry: Entry, first: float) -> None:
        """Poll a batch until it finishes, then hand its lines to the requests waiting for them."""
        e = self.endpoint
        delay, failures, last = first, 0, None
        items = list(self._members.get(entry.file_id, {}).values())
        try:
            while True:
                await asyncio.sleep(delay * random.uniform(0.5, 1.0))
                delay = min(max(delay * 1.5, POLL_FIRST_S), POLL_MAX_S)
                try:
                    batch = await self._api("poll its batch", self.litellm.aretrieve_batch, tries=1,
                                            batch_id=entry.batch_id)
                except CallError as exc:
                    failures += 1
                    if failures >= POLL_FAILURES:
                        raise e._stop(f"{exc}; {failures} polls in a row failed; the batch goes on at the provider: "
                                      "re-run with the same hydra.run.dir to poll it again") from None
                    continue
                failures = 0
                counts = counts_of(batch)
                status = str(batch.status)
                if (status, counts) != last:
                    last = (status, counts)
                    log.info("%s: batch %s %s (%d/%d done, %d failed)", e.name, entry.batch_id, status,
                             counts.get("completed", 0), counts.get("total", 0), counts.get("failed", 0))
                track(str(entry.batch_id), status, counts)
                self.journal.status(entry, status, counts)
                if status in TERMINAL:
                    break
            lines = {}
            for file_id in (batch.output_file_id, batch.error_file_id):
                if file_id:
                    content = await self._api("download its results", self.litellm.afile_content, file_id=file_id)
                    lines.update(result_lines(content.content))
            self._results[entry.file_id] = (batch, lines)
            for item in self._members.pop(entry.file_id, {}).values():
                self._settle(item, lines.get(item.key), batch)
            self.journal.finished(entry)
        except BaseException as exc:
            for item in [*items, *self._members.pop(entry.file_id, {}).values()]:
                if not item.future.done() and not isinstance(exc, asyncio.CancelledError):
                    item.future.set_exception(exc)
            raise

    def _settle(self, item: _Item, line: dict[str, Any] | None, batch: Any) -> None:
        """Hand a finished batch's line to its request: the reply, a retry in a later batch, or its failure."""
        e = self.endpoint
        if item.future.done():
            return
        response = (line or {}).get("response") or {}
        status = response.get("status_code") if isinstance(response, dict) else None
        body = response.get("body") if isinstance(response, dict) else None
        if status == 200 and isinstance(body, dict):
            item.future.set_result(body)
            return
        error = (body or {}).get("error") if isinstance(body, dict) else None
        error = error or (line or {}).get("error") or first_error(batch) or {}
        text = f"{error.get('code') or status or batch.status}: {error.get('message') or 'no reply'}" \
            if isinstance(error, dict) else str(error)
        where = f"{e.name} ({e.model}), batch {batch.id} ({batch.status})"
        if status in (401, 403, 404):
            item.future.set_exception(e._stop(f"{where}: HTTP {status} for a request ({text}); check the entry's "
                                              "model, api_base and key; not retried, the run stops"))
            return
        if status in (400, 413, 422) or (line is None and batch.status == "cancelled"):
            e.stats.failures += 1
            what = f"HTTP {status}" if status else "the batch was cancelled at the provider before it ran"
            item.future.set_exception(CallError(f"{where}: {what}: {text}", attempts=item.attempts + 1))
            return
        item.attempts += 1
        if item.attempts > max(0, int(e.max_retries)):
            e.stats.failures += 1
            item.future.set_exception(CallError(f"{where}: {text}", attempts=item.attempts))
            return
        e.stats.retries += 1
        log.debug("%s: %s; into the next batch", where, text)
        self._enqueue(item)

    async def close(self) -> None:
        """Stop the polling of this invocation (the batches go on at the provider; the journal keeps them)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

