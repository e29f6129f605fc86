"""Reading a reply that names an option by its text ("10 meters") rather than its letter."""

from __future__ import annotations

import re
from collections.abc import Sequence

from runner.scorers.reading.tokens import Reading

_PUNCTUATION = re.compile(r"[^\w\s]")


def normalise(s: str) -> str:
    """Lower case, punctuation as spaces, whitespace collapsed."""
    return " ".join(_PUNCTUATION.sub(" ", s.lower()).split())


def option_text(s: str, valid: str, option_texts: Sequence[str]) -> Reading:
    """The one option whose text the reply equals (normalised), or the only one it contains as a phrase."""
    reply = normalise(s)
    options = [(x, normalise(o)) for x, o in zip(valid, option_texts, strict=False) if normalise(o)]
    exact = {x for x, o in options if o == reply}
    if len(exact) == 1 or not reply:
        return tuple(exact) or None
    hits = [(x, o) for x, o in options if f" {o} " in f" {reply} "]
    # "Paris" inside the matched "Paris, Texas" is not a second hit.
    letters = {x for x, o in hits if not any(o != p and o in p for _, p in hits)}
    return tuple(letters) if len(letters) == 1 else None
