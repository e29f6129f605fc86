"""How a failed call is read: by HTTP status first, then by the exception class litellm raised.

Pure functions over the error (litellm's exception classes are passed in, so nothing here imports it).
"""

from __future__ import annotations

import asyncio
import re
from typing import Any


class MalformedReply(Exception):
    """A reply that came back (HTTP 200) but is no usable chat completion; retried like a broken body."""


def _header(headers: Any, name: str) -> Any:
    try:
        return headers.get(name) or headers.get(name.title())
    except AttributeError:
        return None


def retry_after(exc: BaseException) -> float | None:
    """Seconds the server asked us to wait, from a Retry-After header if the error carries one.

    litellm keeps the failed response's headers in `litellm_response_headers` (its wrapped
    `response` has none); the others are looked at for errors raised outside litellm's mapping.
    """
    response = getattr(exc, "response", None)
    for headers in (getattr(exc, "litellm_response_headers", None), getattr(response, "headers", None),
                    getattr(exc, "headers", None)):
        if not headers:
            continue
        value = _header(headers, "retry-after")
        if value is None:
            continue
        try:
            return max(0.0, float(value))
        except (TypeError, ValueError):
            return None  # an HTTP date: fall back to our own backoff
    return None


# Statuses that say this endpoint cannot be used with this configuration: asking again cannot help.
REFUSED = {401: "the API key was refused", 403: "access was denied", 404: "no such model or endpoint"}


def http_status(exc: BaseException) -> int | None:
    """The HTTP status an error carries (litellm sets `status_code`; some wrappers keep it on `response`)."""
    for obj in (exc, getattr(exc, "response", None)):
        code = getattr(obj, "status_code", None)
        if isinstance(code, int):
            return code
    return None


def quota_exhausted(exc: BaseException) -> bool:
    """A 429 that no wait will fix: the account's quota or credit is used up (OpenAI's insufficient_quota)."""
    return http_status(exc) == 429 and "insufficient_quota" in str(exc)


def classify(exc: BaseException, litellm: Any) -> str:
    """`retry` for transient failures, `fatal` for endpoint-wide ones, `fail` for this request only.

    By HTTP status first: litellm's own HTTP handler raises a 401 as BadRequestError and a 403 as
    APIError, so the exception class alone would retry a refused key.
    """
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return "retry"
    status = http_status(exc)
    fatal = (litellm.AuthenticationError, litellm.PermissionDeniedError, litellm.NotFoundError)
    if status in REFUSED or isinstance(exc, fatal) or quota_exhausted(exc):
        return "fatal"
    if status in (400, 413, 422):
        return "fail"
    # 429, 5xx, connection errors, an unparseable body (a 400-class wrapper with no status, or
    # APIError) and anything unexpected: transient, bounded by max_retries.
    return "retry"


# How "nothing answered" reads through litellm's openai SDK path (httpx) and its own HTTP handler (aiohttp).
_UNREACHABLE_TEXTS = ("Connection error", "Cannot connect to host", "All connection attempts failed")


def chat_choice(resp: Any) -> Any:
    """The reply's first choice; MalformedReply when it has no message (litellm passes `choices: []` on)."""
    choices = getattr(resp, "choices", None)
    if not choices or getattr(choices[0], "message", None) is None:
        raise MalformedReply("choices[0].message is null" if choices else
                             "its choices are empty" if isinstance(choices, list) else "it has no choices")
    return choices[0]


def malformed_reply(exc: BaseException) -> str | None:
    """What was wrong with a reply that came back but is no usable chat completion (litellm reports these with
    its own traceback in the text, through its HTTP handler as an APIConnectionError); None for other errors."""
    if isinstance(exc, MalformedReply):
        return str(exc)
    text = " ".join(str(exc).split())
    if "Unable to get json response" in text:
        if "codec can't decode" in text:
            return "its body is not UTF-8 text"
        start = text.split("Original Response: ", 1)[1][:60] if "Original Response: " in text else ""
        return "its body is not JSON" + (f" (it begins {start!r})" if start else "")
    if "Empty or invalid response from LLM endpoint" in text:
        got = re.search(r"Received: (.{0,60}?)\. Check", text)
        return "its body is no chat completion object" + (f" (got {got.group(1)})" if got else "")
    if "Invalid response object" not in text:
        return None
    shown = text.split("'response_object': ", 1)[-1].split("'model_response_object'", 1)[0]
    for part, what in (("'choices': None", "it has no choices"), ("'choices': []", "its choices are empty"),
                       ("'message': None", "choices[0].message is null")):
        if part in shown:
            return what
    tail = text.split(" received_args=", 1)[0].rsplit("^", 1)[-1].strip()
    if tail.startswith("KeyError: 'choices'"):
        return "it has no choices"
    return f"litellm cannot read it ({tail[:120]})"


def unreachable(exc: BaseException, litellm: Any) -> bool:
    """Nothing answered at all (refused, DNS): litellm reports it as APIConnectionError or as a 500."""
    if isinstance(exc, litellm.Timeout) or malformed_reply(exc) is not None:
        return False
    text = str(exc)
    return isinstance(exc, litellm.APIConnectionError) or any(t in text for t in _UNREACHABLE_TEXTS)
