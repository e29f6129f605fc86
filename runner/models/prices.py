"""`pricing_file=FILE`: a JSON file in litellm's model-prices format, merged over litellm's price map for one run.

The pinned litellm's map lags the providers (2,594 models where a newer litellm lists over 4,000), so a user
can bring the prices of the models they use. The file is read and checked when the run is built (a bad one
is one ConfigError line, exit 2, before any request); it is merged into litellm's map when litellm is
loaded (litellm_import.py calls `merge_pending`), so a fully cached run still never imports litellm. Every
price lookup then sees it: replies' costs, cache hits kept without a cost, dry runs and budgets. An entry's
own `pricing` still wins (litellm_model.py). When the run ends the map is put back as it was, so the next
job of a sweep run in the same process gets only its own file.
"""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

from runner.errors import ConfigError

_PRICE_FIELD_ENDS = ("_cost_per_token", "_cost_per_second", "_cost_per_image", "_cost_per_request",
                     "_cost_per_character", "_cost_per_query", "_cost_per_pixel")
"""Field names of litellm's map that hold a price: each must be a number of at least 0."""

_pending: dict[str, dict[str, Any]] = {}
"""The run's file, not yet merged (litellm not loaded yet)."""
_replaced: dict[str, dict[str, Any] | None] = {}
"""What the merge replaced, by model name (None: the model was not in the map), for `restore`."""
_litellm: Any = None


def read_price_file(path: str | Path) -> dict[str, dict[str, Any]]:
    """The models of a litellm model-prices JSON file, checked; ConfigError naming the file and entry."""
    where = f"pricing_file={path}"
    try:
        data = json.loads(Path(path).expanduser().read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read it ({exc.strerror or exc}); give the path of a JSON file in "
                          "litellm's model_prices_and_context_window.json format") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{where}: not JSON ({exc}); the file must be one object of model name -> "
                          "prices, as litellm's model_prices_and_context_window.json") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: holds a {type(data).__name__}; it must be an object of model name -> prices")
    models: dict[str, dict[str, Any]] = {}
    for name, entry in data.items():
        if name == "sample_spec":  # litellm's own file documents its fields under this key
            continue
        if not isinstance(entry, dict):
            raise ConfigError(f"{where}: '{name}' is a {type(entry).__name__}; each model maps to an object such "
                              "as {\"input_cost_per_token\": 1.5e-07, \"output_cost_per_token\": 6e-07}")
        for field, value in entry.items():
            if field.endswith(_PRICE_FIELD_ENDS) and not (
                    isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
                    and value >= 0):
                raise ConfigError(f"{where}: '{name}'.{field} is {value!r}; a price is a number of at least 0 "
                                  "(USD per unit)")
        models[str(name)] = entry
    if not models:
        raise ConfigError(f"{where}: lists no model")
    return models


def use_price_file(path: str | Path | None) -> None:
    """Merge the file over litellm's map for this run (at once if litellm is loaded, else when it is)."""
    restore()
    if path is None:
        return
    _pending.update(read_price_file(path))
    if _litellm is not None:
        merge_pending(_litellm)


def in_use() -> bool:
    """Whether this run has a pricing_file (merged or waiting for litellm to load)."""
    return bool(_pending or _replaced)


def merge_pending(litellm: Any) -> None:
    """Merge the run's file into `litellm`'s price map (litellm_import.py, once litellm is loaded)."""
    global _litellm
    _litellm = litellm
    if not _pending:
        return
    for name in _pending:
        if name not in _replaced:
            previous = litellm.model_cost.get(name)
            _replaced[name] = copy.deepcopy(previous) if previous is not None else None
    litellm.register_model(dict(_pending))  # merges each entry's fields over what litellm had
    _pending.clear()


def restore() -> None:
    """Put litellm's map back as it was before the run's file (and forget a file not merged yet)."""
    _pending.clear()
    if _litellm is not None:
        for name, previous in _replaced.items():
            if previous is None:
                _litellm.model_cost.pop(name, None)
            else:
                _litellm.model_cost[name] = previous
    _replaced.clear()
