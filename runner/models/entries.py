"""A model or judge entry (conf/model/*.yaml, a judges panel's items) as a call-layer `Endpoint`, and back:
the entry's keys and defaults are the schema's (`ModelConfig`, the one list of them)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from runner.errors import ConfigError
from runner.models.cache import ResponseCache
from runner.models.litellm_model import Endpoint


def endpoint_from_config(cfg: dict[str, Any], cache: ResponseCache | None,
                         run_params: Mapping[str, Any] | None = None) -> Endpoint:
    """Build an Endpoint from a model/judge entry: its keys and defaults are the schema's (`ModelConfig`);
    an entry's `backoff` is the endpoint's `backoff_base`; `server` and `rubrics` are the run's business.
    `run_params` (the run's `params`, for the model under test) win over the entry's and a task's params."""
    from runner.config.schema import entry_defaults

    entry = {**entry_defaults(), **cfg}
    concurrency = entry["concurrency"]
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:  # 0 asks nothing
        raise ConfigError(f"{entry['name']}: concurrency={concurrency!r} is no number of requests in flight; give "
                          "a whole number of at least 1 (model.concurrency, or the judge's judges.panel entry)")
    return Endpoint(name=str(entry["name"]), model=str(entry["model"]), api_base=entry["api_base"],
                    # `${oc.env:VAR,}` with VAR unset gives "": that is no key, not an empty one.
                    api_key=entry["api_key"] or None, concurrency=concurrency, params=dict(entry["params"] or {}),
                    run_params=dict(run_params or {}),
                    timeout=float(entry["timeout"]), max_retries=int(entry["max_retries"]), cache=cache,
                    backoff_base=float(entry["backoff"]), origin=entry.get("origin"),
                    adaptive=bool(entry["adaptive"]), pricing=entry["pricing"], batch=entry["batch"],
                    batch_size=entry["batch_size"], batch_wait=entry["batch_wait"],
                    drop_params=bool(entry["drop_params"]))


RUNTIME_FIELDS = ("cache", "budget", "stats", "served_models")
"""Endpoint fields that are this run's state, not what the entry says: a copy of an endpoint leaves them."""


def entry_fields(endpoint: Endpoint) -> dict[str, Any]:
    """What `endpoint` was built with from its entry, to build another endpoint like it (rejudge's replay):
    every field but the run's state and the private ones, so a key added to the entry is never lost there."""
    return {f.name: getattr(endpoint, f.name) for f in dataclasses.fields(endpoint)
            if f.init and not f.name.startswith("_") and f.name not in RUNTIME_FIELDS}
