"""Which endpoints send through their provider's batch API (`batch: true|false|auto` on a model or judge entry),
decided before any request, and what a batched call costs.

`batch: true` on an endpoint whose provider has no batch API through litellm stops the run before any
request (ConfigError, exit 2), and so does an OpenAI-compatible server that answers no `/v1/batches` (a probe:
one GET listing at most one batch; EndpointError, exit 3); `batch: auto` sends that endpoint's requests
directly instead, saying so. Batches go through OpenAI's Files and Batches protocol, which litellm speaks for
its "openai" provider (OpenAI, and any `openai/...` model at an `api_base`) and "hosted_vllm"; litellm 1.82's
other batch paths (Azure, Vertex, Bedrock: each its own input format and storage; Anthropic: retrieval only)
are not used.
"""

from __future__ import annotations

import json
import logging
import os
import urllib.error
import urllib.request
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.errors import ConfigError, EndpointError
from runner.models.batch import MAX_LINES, Batcher
from runner.models.batch_costs import batch_prices
from runner.models.batch_journal import Journal, forget
from runner.models.litellm_import import import_litellm

if TYPE_CHECKING:
    from runner.models.litellm_model import Endpoint

log = logging.getLogger("runner")

BATCH_PROVIDERS = frozenset({"openai", "hosted_vllm"})
"""litellm providers whose batches go through OpenAI's Files and Batches protocol."""
_KEY_VARIABLES = {"openai": "OPENAI_API_KEY", "hosted_vllm": "HOSTED_VLLM_API_KEY"}


def provider_problem(endpoint: Endpoint, litellm: Any) -> tuple[str, str | None]:
    """The endpoint's litellm provider, and why its requests cannot go in batches (None: they can)."""
    if (endpoint.origin or "").startswith("embedded:"):
        return "", "the embedded demo model's server has no batch API"
    try:
        _, provider, _, _ = litellm.get_llm_provider(endpoint.model, api_base=endpoint.api_base)
    except Exception:  # noqa: BLE001 - an unknown provider: no batch API either
        return "", f"litellm knows no provider for {endpoint.model}"
    if provider not in BATCH_PROVIDERS:
        return provider, (f"its provider ({provider}) has no batch API the runner can use through litellm (OpenAI's "
                          "Files and Batches protocol: openai/..., OpenAI-compatible servers, hosted_vllm/...)")
    return provider, None


def probe(endpoint: Endpoint, provider: str) -> str | None:
    """Ask the endpoint's server for its latest batch (GET /batches?limit=1, which costs nothing): None when it
    answers, else why not. A refused key or no server at all is an EndpointError (exit 3) in any mode."""
    if endpoint.api_base is None:
        return None  # OpenAI itself: it has the API
    url = endpoint.api_base.rstrip("/") + "/batches?limit=1"
    key = endpoint.api_key or os.environ.get(_KEY_VARIABLES.get(provider, ""), "")
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"} if key else {})
    try:
        with urllib.request.urlopen(request, timeout=min(float(endpoint.timeout), 30.0)) as reply:  # noqa: S310
            json.loads(reply.read() or b"{}")
        return None
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403):
            raise EndpointError(f"{endpoint.name}: HTTP {exc.code} from {endpoint.api_base}/batches (the key was "
                                "refused); check the entry's api_key; no request was sent") from None
        return f"the server at {endpoint.api_base} has no batch API (HTTP {exc.code} for GET /batches)"
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise EndpointError(f"{endpoint.name}: nothing usable answers at {endpoint.api_base} ({reason}); is the "
                            "server running and the address right? no request was sent") from None


def open_batches(endpoints: Iterable[Endpoint], run_dir: Path) -> list[Endpoint]:
    """Before any request: decide which `endpoints` send in batches and give each its Batcher (the run dir's
    journal, `batches.jsonl`, read back so a resumed run polls its batches); returns them. An endpoint with
    `batch: true` that cannot is refused here, before anything is sent; one with `batch: auto` goes direct."""
    forget()
    wanted = list({id(e): e for e in endpoints if e.batch}.values())
    if not wanted:
        return []
    litellm = import_litellm()
    for name in ("httpx", "httpx2", "openai"):  # the SDK litellm's batch calls use logs every HTTP request
        logging.getLogger(name).setLevel(logging.WARNING)
    journal: Journal | None = None
    chosen = []
    for endpoint in wanted:
        provider, problem = provider_problem(endpoint, litellm)
        static = problem is not None
        if problem is None:
            problem = probe(endpoint, provider)
        if problem is not None:
            if endpoint.batch == "auto":
                log.info("%s: batch: auto, but %s: its requests are sent directly", endpoint.name, problem)
                continue
            line = (f"{endpoint.name} ({endpoint.model}) has batch: true, but {problem}; set its batch: auto to send "
                    "its requests directly, or batch: false; no request was sent")
            raise ConfigError(line) if static else EndpointError(line)
        journal = journal or Journal(run_dir)
        endpoint._batcher = Batcher(endpoint, journal, litellm, provider)
        _, source = batch_prices(endpoint)
        # Half a price is a guess: said louder than a price the provider lists.
        (log.warning if "half" in source else log.info)(
            "%s: requests go in batches of up to %d (or after %gs); priced at %s", endpoint.name,
            min(int(endpoint.batch_size), MAX_LINES), float(endpoint.batch_wait), source)
        chosen.append(endpoint)
    return chosen

