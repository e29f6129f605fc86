"""Reading judge replies: a JSON object (bare, fenced or inside prose) mapped to a verdict, or invalid."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_THINK = re.compile(r"<think>.*?</think>", re.S | re.I)


@dataclass(frozen=True)
class Verdict:
    """A parsed judge reply: `label` is None when the reply could not be read."""

    label: str | None
    score: float | None
    explanation: str

    @property
    def valid(self) -> bool:
        """Whether the reply carried a readable verdict."""
        return self.label is not None


INVALID = Verdict(None, None, "")


def find_json_object(text: str | None) -> dict[str, Any] | None:
    """The last JSON object in a reply: bare, inside a ```json fence, or with prose around it."""
    if not text:
        return None
    text = _THINK.sub("", text).strip()
    try:
        obj = json.loads(text)
        if isinstance(obj, dict):
            return obj
    except ValueError:
        pass
    # The scan also finds objects inside ```json fences; the last one is the judge's final word
    # (a reply may restate the format first, or change its mind).
    found = _scan_objects(text)
    return found[-1] if found else None


def _scan_objects(text: str) -> list[dict[str, Any]]:
    decoder = json.JSONDecoder()
    out: list[dict[str, Any]] = []
    i = text.find("{")
    while i != -1:
        try:
            obj, end = decoder.raw_decode(text, i)
        except ValueError:
            i = text.find("{", i + 1)
            continue
        if isinstance(obj, dict):
            out.append(obj)
        i = text.find("{", end)
    return out


def _field(obj: dict[str, Any], *names: str) -> Any:
    lowered = {str(k).strip().lower(): v for k, v in obj.items()}
    for name in names:
        if name in lowered:
            return lowered[name]
    return None


def _explanation(obj: dict[str, Any]) -> str:
    value = _field(obj, "explanation", "rationale", "reasoning", "reason")
    return str(value).strip() if value is not None else ""


def _norm(value: Any) -> str:
    return re.sub(r"[^a-z0-9]+", " ", str(value).lower()).strip()


def parse_binary(text: str | None) -> Verdict:
    """`{"judgement": "correct" | "incorrect"}` (or `{"score": 1 | 0}`) -> pass 1.0 / fail 0.0."""
    obj = find_json_object(text)
    if obj is None:
        return INVALID
    expl = _explanation(obj)
    value = _field(obj, "judgement", "judgment", "verdict")
    if value is not None:
        label = _norm(value)
        if label in ("correct", "pass", "passed", "true", "yes"):
            return Verdict("correct", 1.0, expl)
        if label in ("incorrect", "not correct", "fail", "failed", "false", "no", "wrong"):
            return Verdict("incorrect", 0.0, expl)
        return INVALID
    score = _field(obj, "score")
    if isinstance(score, bool) or score is None:
        return INVALID
    if isinstance(score, str) and score.strip() in ("0", "1"):
        score = int(score.strip())
    if score in (0, 1):
        return Verdict("correct" if score == 1 else "incorrect", float(score), expl)
    return INVALID


def parse_refusal(text: str | None) -> Verdict:
    """`{"refused": "yes" | "no"}` for the refusal rubric (a binary `judgement` is accepted too)."""
    obj = find_json_object(text)
    if obj is None:
        return INVALID
    value = _field(obj, "refused", "refusal", "declined")
    if value is None:
        return parse_binary(text)
    label = _norm(value) if not isinstance(value, bool) else ("yes" if value else "no")
    if label in ("yes", "true"):
        return Verdict("refused", 1.0, _explanation(obj))
    if label in ("no", "false"):
        return Verdict("answered", 0.0, _explanation(obj))
    return INVALID


def parse_grounded(text: str | None) -> Verdict:
    """`{"grounded": "yes" | "partial" | "no" | "unsure"}`; only yes passes."""
    obj = find_json_object(text)
    if obj is None:
        return INVALID
    label = _norm(_field(obj, "grounded") or "")
    if label not in ("yes", "partial", "no", "unsure"):
        return INVALID
    return Verdict(label, 1.0 if label == "yes" else 0.0, _explanation(obj))


def parse_winner(text: str | None) -> Verdict:
    """`{"winner": "A" | "B" | "tie"}`, where A is the response shown first."""
    obj = find_json_object(text)
    if obj is None:
        return INVALID
    label = _norm(_field(obj, "winner") or "")
    mapping = {"a": "A", "b": "B", "tie": "tie", "draw": "tie", "response a": "A", "response b": "B"}
    if label not in mapping:
        return INVALID
    return Verdict(mapping[label], None, _explanation(obj))
