"""The one async call layer for the model under test and the judges (litellm_import.py imports litellm).

Every call goes through `Endpoint.complete`: requests in flight per entry that follow the provider's rate
limits (limiter.py), bounded retries with exponential backoff and jitter that honour Retry-After (429s
slow the endpoint instead of using up a request's retries), a per-attempt timeout, the run's budget, the
on-disk response cache (errors are never stored), and accounting (runner/models/accounting.py): a reply costs
litellm's cost of it, or the entry's `pricing`; an unknown price is None, never 0; cache hits cost 0. With `batch`,
through the provider's batch API instead (runner/models/batch.py), at batch prices.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from runner.errors import CallError, EndpointError, repeating_fault
from runner.models import batch_costs, failures
from runner.models.accounting import Stats, money, parse_pricing, priced, response_cost, token_count
from runner.models.batch import Batcher
from runner.models.budget import Budget, worst_case
from runner.models.cache import ResponseCache, request_key
from runner.models.direct_calls import DirectCalls
from runner.models.failures import classify, http_status, retry_after, unreachable
from runner.models.keys import failure_line, key_variables, missing_key, refusal_line
from runner.models.limiter import Limiter
from runner.models.litellm_import import import_litellm as _import_litellm
from runner.models.litellm_import import litellm_ready
from runner.models.prices import in_use as price_file_in_use
from runner.models.reasoning import reasoning_of, reasoning_tokens
from runner.models.sent_params import EPOCH_KEY, ParamsBook, SentParams, unsent
from runner.models.tokens import count_tokens as count_tokens  # re-exported: dry runs and tests count with it
from runner.models.tokens import prices
from runner.models.tool_calls import requested_calls
from runner.types import CURRENT_EPOCH, ModelOutput, Usage, clean_strings, clean_text, note

log = logging.getLogger("runner.calls")

RATE_LIMITED_ATTEMPTS = 50
"""429 replies one request may get before it fails: beyond its retries, which 429s do not use up."""
DEAD_AFTER = 10
"""Calls in a row failed after all their retries (5xx, timeouts, no connection, broken replies) that stop the run
(exit 3) when the endpoint had answered before, instead of failing every sample left: each has retried for ~30 s
with the default backoff, so this is no blip."""



@dataclass
class Endpoint:
    """One litellm model entry (the model under test or one judge) with its own limits and stats."""

    name: str
    model: str
    api_base: str | None = None
    api_key: str | None = None
    concurrency: int = 16
    params: dict[str, Any] = field(default_factory=dict)
    run_params: dict[str, Any] = field(default_factory=dict)
    """The run's `params.<key>=value`, for the model under test only: over the task's and the entry's."""
    timeout: float = 120.0
    max_retries: int = 5
    cache: ResponseCache | None = None
    backoff_base: float = 1.0
    backoff_cap: float = 60.0
    give_up_after: int = 3
    """Calls failed after their retries, with none ever succeeding, before the endpoint stops the run."""
    dead_after: int = DEAD_AFTER
    _failing: int = field(default=0, repr=False)
    """Calls in a row that failed after their retries with a fault of the endpoint (DEAD_AFTER)."""
    origin: str | None = None
    """What serves this entry when its address changes from run to run (the embedded model): used in
    place of api_base in the cache key and the records' fingerprints."""
    pricing: dict[str, float] | None = None
    """`{input_per_mtok: X, output_per_mtok: Y}` (USD per million tokens): overrides litellm's prices."""
    budget: Budget | None = None
    """The run's spending limit, checked before every request sent (cache hits are free)."""
    stats: Stats = field(default_factory=Stats)
    served_models: set[str] = field(default_factory=set)
    adaptive: bool = True
    """`concurrency` is a ceiling and the requests in flight follow the provider's limits (limiter.py)."""
    _limiter: Limiter | None = field(default=None, repr=False)
    _prices: tuple[float, float] | None = field(default=None, repr=False)
    _known: bool | None = field(default=None, repr=False)
    _unusable: str | None = field(default=None, repr=False)
    """Why the endpoint stopped the run (EndpointError): calls that get a slot afterwards send nothing."""
    _direct: DirectCalls = field(default_factory=DirectCalls, repr=False)
    """The request shapes whose calls skip acompletion's per-call set-up (direct_calls.py)."""
    batch: Any = False  # True, False or "auto": through the provider's batch API (runner/models/batch_setup.py)
    batch_size: int = batch_costs.DEFAULT_BATCH_SIZE
    batch_wait: float = batch_costs.DEFAULT_BATCH_WAIT_S
    _batcher: Batcher | None = field(default=None, repr=False)
    drop_params: bool = False
    """Leave out (and record) a param litellm would not send to this model, instead of stopping the run."""
    _sent: ParamsBook = field(default_factory=ParamsBook, repr=False)
    """What is sent for each distinct set of effective params (sent_params.py), decided once each."""

    def __post_init__(self) -> None:
        self._prices = parse_pricing(self.pricing, self.name)
        batch_costs.check_batch_keys(self)

    def describe(self, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Who answers and how, for the records' fingerprints: name, model, address and the effective params
        of a task with these `params` (so a changed run-level param is a changed model)."""
        req = self.identity(self.request([], params=params))
        req.pop("messages")
        return {"name": self.name, **req}

    def effective_params(self, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """What a request for a task with these `params` carries: the entry's, under the task's (what it needs,
        e.g. EVE MCQ's 64 tokens), under the run's (`params.max_tokens=4096` raises every task's)."""
        return {**self.params, **(params or {}), **self.run_params}

    def sent(self, params: Mapping[str, Any] | None = None) -> SentParams:
        """What a request for a task with these `params` really carries (the effective params, less what litellm
        would not send this model, which stops the run unless the entry's `drop_params`): decided once per task,
        before any request (sent_params.py); every consumer (request, fingerprint, results, plan, budget, cache)
        reads this."""
        return self._sent.get(params, self)

    def request(self, messages: list[dict[str, Any]], *, params: Mapping[str, Any] | None = None,
                response_format: dict[str, Any] | None = None,
                tools: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """The full request: everything that determines the reply (the cache key), minus the key."""
        req: dict[str, Any] = {"model": self.model, "api_base": self.api_base, "messages": messages}
        sent = self.sent(params)
        req.update(sent.params)
        epoch = CURRENT_EPOCH.get()
        if epoch is not None:  # each epoch its own request: a seed of its own (and so its own cache entry)
            if sent.seed:
                req["seed"] = int(req["seed"]) + epoch[0] if "seed" in req else epoch[1]
            else:  # a provider without seeds (Anthropic): the epoch still keys the cache, and is not sent
                req[EPOCH_KEY] = epoch[0]
        if response_format is not None and sent.structured:
            req["response_format"] = response_format
        if tools:
            req["tools"] = tools
        return req

    def identity(self, req: dict[str, Any]) -> dict[str, Any]:
        """What decides the reply: the request, with the embedded server's per-run address replaced by
        what it serves (so its cache hits survive a restart)."""
        return {**req, "api_base": self.origin} if self.origin is not None else req

    async def complete(self, messages: list[dict[str, Any]], *, params: dict[str, Any] | None = None,
                       response_format: dict[str, Any] | None = None,
                       tools: list[dict[str, Any]] | None = None) -> ModelOutput:
        """One chat completion (with `tools`, OpenAI-style function tools the model may call); raises
        CallError after the retries, EndpointError if unusable."""
        return await self.send(self.request(messages, params=params, response_format=response_format, tools=tools))

    async def send(self, req: dict[str, Any]) -> ModelOutput:
        """One chat completion of a request made by `request` (the run's preflight changes its max_tokens):
        from the cache, else sent with retries, the budget's reservation and accounting."""
        key = request_key(self.identity(req)) if self.cache is not None else ""
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                pt, ct = token_count(hit.get("prompt_tokens")) or 0, token_count(hit.get("completion_tokens")) or 0
                if self._prices is not None or self.batching:  # (a batch's price needs litellm loaded anyway)
                    self.stats.cached(pt, ct, self.price(pt, ct))
                elif money(hit.get("cost_usd")) is not None:  # litellm's cost of the reply, stored with it
                    self.stats.cached(pt, ct, money(hit.get("cost_usd")), final=True)
                elif "cost_usd" in hit and not price_file_in_use():  # litellm had no price for it: none still
                    self.stats.cached(pt, ct, None, final=True)  # (and a cached re-run needs no litellm)
                else:  # stored before replies kept their cost, or a pricing_file may price it now: valued
                    self.stats.cached(pt, ct, None)  # at today's prices in usage()
                self.served_models.add(hit["model"])
                return ModelOutput(text=hit["text"], model=hit["model"],
                                   finish_reason=hit.get("finish_reason"), reasoning=hit.get("reasoning"),
                                   tool_calls=tuple(hit.get("tool_calls") or ()),
                                   usage=Usage(prompt_tokens=pt, completion_tokens=ct, cost=0.0, cached=True,
                                               reasoning_tokens=token_count(hit.get("reasoning_tokens")) or 0))
        # An agent's turns (requests offering tools) go directly: each waits for the last (docs/batch.md).
        out, litellm_cost = await (self._call_with_retries(req) if self._batcher is None or req.get("tools") else
                                   self._batcher.send(req, key or request_key(self.identity(req))))
        if self.cache is not None:
            self.cache.put(key, {"text": out.text, "model": out.model, "finish_reason": out.finish_reason,
                                 "prompt_tokens": out.usage.prompt_tokens,
                                 "completion_tokens": out.usage.completion_tokens, "cost_usd": litellm_cost,
                                 **({"tool_calls": list(out.tool_calls)} if out.tool_calls else {}),
                                 **({"reasoning": out.reasoning, "reasoning_tokens": out.usage.reasoning_tokens}
                                    if out.reasoning or out.usage.reasoning_tokens else {})})
        return out

    async def _call_with_retries(self, req: dict[str, Any]) -> tuple[ModelOutput, float | None]:
        litellm = await litellm_ready()
        limiter = self.limiter()
        attempts = 1 + max(0, int(self.max_retries))
        attempt = limited = 0
        last: BaseException | None = None
        budget = self.budget if self.budget is not None and self.budget.limited else None
        worst = worst_case(req, self.name, partial(self.price, batch=False),  # sent directly: the direct price
                           lambda: count_tokens(self.model, req["messages"], req.get("tools"))) if budget else 0.0
        held: float | None = None  # the budget's reservation for this request, held through its retries
        # A request keeps its slot through its retries (a failing server gets no more load than the
        # level allows), except after a 429, when it gives the slot back and queues again. It reserves
        # its worst case only once it holds a slot: a request waiting for the budget holds no reservation
        # another needs to go on, so waiting for room can never wait for itself.
        sent_in = await limiter.acquire()
        try:
            while attempt < attempts:
                if self._unusable is not None:  # a call already stopped the run; its cancellation is on the way
                    raise EndpointError(self._unusable)
                if budget is not None and held is None:
                    held = await budget.reserve(worst, self.name)  # BudgetStop: this request is not sent
                self.stats.requests += 1
                try:
                    # A guard in case the client ignores its own timeout; unlike wait_for it runs the call in
                    # this task instead of a new one per attempt.
                    async with asyncio.timeout(self.timeout + 5):
                        resp = await self._direct.complete(litellm, {**unsent(req), "api_key": self.api_key,
                                                                     "timeout": self.timeout, "num_retries": 0,
                                                                     "max_retries": 0})
                    limiter.succeeded(sent_in, (getattr(resp, "_hidden_params", None) or {}).get("additional_headers"))
                    out, litellm_cost = self._output(resp, litellm)
                    if budget is not None and held is not None:
                        budget.settle(held, out.usage.cost, self.name)
                        held = None
                    self.stats.successes += 1
                    self._failing = 0
                    return out, litellm_cost
                except (asyncio.CancelledError, KeyboardInterrupt):
                    raise
                except Exception as exc:  # noqa: BLE001 - classified below, never swallowed silently
                    fault = repeating_fault(exc)
                    if fault is not None:  # litellm or the runner broken as installed: no retry can help
                        raise fault from exc
                    last = exc
                    kind = classify(exc, litellm)
                    if kind == "fatal":
                        self.stats.failures += 1
                        raise self._stop(self._refused(exc)) from None
                    wait = retry_after(exc)
                    if http_status(exc) == 429 and limited < RATE_LIMITED_ATTEMPTS:
                        # Being told to slow down is no failure of this request: the limiter slows the whole
                        # endpoint and waits out Retry-After once for all; the request queues again without
                        # using up its retries.
                        limiter.refused(sent_in, wait)
                        limited += 1
                        self.stats.retries += 1
                        limiter.release()
                        sent_in = -1
                        if budget is not None and held is not None:  # queued again: it reserves again with a slot
                            budget.release(held)
                            held = None
                        await asyncio.sleep(0.0 if wait is not None else self._backoff(limited - 1))
                        sent_in = await limiter.acquire()
                        continue
                    attempt += 1
                    if kind != "retry" or attempt == attempts:
                        break
                    self.stats.retries += 1
                    delay = self._backoff(attempt - 1)
                    if wait is not None:
                        delay = max(min(wait, self.backoff_cap * 2), random.uniform(0.0, 0.1))
                    log.debug("%s: attempt %d failed (%s); retrying in %.2fs", self.name, attempt,
                              type(exc).__name__, delay)
                    await asyncio.sleep(delay)
        finally:
            if budget is not None and held is not None:  # no reply: failed, refused or cancelled
                budget.release(held)
            if sent_in >= 0:
                limiter.release()
        self.stats.failures += 1
        assert last is not None
        self._failing = self._failing + 1 if kind == "retry" else 0  # a 400 is an answer: the endpoint lives
        if self.stats.successes and self._failing >= self.dead_after:
            raise self._stop(f"{self.name} stopped answering: its last {self._failing} calls failed after their "
                             f"retries, after {self.stats.successes} that succeeded; last: {self._describe(last)}; "
                             "finished samples are kept; re-run with the same hydra.run.dir once it answers")
        if self.stats.successes == 0 and unreachable(last, litellm):
            raise self._stop(self._describe(last) + "; is the server running and the address right?")
        if self.stats.successes == 0 and self.stats.failures >= self.give_up_after:
            # Scoring errors for every sample would only hide an endpoint that does not work.
            raise self._stop(f"every call to {self.name} failed ({self.stats.failures} after their "
                             f"retries, none succeeded); last: {self._describe(last)}; check the entry's "
                             "model, api_base and params")
        raise CallError(self._describe(last), attempts=attempt + limited)

    def _stop(self, message: str) -> EndpointError:
        """The error that stops the run, remembered: calls already queued for a slot must not send."""
        self._unusable = message
        return EndpointError(message)

    def _backoff(self, attempt: int) -> float:
        """Exponential backoff with jitter (half to all of the step), capped."""
        return float(min(self.backoff_cap, self.backoff_base * 2.0 ** attempt) * random.uniform(0.5, 1.0))

    def limiter(self) -> Limiter:
        """The endpoint's in-flight limit (made in the running event loop, on first use)."""
        if self._limiter is None:
            self._limiter = Limiter(self.concurrency, adaptive=self.adaptive)
        return self._limiter

    def _describe(self, exc: BaseException) -> str:
        return failure_line(self.name, self.model, self.api_base, exc)

    def _refused(self, exc: BaseException) -> str:
        return refusal_line(self.name, self.model, self.api_base, bool(self.api_key), exc)

    def key_variables(self) -> list[str]:
        """The environment variables litellm reads this entry's key from (empty when it needs none)."""
        return key_variables(self.model, self.api_base)

    def missing_key(self) -> str | None:
        """Before any request: the variable(s) to set when this entry has no key and its provider needs one
        (a variable set to the empty string is no key either)."""
        return None if self.api_key else missing_key(self.model, self.api_base)

    def _output(self, resp: Any, litellm: Any, batch: str = "") -> tuple[ModelOutput, float | None]:
        """The reply, and litellm's cost of it (None: unknown) for the cache; accounted in the stats (`batch`: "owned"
        for a batch's reply at batch prices, "shared" for one another caller asked, as a cache hit). A reply is
        untrusted text: no usable message is MalformedReply (retried), lone surrogates become U+FFFD and impossible
        token counts count 0 with an unknown cost, each with a note in the sample's record."""
        choice = failures.chat_choice(resp)
        content, replaced = clean_text(getattr(choice.message, "content", None) or "")
        # The reasoning never stays in the text: readers and judges see the answer alone.
        text, reasoning = reasoning_of(choice.message, content)
        reasoning, thought = clean_text(reasoning) if reasoning is not None else (None, 0)
        calls = [clean_strings(call) for call in requested_calls(choice.message)]
        served, n = clean_text(str(getattr(resp, "model", None) or self.model))
        if replaced + thought + n + sum(k for _, k in calls):
            note(f"lone surrogates (half of a UTF-16 pair, e.g. a cut emoji) in the reply of {self.name} replaced "
                 "by U+FFFD")
        usage = getattr(resp, "usage", None)
        reported = {k: getattr(usage, k, None) for k in ("prompt_tokens", "completion_tokens")}
        counts = {k: token_count(v) for k, v in reported.items()}
        pt, ct = counts["prompt_tokens"] or 0, counts["completion_tokens"] or 0
        wrong = ", ".join(f"{k}={reported[k]!r}" for k, v in counts.items() if v is None)
        litellm_cost = None if wrong else response_cost(resp, self.model, litellm.completion_cost)
        cost = None if wrong else self.price(pt, ct, batch=bool(batch)) if self._prices is not None or batch else \
            litellm_cost
        if wrong:  # litellm priced those numbers (a negative cost); no number of tokens is known, so no cost is
            note(f"{self.name} reported {wrong}, which no call can have: counted as 0 tokens, the cost as unknown")
            log.warning("%s reported %s: counted as 0 tokens and an unknown cost (a note in the record)",
                        self.name, wrong)
        shared = batch == "shared"
        rt = 0 if wrong else min(reasoning_tokens(usage), ct)  # reasoning is part of the output tokens
        self.stats.cached(pt, ct, cost, final=True) if shared else self.stats.reply(pt, ct, cost, reasoning=rt)
        self.served_models.add(served)
        finish = getattr(choice, "finish_reason", None)
        # A record's usage holds a number (0 for an unknown price); results.json's usage says null.
        return ModelOutput(text=text, model=served, finish_reason=finish if isinstance(finish, str) else None,
                           reasoning=reasoning,
                           usage=Usage(prompt_tokens=pt, completion_tokens=ct, cost=0.0 if shared else cost,
                                       cached=shared, reasoning_tokens=rt),
                           tool_calls=tuple(c for c, _ in calls)), litellm_cost

    @property
    def batching(self) -> bool:
        """Whether this endpoint's requests go in batches (before the run opens them: whether `batch: true`)."""
        return self._batcher is not None or self.batch is True

    def price(self, prompt_tokens: int, completion_tokens: int, *, batch: bool | None = None) -> float | None:
        """What a call with these token counts costs at the entry's prices, else litellm's (None: unknown), at
        batch prices when it goes in a batch (`batch`, else `batching`); decided without a request (for plans,
        budgets, and cache hits stored without their cost)."""
        if self.batching if batch is None else batch:
            return batch_costs.batch_price(self, prompt_tokens, completion_tokens)
        if self._prices is not None:
            return priced(self._prices, prompt_tokens, completion_tokens)
        litellm = _import_litellm()
        try:
            p_in, p_out = litellm.cost_per_token(model=self.model, prompt_tokens=prompt_tokens,
                                                 completion_tokens=completion_tokens)
            return float(p_in) + float(p_out)
        except Exception:  # noqa: BLE001 - litellm has no price for this model (e.g. a local server)
            return None

    def price_known(self) -> bool:
        """Whether this entry's calls have a price (`pricing` is set, or litellm knows the model); no request."""
        if self._known is None:
            self._known = self._prices is not None or prices(self.model) is not None
        return self._known

    def usage(self) -> dict[str, Any]:
        """The results.json counts of this endpoint (runner/models/accounting.py `Stats.to_dict`)."""
        self.stats.settle(self.price)
        limiter = self._limiter
        return {**self.stats.to_dict(), **batch_costs.batch_usage(self),
                "rate_limited": limiter.rate_limited if limiter else 0,
                "concurrency": {"ceiling": int(self.concurrency), "adaptive": self.adaptive,
                                "final": limiter.current if limiter else None,
                                "lowest": int(limiter.lowest) if limiter else None,
                                "peak_in_flight": limiter.peak_in_flight if limiter else 0}}

