"""What a request holds and costs without sending it: its input tokens by litellm's tokenizer, and litellm's
base prices of a model (dry runs, budgets, the price of cache hits). Split from litellm_model.py, which
re-exports both."""

from __future__ import annotations

from typing import Any

from runner.models.litellm_import import import_litellm as _import_litellm


def prices(model: str) -> tuple[float, float] | None:
    """litellm's USD per input and per output token for `model` (its base prices); None when it has none."""
    try:
        p_in, p_out = _import_litellm().cost_per_token(model=model, prompt_tokens=1_000_000,
                                                       completion_tokens=1_000_000)
        return float(p_in) / 1e6, float(p_out) / 1e6
    except Exception:  # noqa: BLE001 - litellm has no price for this model (e.g. a local server)
        return None


def count_tokens(model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> int:
    """The input tokens of `messages` (and the function `tools` offered with them) by litellm's tokenizer for
    `model`, sending nothing; audio parts count 0 (litellm would count their base64 as text), images
    litellm's default size."""
    def text_of(m: dict[str, Any]) -> dict[str, Any]:
        parts = m.get("content")
        if not isinstance(parts, list):
            return m
        return {**m, "content": [p for p in parts if not (isinstance(p, dict) and p.get("type") == "input_audio")]}
    try:
        return int(_import_litellm().token_counter(model=model, messages=[text_of(m) for m in messages],
                                                   **({"tools": tools} if tools else {})))
    except Exception:  # noqa: BLE001 - content it cannot tokenize: about 4 characters a token
        return (sum(len(str(m.get("content") or "")) for m in messages) + len(str(tools or ""))) // 4 + 1
