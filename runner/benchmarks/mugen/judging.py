"""Reading MUGEN judge replies: the `Explanation:` / `Judgement:` lines or a JSON object.

Two readers, chosen by `benchmark.strict`:

- strict: exactly the original evaluator's rule, so invalid counts match it. The reply is searched
  (dot matches newline) for "Explanation: " + text + newline + "Judgement: " + text, the judgement
  running lazily to the first blank line or the end of the reply (before one final newline). Without
  a match both fields are the original's sentinels. The judgement is valid only when, lower-cased and
  stripped, it is exactly "correct" or "incorrect": markdown, quotes, the spelling "Judgment" or text
  on the next line make it invalid.
- lenient (default): a JSON object first (`{"judgement": "correct" | "incorrect"}`, as for every
  judge in the CONTRACT; `score` 1/0 too), else the judgement line read forgivingly: any case,
  markdown, quotes, "Judgment"; the first such line decides and two that disagree make the reply invalid
  (a quoted judgement never decides), and "incorrect" is never read as "correct".

Both also return MUGEN's two stored fields, `Explanation` and `Judgement`: strict keeps the raw
captured strings (as the original stores them); lenient stores the normalised label when valid.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from runner.judges.parsers import Verdict, find_json_object, parse_binary
from runner.untrusted import for_reading

NO_EXPLANATION = "No extracted explanation"
NO_JUDGEMENT = "No extracted judgement"

_STRICT = re.compile(r"Explanation: (.*?)\nJudgement: (.*?)(?:\n\n|$)", re.S)
_THINK = re.compile(r"<think(?:ing)?>.*?(?:</think(?:ing)?>|\Z)", re.S | re.I)
_MARKUP = re.compile(r"[*_`#>\"'“”‘’<>\[\]]")
_JUDGEMENT_LINE = re.compile(r"^[\W_]*judge?ments?[\W_]*?\s*[:=\-–]\s*(?P<v>.*)$", re.I | re.M)
_EXPLANATION = re.compile(r"^[\W_]*(?:explanation|reasoning|rationale)[\W_]*?\s*[:=\-–]\s*(?P<v>.*?)"
                          r"(?=^[\W_]*judge?ments?\b|\Z)", re.I | re.M | re.S)
_LABEL = re.compile(r"(?P<l>incorrect|not\s+correct|correct|wrong)\b", re.I)


@dataclass(frozen=True)
class Reading:
    """A judge reply read: the verdict the metrics use and the two fields MUGEN's files store."""

    verdict: Verdict
    explanation: str
    judgement: str


def read_strict(text: str | None) -> Reading:
    """The original evaluator's reading, invalid counts included."""
    m = _STRICT.search(text or "")
    explanation, judgement = (m.group(1), m.group(2)) if m else (NO_EXPLANATION, NO_JUDGEMENT)
    label = judgement.lower().strip()
    if label in ("correct", "incorrect"):
        return Reading(Verdict(label, 1.0 if label == "correct" else 0.0, explanation), explanation, judgement)
    return Reading(Verdict(None, None, ""), explanation, judgement)


def read_lenient(text: str | None) -> Reading:
    """JSON or forgiving `Judgement:` lines; the first judgement line decides, unless another disagrees."""
    body = _THINK.sub(" ", for_reading(text or ""))
    if find_json_object(body) is not None:
        verdict = parse_binary(body)
        if verdict.valid:
            return Reading(verdict, verdict.explanation, verdict.label or "")
    lines = list(_JUDGEMENT_LINE.finditer(body))
    if not lines:
        return Reading(Verdict(None, None, ""), NO_EXPLANATION, NO_JUDGEMENT)
    raw = lines[0]["v"].strip()
    explanations = list(_EXPLANATION.finditer(body))
    explanation = _MARKUP.sub("", explanations[0]["v"]).strip() if explanations else ""
    # The judge's own first judgement line; another that says otherwise (a quoted "Judgement: correct" from
    # the model's response, a change of mind) makes the reply invalid rather than deciding it.
    labels = {_label(m["v"].strip()) for m in lines} - {None}
    label = _label(raw) if len(labels) <= 1 else None
    if label is None:
        return Reading(Verdict(None, None, ""), explanation or NO_EXPLANATION, raw)
    return Reading(Verdict(label, 1.0 if label == "correct" else 0.0, explanation), explanation, label)


def _label(raw: str) -> str | None:
    """correct / incorrect from a judgement value; None when it names neither, or both as a choice."""
    value = " ".join(_MARKUP.sub(" ", raw).split())
    if re.match(r"(?:in)?correct\s*(?:/|\bor\b)", value, re.I):
        return None  # "correct or incorrect": the format line echoed back
    kinds = ["correct" if m["l"].lower() == "correct" else "incorrect" for m in _LABEL.finditer(value)]
    first = _LABEL.match(value)
    if first is not None:
        return kinds[0]
    return kinds[0] if len(set(kinds)) == 1 else None


def reader(strict: bool) -> Callable[[str | None], Verdict]:
    """The Panel parser for one mode (the verdict only; fields are read again from the raw reply)."""
    read = read_strict if strict else read_lenient
    return lambda text: read(text).verdict
