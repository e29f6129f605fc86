"""Sample records made ready for the page: each one's headline score and outcome class, and long repeated
texts (few-shot turns, system prompts, the one prompt a whole panel saw) stored once in a string table."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from runner.config.redact import redact_text

PREFERRED_SCORES = ("accuracy", "judge_vote", "dialogue_score")
"""The per-sample value a task's samples are classed and sorted by, when the records have it: exact-match
accuracy, the panel's vote, VAKRA's dialogue score; else the task's headline metric, else its first score."""

INTERN_MIN = 80
"""Texts at least this long are stored once in the string table; shorter ones cost less inline."""

PART_TEXT_MAX = 400
"""A non-text content part (audio, image) keeps strings up to this long: a base64 payload is cut, not shown."""


class Strings:
    """A table of long texts; a record keeps a text's index instead of the text when it is long.

    The page resolves an int in a text field as an index into this table (a record never has an int
    where a text is expected), so the data stays plain JSON and every text stays readable in the file.
    """

    def __init__(self) -> None:
        self.items: list[str] = []
        self._index: dict[str, int] = {}

    def ref(self, text: Any) -> Any:
        """The text itself when short (or not a text), else its index in the table."""
        if not isinstance(text, str) or len(text) < INTERN_MIN:
            return text
        index = self._index.get(text)
        if index is None:
            index = self._index[text] = len(self.items)
            self.items.append(text)
        return index


def number(value: Any) -> float | None:
    """A finite float, or None (NaN and infinities have no place in the page's JSON)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def score_keys(records: Iterable[dict[str, Any]]) -> list[str]:
    """Every numeric per-sample score name of the task's records, in order of first appearance."""
    keys: dict[str, None] = {}
    for record in records:
        for key, value in (record.get("scores") or {}).items():
            if number(value) is not None:
                keys.setdefault(key, None)
    return list(keys)


def default_score(keys: Sequence[str], block: dict[str, Any], pairwise: dict[str, str] | None = None) -> str:
    """The score name a task's samples are classed by: a preferred one, else the task's headline metric
    where its records give it per sample (a win-rate sample gives model A's credit so), else the first."""
    for key in PREFERRED_SCORES:
        if key in keys:
            return key
    headline = next(iter(block.get("metrics") or {}), None)
    if headline in keys:
        return str(headline)
    return keys[0] if keys else ""


def pairwise_models(records: Sequence[dict[str, Any]]) -> dict[str, str] | None:
    """`{"a": model_a, "b": model_b}` for a pairwise (win-rate) task, else None."""
    for record in records:
        extra = record.get("extra") or {}
        if extra.get("model_a") is not None and extra.get("model_b") is not None:
            return {"a": str(extra["model_a"]), "b": str(extra["model_b"])}
    return None


def sample_score(record: dict[str, Any], key: str, pairwise: dict[str, str] | None = None) -> float | None:
    """The sample's value of the score `key` (None where it has none)."""
    return number((record.get("scores") or {}).get(key))


def outcome(record: dict[str, Any], score: float | None) -> str:
    """The class the status filter offers: error, invalid (a judge reply did not parse), else by score."""
    status = record.get("status")
    if status in ("error", "invalid"):
        return str(status)
    if score is None:
        return "unscored"
    return "correct" if score >= 1 else "wrong" if score <= 0 else "partial"


def _content(content: Any, strings: Strings) -> Any:
    if isinstance(content, str):
        return strings.ref(content)
    if isinstance(content, list):
        return [_part(p, strings) for p in content]
    return content


def _part(part: Any, strings: Strings) -> Any:
    if not isinstance(part, dict):
        return part
    if part.get("type") == "text":
        return {**part, "text": strings.ref(part.get("text"))}
    return _cut(part)


def _cut(value: Any) -> Any:
    """A non-text part with its long strings (base64 audio or images) cut: the page shows what it was."""
    if isinstance(value, str) and len(value) > PART_TEXT_MAX:
        return f"{value[:40]}… ({len(value)} characters not shown)"
    if isinstance(value, dict):
        return {k: _cut(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_cut(v) for v in value]
    return value


def _messages(messages: Any, strings: Strings) -> Any:
    if not isinstance(messages, list):
        return strings.ref(messages) if isinstance(messages, str) else messages
    return [{**m, "content": _content(m.get("content"), strings)} if isinstance(m, dict) else m
            for m in messages]


def _judgement(judgement: Any, strings: Strings) -> Any:
    if not isinstance(judgement, dict):
        return judgement
    out = dict(judgement)
    if "prompt" in out:
        out["prompt"] = strings.ref(out["prompt"])
    if isinstance(out.get("calls"), list):
        out["calls"] = [{**c, "prompt": strings.ref(c["prompt"])} if isinstance(c, dict) and "prompt" in c else c
                        for c in out["calls"]]
    return out


def sample_row(record: dict[str, Any], key: str, pairwise: dict[str, str] | None,
               strings: Strings) -> dict[str, Any]:
    """The record as the page keeps it: unchanged but for interned texts, plus `_s` (its headline score)
    and `_c` (its outcome class)."""
    score = sample_score(record, key, pairwise)
    row = dict(record)
    row["prompt"] = _messages(record.get("prompt"), strings)
    if isinstance(record.get("error"), str):  # masked when written; again here for records of older runners
        row["error"] = redact_text(record["error"])
    row["judgements"] = [_judgement(j, strings) for j in record.get("judgements") or []]
    extra = record.get("extra")
    if isinstance(extra, dict) and isinstance(extra.get("agent"), dict):
        agent = extra["agent"]
        row["extra"] = {**extra, "agent": {**agent, "messages": _messages(agent.get("messages"), strings)}}
    row["_s"] = score
    row["_c"] = outcome(record, score)
    return row


def task_view(name: str, records: Sequence[dict[str, Any]], block: dict[str, Any],
              strings: Strings) -> dict[str, Any]:
    """One task of a run for the page: its results block, score names and sample rows."""
    pairwise = pairwise_models(records)
    keys = score_keys(records)
    key = default_score(keys, block, pairwise)
    judges = list(dict.fromkeys(str(j.get("judge")) for r in records for j in r.get("judgements") or []
                                if isinstance(j, dict)))
    return {"name": name, "block": block, "score_key": key, "score_keys": keys, "pairwise": pairwise,
            "judges": judges, "samples": [sample_row(r, key, pairwise, strings) for r in records]}
