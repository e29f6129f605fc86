"""The one async call layer for the model under test and the judges; the only module importing litellm.

Every call goes through `Endpoint.complete`: a concurrency limit per entry, bounded retries with
exponential backoff and jitter that honour Retry-After, a per-attempt timeout, the on-disk response
cache (errors are never stored), and token/cost accounting (cache hits cost 0).
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import threading
from dataclasses import dataclass, field
from typing import Any

from runner.errors import CallError, EndpointError
from runner.models.cache import ResponseCache, request_key
from runner.redact import redact_text
from runner.types import ModelOutput, Usage

log = logging.getLogger("runner.calls")

_import_lock = threading.Lock()
_litellm: Any = None
_prewarm_thread: threading.Thread | None = None


def _import_litellm() -> Any:
    global _litellm
    with _import_lock:
        if _litellm is None:
            # Without this litellm fetches its cost map from the network at import time.
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            import litellm

            # Per-call work the runner does not need: debug banners, logging callbacks, telemetry.
            litellm.suppress_debug_info = True
            litellm.set_verbose = False
            litellm.telemetry = False
            litellm.drop_params = True  # a provider that lacks a param drops it instead of failing
            litellm.callbacks = []
            litellm.success_callback = []
            litellm.failure_callback = []
            litellm.turn_off_message_logging = True
            logging.getLogger("LiteLLM").setLevel(logging.WARNING)
            _litellm = litellm
    return _litellm


def prewarm() -> None:
    """Start importing litellm in a thread so it overlaps with config, data and server start-up."""
    global _prewarm_thread
    if _litellm is None and _prewarm_thread is None:
        _prewarm_thread = threading.Thread(target=_import_litellm, name="litellm-import", daemon=True)
        _prewarm_thread.start()


def _retry_after(exc: BaseException) -> float | None:
    """Seconds the server asked us to wait, from a Retry-After header if the error carries one."""
    for holder in (getattr(exc, "response", None), exc):
        headers = getattr(holder, "headers", None)
        if not headers:
            continue
        try:
            value = headers.get("retry-after") or headers.get("Retry-After")
        except AttributeError:
            continue
        if value is None:
            continue
        try:
            return max(0.0, float(value))
        except (TypeError, ValueError):
            return None  # an HTTP date: fall back to our own backoff
    return None


def _classify(exc: BaseException, litellm: Any) -> str:
    """`retry` for transient failures, `fatal` for endpoint-wide ones, `fail` for this request only."""
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return "retry"
    fatal = (litellm.AuthenticationError, litellm.PermissionDeniedError, litellm.NotFoundError)
    if isinstance(exc, fatal):
        return "fatal"
    if isinstance(exc, (litellm.BadRequestError, litellm.UnprocessableEntityError)):
        # A broken body can surface as a 400-class wrapper with no status; a real 400 is final.
        status = getattr(exc, "status_code", None)
        return "fail" if status in (400, 413, 422) else "retry"
    # RateLimit, InternalServer, ServiceUnavailable, BadGateway, APIConnection, Timeout, APIError
    # (which is what an unparseable body becomes) and anything unexpected: transient, bounded.
    return "retry"


def _unreachable(exc: BaseException, litellm: Any) -> bool:
    """Nothing answered at all (refused, DNS): litellm reports it as APIConnectionError or as a 500."""
    if isinstance(exc, litellm.Timeout):
        return False
    return isinstance(exc, litellm.APIConnectionError) or "Connection error" in str(exc)


@dataclass
class Stats:
    """Accounting for one endpoint over a run."""

    requests: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    retries: int = 0
    failures: int = 0
    successes: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return dict(self.__dict__)


@dataclass
class Endpoint:
    """One litellm model entry (the model under test or one judge) with its own limits and stats."""

    name: str
    model: str
    api_base: str | None = None
    api_key: str | None = None
    concurrency: int = 16
    params: dict[str, Any] = field(default_factory=dict)
    timeout: float = 120.0
    max_retries: int = 5
    cache: ResponseCache | None = None
    backoff_base: float = 1.0
    backoff_cap: float = 60.0
    stats: Stats = field(default_factory=Stats)
    served_models: set[str] = field(default_factory=set)
    _sem: asyncio.Semaphore | None = field(default=None, repr=False)
    _prices: tuple[float, float] | None = field(default=None, repr=False)

    def _semaphore(self) -> asyncio.Semaphore:
        if self._sem is None:
            self._sem = asyncio.Semaphore(max(1, int(self.concurrency)))
        return self._sem

    def request(self, messages: list[dict[str, Any]], *, params: dict[str, Any] | None = None,
                response_format: dict[str, Any] | None = None) -> dict[str, Any]:
        """The full request: everything that determines the reply (the cache key), minus the key."""
        req: dict[str, Any] = {"model": self.model, "api_base": self.api_base, "messages": messages}
        # The task's params are defaults; the entry's own params (the user's choice of model) win.
        req.update(params or {})
        req.update(self.params)
        if response_format is not None:
            req["response_format"] = response_format
        return req

    async def complete(self, messages: list[dict[str, Any]], *, params: dict[str, Any] | None = None,
                       response_format: dict[str, Any] | None = None) -> ModelOutput:
        """One chat completion; raises CallError after the retries, EndpointError if unusable."""
        req = self.request(messages, params=params, response_format=response_format)
        key = request_key(req) if self.cache is not None else ""
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                self.stats.cache_hits += 1
                self.served_models.add(hit["model"])
                return ModelOutput(text=hit["text"], model=hit["model"],
                                   finish_reason=hit.get("finish_reason"),
                                   usage=Usage(prompt_tokens=hit.get("prompt_tokens", 0),
                                               completion_tokens=hit.get("completion_tokens", 0),
                                               cost=0.0, cached=True))
        async with self._semaphore():
            out = await self._call_with_retries(req)
        if self.cache is not None:
            self.cache.put(key, {"text": out.text, "model": out.model, "finish_reason": out.finish_reason,
                                 "prompt_tokens": out.usage.prompt_tokens,
                                 "completion_tokens": out.usage.completion_tokens})
        return out

    async def _call_with_retries(self, req: dict[str, Any]) -> ModelOutput:
        if _prewarm_thread is not None and _litellm is None:
            await asyncio.to_thread(_prewarm_thread.join)
        litellm = _import_litellm()
        attempts = 1 + max(0, int(self.max_retries))
        last: BaseException | None = None
        for attempt in range(attempts):
            self.stats.requests += 1
            try:
                resp = await asyncio.wait_for(
                    litellm.acompletion(**req, api_key=self.api_key, timeout=self.timeout,
                                        num_retries=0, max_retries=0),
                    timeout=self.timeout + 5,  # a guard in case the client ignores its own timeout
                )
                out = self._output(resp)
                self.stats.successes += 1
                return out
            except (asyncio.CancelledError, KeyboardInterrupt):
                raise
            except Exception as exc:  # noqa: BLE001 - classified below, never swallowed silently
                last = exc
                kind = _classify(exc, litellm)
                if kind == "fatal" and self.stats.successes == 0:
                    raise EndpointError(self._describe(exc) + self._hint()) from exc
                if kind != "retry" or attempt == attempts - 1:
                    break
                self.stats.retries += 1
                delay = min(self.backoff_cap, self.backoff_base * 2 ** attempt) * random.uniform(0.5, 1.0)
                wait = _retry_after(exc)
                if wait is not None:
                    delay = max(min(wait, self.backoff_cap * 2), random.uniform(0.0, 0.1))
                log.debug("%s: attempt %d failed (%s); retrying in %.2fs", self.name, attempt + 1,
                          type(exc).__name__, delay)
                await asyncio.sleep(delay)
        self.stats.failures += 1
        assert last is not None
        if self.stats.successes == 0 and _unreachable(last, litellm):
            raise EndpointError(self._describe(last) + "; is the server running and the address right?")
        raise CallError(self._describe(last), attempts=attempt + 1)

    def _describe(self, exc: BaseException) -> str:
        where = self.api_base or "the provider's default endpoint"
        text = " ".join(str(exc).split())[:300]
        return redact_text(f"{self.name} ({self.model} at {where}): {type(exc).__name__}: {text}")

    def _hint(self) -> str:
        if self.api_key is None and self.api_base is None:
            return "; set the provider's API key env var (see conf/model/*.yaml) or pick another model="
        return "; check the model name, api_base and api_key of this entry"

    def _output(self, resp: Any) -> ModelOutput:
        choice = resp.choices[0]
        text = getattr(choice.message, "content", None) or ""
        usage = getattr(resp, "usage", None)
        pt = int(getattr(usage, "prompt_tokens", 0) or 0)
        ct = int(getattr(usage, "completion_tokens", 0) or 0)
        cost = self._cost(pt, ct)
        self.stats.prompt_tokens += pt
        self.stats.completion_tokens += ct
        self.stats.cost += cost
        served = str(getattr(resp, "model", None) or self.model)
        self.served_models.add(served)
        return ModelOutput(text=text, model=served, finish_reason=getattr(choice, "finish_reason", None),
                           usage=Usage(prompt_tokens=pt, completion_tokens=ct, cost=cost))

    def _cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        # Price lookups are slow in litellm; resolve the per-token prices once per endpoint.
        if self._prices is None:
            try:
                p_in, _ = _litellm.cost_per_token(model=self.model, prompt_tokens=1_000_000)
                _, p_out = _litellm.cost_per_token(model=self.model, completion_tokens=1_000_000)
                self._prices = (p_in / 1e6, p_out / 1e6)
            except Exception:  # noqa: BLE001 - unknown models (local servers) have no price
                self._prices = (0.0, 0.0)
        return prompt_tokens * self._prices[0] + completion_tokens * self._prices[1]


def endpoint_from_config(cfg: dict[str, Any], cache: ResponseCache | None) -> Endpoint:
    """Build an Endpoint from a model/judge entry (conf/model/*.yaml keys)."""
    return Endpoint(name=str(cfg["name"]), model=str(cfg["model"]), api_base=cfg.get("api_base"),
                    api_key=cfg.get("api_key"), concurrency=int(cfg.get("concurrency", 16)),
                    params=dict(cfg.get("params") or {}), timeout=float(cfg.get("timeout", 120.0)),
                    max_retries=int(cfg.get("max_retries", 5)), cache=cache)

