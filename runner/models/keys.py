"""An entry's key and its failures in words: which environment variables hold the key, as litellm reads them
(named before any request when one is missing, exit 3), and the one line a refused or failed call gets."""

from __future__ import annotations

import os

from runner.config.redact import redact_text
from runner.models import failures
from runner.models.failures import REFUSED, http_status, quota_exhausted
from runner.models.litellm_import import import_litellm

KEY_SUFFIXES = ("_API_KEY", "_API_TOKEN", "_AUTH_TOKEN", "_ACCESS_KEY_ID", "_SECRET_ACCESS_KEY")
"""Names of environment variables that hold credentials (not an API base, project or region)."""


def key_variables(model: str, api_base: str | None) -> list[str]:
    """The environment variables litellm reads this model's key from (empty when it needs none)."""
    litellm = import_litellm()
    saved = {k: os.environ.pop(k) for k in list(os.environ) if k.endswith(KEY_SUFFIXES)}
    try:  # with every key variable hidden, litellm names the ones this provider needs
        missing = litellm.validate_environment(model=model, api_base=api_base)["missing_keys"]
    except Exception:  # noqa: BLE001 - an unknown provider: nothing to name
        missing = []
    finally:
        os.environ.update(saved)
    return [m for m in missing if m.endswith(KEY_SUFFIXES)]


def missing_key(model: str, api_base: str | None) -> str | None:
    """The variable(s) to set when a keyless entry's provider needs a key and none is set (a variable set to the
    empty string is no key either); None when nothing is missing."""
    keys = key_variables(model, api_base)
    if not keys or any(os.environ.get(k) for k in keys):  # e.g. GEMINI_API_KEY or GOOGLE_API_KEY
        return None
    return " or ".join(keys)


def failure_line(name: str, model: str, api_base: str | None, exc: BaseException) -> str:
    """What a failed call of entry `name` says, secrets masked."""
    where = api_base or "the provider's default endpoint"
    bad = failures.malformed_reply(exc)
    # litellm puts a traceback of its own into some messages: the line says what, not where in litellm
    text = f"the reply is no usable chat completion: {bad}" if bad else \
        f"{type(exc).__name__}: " + " ".join(str(exc).split("Traceback (most recent call last)")[0].split())[:300]
    return redact_text(f"{name} ({model} at {where}): {text}")


def refusal_line(name: str, model: str, api_base: str | None, has_key: bool, exc: BaseException) -> str:
    """The line a refused call (401/403/404, quota) of entry `name` stops the run with, and what to check."""
    status = http_status(exc)
    where = api_base or "the provider's default endpoint"
    what = REFUSED.get(status or 0, type(exc).__name__)
    if quota_exhausted(exc):
        what, todo = "the account's quota is used up", "check the provider account's plan and billing"
    elif status == 404:
        todo = f"check the entry's model ('{model}') and api_base"
    elif has_key:
        todo = "check the entry's api_key (or the variable it reads)"
    else:
        todo = f"check {' or '.join(key_variables(model, api_base)) or 'the provider API key variable'}"
    return redact_text(f"{name}: HTTP {status or '?'} from {model} at {where} ({what}); {todo}; "
                       "not retried, the run stops")
