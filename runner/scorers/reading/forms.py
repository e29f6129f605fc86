"""The shapes a reply's answer comes in, brought to the one the readers know.

- Answer fields: ``<answer>B</answer>`` (several tags: their contents together) and JSON objects with an
  answer key (``{"answers": "A,C"}``, ``{"correct_options": ["A", "C"]}``) are the whole answer: the reply
  reads as "Answer: <the field>".
- Scripts: full-width forms as ASCII (NFKC), a space between Chinese or Japanese text and a letter ("答案是AC"),
  then every phrase of the table rewritten into English (phrases.py) and "→" as ":".
- Marks: ✓ ✔ ✅ ☑ ``[x]`` beside a letter choose it, ✗ ✘ ❌ ✖ ``[ ]`` reject it ("A ✓ / B ✗", "✅ C",
  "- [x] A", a labelled line ending in ✓).
- A letter's own parenthesis goes when it holds no other letter: "C (Mining) and E (Tourism) are not" reads
  as "C and E are not"; "C (B is a distractor)" keeps it.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

from runner.scorers.reading.phrases import join_letters, rewrite

_TAG = re.compile(r"<(answers?|final_answer|final|choices?|selection|selected|letters?|output|result)>([^<]*)</\1>",
                  re.I)
_KEY = re.compile(r"(?:final_?)?(?:answers?|choices?|selected(?:_?options?|_?answers?)?|selections?|letters?"
                  r"|correct(?:_?answers?|_?options?|_?choices?|_?letters?)?|options?|predictions?|labels?)")
_CJK = r"[\u3000-\u30ff\u3400-\u9fff\uac00-\ud7af]"
_CJK_EDGE = re.compile(rf"(?<={_CJK})(?=[A-Za-z0-9])|(?<=[A-Za-z0-9])(?={_CJK})")
_CJK_PUNCTUATION = str.maketrans({"。": ". ", "、": ", ", "；": "; "})
_ARROW = re.compile(r"\s*(?:→|⇒|=>|->)\s*")
_SPACES = re.compile(r"[^\S\n]+")
_CHECKBOX = re.compile(r"^([ \t]*(?:[-*+][ \t]+)?)\[([xX ])\][ \t]*", re.M)
_POS, _NEG = "✓✔✅☑🗸", "✗✘❌✖☒❎"
_MARK = rf"(?P<mark>[{_POS}{_NEG}])\ufe0f?"
_LETTER = r"(?<![\w'’])\**\(?(?P<l>[A-Z])\)?\**(?![\w'’])"
_PAIR = re.compile(rf"{_LETTER}[ \t]*[:).\-–—]?[ \t]*{_MARK}|{_MARK.replace('P<mark>', 'P<mark2>')}[ \t]*"
                   rf"{_LETTER.replace('P<l>', 'P<l2>')}")
_LABELLED_LINE = re.compile(rf"^[ \t]*(?:[-*•+][ \t]+)?\**\(?(?P<l>[A-Z])\b.*?{_MARK}[ \t*]*$", re.M)
_OWN_PARENS = re.compile(r"(?<![\w'’])([A-Z]\**)[ ]?\(([^()\n]{1,60})\)")
_OPTION_PARENS = re.compile(r"\(\s*(?:options?|choices?|answers?)\s+([A-Z])\s*\)", re.I)
_PAREN_LIST = re.compile(r"\((?P<l>[A-Z](?:\s*(?:,|and|&)\s*[A-Z])+)\)")
_LETTER_WORD = re.compile(r"(?<![\w'’])[A-Z](?![\w'’])")


def answer_fields(s: str) -> str | None:
    """"Answer: <contents>" of a reply's answer tags or JSON answer field; None when it has neither."""
    tags = [m[2].strip() for m in _TAG.finditer(s) if m[2].strip()]
    if tags:
        return "Answer: " + ", ".join(tags)
    decoder = json.JSONDecoder()
    for start in (m.start() for m in re.finditer(r"\{", s)):
        try:
            value, _ = decoder.raw_decode(s, start)
        except ValueError:
            continue
        found = _answer_value(value) if isinstance(value, dict) else None
        if found:
            return "Answer: " + found
    return None


def _answer_value(obj: dict[str, Any]) -> str | None:
    for k, v in obj.items():
        if not _KEY.fullmatch(re.sub(r"[\s-]+", "_", str(k).strip().lower())):
            continue
        if isinstance(v, str) and v.strip():
            return v.strip()
        if isinstance(v, list) and v and all(isinstance(x, str) for x in v):
            return ", ".join(x.strip() for x in v)
    return None


def prepare(s: str) -> str:
    """Full-width forms as ASCII, scripts spaced, every language's phrases in English, checkboxes as marks."""
    s = _CJK_EDGE.sub(" ", unicodedata.normalize("NFKC", s).translate(_CJK_PUNCTUATION))
    s = _CHECKBOX.sub(lambda m: f"{m[1]}{'✅' if m[2] in 'xX' else '❌'} ", s)
    s = join_letters(_SPACES.sub(" ", rewrite(s)))
    return _SPACES.sub(" ", _ARROW.sub(": ", s))


def own_parentheses(s: str) -> str:
    """A letter's parenthesis dropped when it holds no letter of its own: "C (Mining)" reads "C"; "(option C)"
    reads "(C)"."""
    s = _OPTION_PARENS.sub(r"(\1)", s)
    return _OWN_PARENS.sub(lambda m: m[0] if _LETTER_WORD.search(m[2]) else m[1], s)


def parenthesised_lists(s: str) -> str:
    """Letters in one parenthesis read as a list after a colon: "monitoring (A, B, D)": "monitoring: A, B, D"."""
    return _PAREN_LIST.sub(lambda m: f": {m['l']}", s)


def marks(s: str, valid: str) -> tuple[set[str], set[str]]:
    """(letters marked right, letters marked wrong) by check and cross marks."""
    right: set[str] = set()
    wrong: set[str] = set()
    # A labelled line ending in a mark ("**A) Radiometer** - passive. ✓"), unless the line holds other marks.
    lines = [m for m in _LABELLED_LINE.finditer(s) if len(re.findall(f"[{_POS}{_NEG}]", m[0])) == 1]
    for m in [*_PAIR.finditer(s), *lines]:
        found = m.groupdict()
        letter, mark = found.get("l") or found.get("l2"), found.get("mark") or found.get("mark2")
        if letter and mark and letter in valid:
            (right if mark in _POS else wrong).add(letter)
    return right - wrong, wrong - right
