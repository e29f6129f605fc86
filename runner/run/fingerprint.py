"""What decides a sample's record, as a short string a resume can compare part by part.

A fingerprint reads `data=… task=… prompt=… model=… judges=…`: one 12-hex digest per part, so a changed
part can be named without keeping the configuration itself in every record. A resume keeps a finished
record only while its fingerprint equals the one the current configuration gives the same sample.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")

# Each part, and how a user recognises it when it changed.
PARTS = {
    "data": "the data or few-shot examples",
    "task": "the task settings",
    "prompt": "the messages sent to the model",
    "model": "the model under test",
    "judges": "the judge panel or rubric",
}


def _stable(obj: Any) -> str:
    """A value JSON cannot hold, by its text without memory addresses (a lazy loader in a sample's
    metadata, say), so that the same configuration gives the same digest in every process."""
    if isinstance(obj, functools.partial):
        return f"partial({_stable(obj.func)}, {obj.args!r}, {sorted(obj.keywords.items())!r})"
    if callable(obj):
        return f"<{getattr(obj, '__module__', '')}.{getattr(obj, '__qualname__', type(obj).__name__)}>"
    return _ADDRESS.sub("", str(obj))


def digest(value: Any) -> str:
    """A stable 12-hex digest of a JSON-able value (keys sorted; anything else by `_stable`)."""
    blob = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=_stable)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:12]


def fingerprint(parts: Mapping[str, Any]) -> str:
    """`part=digest` pairs in a fixed order."""
    return " ".join(f"{name}={digest(parts[name])}" for name in PARTS if name in parts)


def split(value: str | None) -> dict[str, str]:
    """The parts of a fingerprint string (empty for a record written before fingerprints existed)."""
    out: dict[str, str] = {}
    for pair in (value or "").split():
        name, _, hexdigest = pair.partition("=")
        out[name] = hexdigest
    return out


def changed(old: str | None, new: str) -> list[str]:
    """The parts that differ; `["runner"]` for a record that has no fingerprint at all."""
    before, after = split(old), split(new)
    if not before:
        return ["runner"]
    return [p for p in PARTS if before.get(p) != after.get(p)]


def describe_changes(where: str, counts: Mapping[str, int], detail: Mapping[str, str]) -> str:
    """One clause per changed part, e.g. `open_ended: 12 with the judge panel or its rubric (was a, now b)`."""
    clauses = []
    for part, n in counts.items():
        label = PARTS.get(part, "an older runner version (no fingerprint)")
        clauses.append(f"{n} differ in {label}" + (f" ({detail[part]})" if part in detail else ""))
    return f"{where}: " + ", ".join(clauses)


def names(records: Iterable[Mapping[str, Any]], key: str) -> list[str]:
    """Distinct values of `key` (model names) or judge names across records, in first-seen order."""
    seen: dict[str, None] = {}
    for r in records:
        if key == "judges":
            for j in r.get("judgements") or []:
                seen.setdefault(str(j.get("judge")), None)
        elif r.get(key):
            seen.setdefault(str(r[key]), None)
    return list(seen)
