"""An entry's batch keys (`batch`, `batch_size`, `batch_wait`) and what its batched requests cost.

A batched request costs the provider's batch price: the entry's `pricing.batch_input_per_mtok` and
`.batch_output_per_mtok`, else half its `pricing`; else litellm's `input_cost_per_token_batches` and
`output_cost_per_token_batches`, else half litellm's price for the model, which the run says (the providers
that have batch APIs price them at half). Accounting, dry runs and the budget use it (litellm_model.py
`Endpoint.price`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from runner.errors import ConfigError
from runner.models.accounting import parse_batch_pricing
from runner.models.litellm_import import import_litellm

if TYPE_CHECKING:
    from runner.models.litellm_model import Endpoint

DEFAULT_BATCH_SIZE = 10_000
"""Requests per batch: OpenAI takes 50,000 (and 200 MB) per batch; 10,000 keeps the samples a run holds in
memory while they wait for their batch at a few hundred MB, and a batch's results in hours, not a day."""
DEFAULT_BATCH_WAIT_S = 10.0
"""Seconds a batch waits for more requests after its first before it is submitted less than full."""


def batch_mode(value: Any, where: str) -> bool | str:
    """An entry's `batch`: True, False or "auto"; anything else is a ConfigError naming `where`."""
    if isinstance(value, bool) or value is None:
        return bool(value)
    text = str(value).strip().lower()
    if text in ("true", "false"):
        return text == "true"
    if text == "auto":
        return "auto"
    raise ConfigError(f"{where}: batch={value!r}; give true (through the provider's batch API, or stop), auto "
                      "(the batch API where there is one, else direct calls) or false")



def check_batch_keys(endpoint: Endpoint) -> None:
    """Normalise the entry's `batch` and check `batch_size` (1 to 50,000) and `batch_wait` (seconds >= 0)."""
    endpoint.batch = batch_mode(endpoint.batch, endpoint.name)
    size, wait = endpoint.batch_size, endpoint.batch_wait
    if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= 50_000:
        raise ConfigError(f"{endpoint.name}: batch_size={size!r}; give the most requests in one batch, a whole "
                          "number from 1 to 50,000 (OpenAI's limit)")
    if isinstance(wait, bool) or not isinstance(wait, (int, float)) or not math.isfinite(wait) or wait < 0:
        raise ConfigError(f"{endpoint.name}: batch_wait={wait!r}; give the seconds a batch waits for more requests "
                          "before it is submitted, a number >= 0")


def batch_price(endpoint: Endpoint, prompt_tokens: int, completion_tokens: int) -> float | None:
    """What a batched request with these token counts costs (None: unknown)."""
    prices, _ = batch_prices(endpoint)
    return None if prices is None else prompt_tokens * prices[0] + completion_tokens * prices[1]


def batch_usage(endpoint: Endpoint) -> dict[str, Any]:
    """results.json `usage.<endpoint>.batch` for an entry with `batch` set: whether its requests went in batches,
    how many batches and requests this invocation submitted, and the prices they were counted at."""
    if not endpoint.batch:
        return {}
    batcher = endpoint._batcher
    if batcher is None:
        return {"batch": {"mode": str(endpoint.batch).lower(), "sent_in_batches": False}}
    return {"batch": {"mode": str(endpoint.batch).lower(), "sent_in_batches": True, "batches": batcher.created,
                      "batched_requests": batcher.lines, "prices": batch_prices(endpoint)[1]}}


def batch_prices(endpoint: Endpoint) -> tuple[tuple[float, float] | None, str]:
    """USD per input and per output token of a batched request, and where they come from: the entry's
    `pricing.batch_*_per_mtok`, else half its `pricing`; else litellm's `*_cost_per_token_batches`, else half
    litellm's price (OpenAI, Anthropic and Google price batches at half); None when no price is known."""
    own = parse_batch_pricing(endpoint.pricing, endpoint.name)
    if own is not None:
        return own, "the entry's batch pricing"
    base = endpoint._prices
    if base is not None:
        return (base[0] / 2e6, base[1] / 2e6), "half the entry's pricing (it gives no batch_input_per_mtok, " \
            "batch_output_per_mtok)"
    try:
        info = import_litellm().get_model_info(endpoint.model)
    except Exception:  # noqa: BLE001 - litellm has no price for this model
        return None, f"an unknown price (litellm has none for {endpoint.model}; set the entry's pricing)"
    batch_in, batch_out = info.get("input_cost_per_token_batches"), info.get("output_cost_per_token_batches")
    full_in, full_out = info.get("input_cost_per_token"), info.get("output_cost_per_token")
    if batch_in is not None and batch_out is not None:
        return (float(batch_in), float(batch_out)), "litellm's batch prices"
    if full_in is None or full_out is None:
        return None, f"an unknown price (litellm has none for {endpoint.model}; set the entry's pricing)"
    prices = (float(batch_in if batch_in is not None else full_in / 2),
              float(batch_out if batch_out is not None else full_out / 2))
    return prices, f"half of litellm's prices (it lists no batch price for {endpoint.model})"
