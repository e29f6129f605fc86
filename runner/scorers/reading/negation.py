"""Options a reply rejects, which are never read as chosen.

Strong rejections: "not A", "rather than B", "neither A nor B", "B is wrong", "C and E are ruled out", a cross
mark, a labelled line with a negative verdict ("B) False"), the options an exclusion names ("all except C").
They win over any reading: a reply reading only options it rejects strongly reads as nothing, and is unsure.

Weak rejections: "C and E are not Copernicus services", "whereas B and D emit their own signal". They take an
option out of a reading made from anything but an explicit answer statement: "C is not a JAXA satellite, so
the answer is C" (the question asked which is not) still reads C.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from runner.scorers.reading.lines import VERDICT
from runner.scorers.reading.phrases import alternation, phrases
from runner.scorers.reading.tokens import LIST, LIST_START, read_list

# A list starts where no other list goes on: the lookbehinds keep a match from starting inside "A, B, C".
_OPTION = r"(?:(?:options?|choices?|answers?)\s+)?"
_BEFORE = re.compile(rf"{alternation(phrases('reject', 'before'))}\s+{_OPTION}(?P<list>{LIST})", re.I)
_AFTER = re.compile(rf"{LIST_START}{_OPTION}(?P<list>{LIST})\s*(?:{alternation(phrases('reject', 'after'))})", re.I)
_NOT = re.compile(rf"{LIST_START}{_OPTION}(?P<list>{LIST})\s+(?:{alternation(phrases('reject', 'not'))})"
                  rf"(?!\s+(?:{alternation(phrases('reject', 'double_negative'))}))", re.I)
_CONTRAST = re.compile(rf"{alternation(phrases('reject', 'contrast'))}\s*,?\s*{_OPTION}(?P<list>{LIST})", re.I)
_CALLED_RIGHT = re.compile(r"[^.\n;]{0,40}?\b(?:correct|right|true|valid|best|answers?|also|too|as\s+well)\b", re.I)
_LABEL = re.compile(r"^[ \t]*(?:[-*•+][ \t]+)?\**[(\[]?(?P<l>[A-Z])\b[)\].:]?\**(?P<rest>.*)$", re.M)


@dataclass
class Rejections:
    """The options a reply rejects, strongly and weakly (see the module's docstring)."""

    strong: set[str] = field(default_factory=set)
    weak: set[str] = field(default_factory=set)

    @property
    def all(self) -> set[str]:
        return self.strong | self.weak


def _letters(s: str, m: re.Match[str], valid: str) -> set[str]:
    # Read in place, so that "not A good answer" sees the word after "A" (prose, not an option).
    found, _, _ = read_list(s, m.start("list"), loose=False)
    return {x for x in found if x in valid}


def rejections(s: str, valid: str) -> Rejections:
    """The options `s` (a prepared reply) rejects."""
    out = Rejections()
    for pattern in (_BEFORE, _AFTER):
        for m in pattern.finditer(s):
            out.strong |= _letters(s, m, valid)
    for m in _LABEL.finditer(s):
        verdict = VERDICT.match(m["rest"]) or VERDICT.search(m["rest"][-40:])
        if verdict and verdict["neg"] and m["l"] in valid:
            out.strong.add(m["l"])
    for m in _NOT.finditer(s):
        out.weak |= _letters(s, m, valid)
    for m in _CONTRAST.finditer(s):
        if not _CALLED_RIGHT.match(s, m.end()):
            out.weak |= _letters(s, m, valid)
    out.weak -= out.strong
    return out
