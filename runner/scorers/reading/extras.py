"""What qualifies a reading after it is made: hedges at the end of a reply, and options added to it.

- A hedge (hedging is no answer, as in MUGEN's rubric): after the reply's last answer statement, a letter
  after "maybe"/"possibly"/"might be" or before "is also possible" beside the options read, so the reply
  names two or more: "Probably C, but it might be B", "C (or possibly B)", "I think it's C, but B is also
  possible" read as no answer. "Maybe C." alone reads C; a hedge before the final statement ("The answer
  might be C. ... Answer: C") is a thought on the way, not the answer.
- An addition: "D too", "D as well", "also D" add D to the options read ("Definitely A and B. D too.").
"""

from __future__ import annotations

import re

from runner.scorers.reading.phrases import alternation, phrases
from runner.scorers.reading.statements import STATEMENT
from runner.scorers.reading.tokens import CALLED_CORRECT, CLAUSE, LIST, LIST_START, read_list

_OPTION = r"(?:(?:options?|choices?)\s+)?"
_HEDGED = re.compile(rf"{alternation(phrases('hedge', 'before'))}\s+{_OPTION}(?P<list>{LIST})"
                     rf"|{LIST_START}(?P<list2>{LIST})\s+{alternation(phrases('hedge', 'after'))}", re.I)
_ADDED = re.compile(rf"{alternation(phrases('additive', 'before'))}\s+{_OPTION}(?P<list>{LIST})"
                    rf"|{LIST_START}(?P<list2>{LIST})\s+{alternation(phrases('additive', 'after'))}", re.I)


def _found(s: str, m: re.Match[str], valid: str) -> list[str]:
    start = m.start("list") if m["list"] is not None else m.start("list2")
    letters, _, end = read_list(s, start, loose=False)
    if m["list"] is not None and CLAUSE.match(s, end) and not CALLED_CORRECT.match(s, end):
        return []  # "also A is wrong" adds nothing
    return [x for x in letters if x in valid]


def hedged(s: str, letters: tuple[str, ...], valid: str) -> bool:
    """Whether the reply hedges, after its last answer statement, between the options read and others."""
    last = max((m.end() for m in STATEMENT.finditer(s)), default=0)
    named = {x for m in _HEDGED.finditer(s, last) for x in _found(s, m, valid)}
    return bool(named) and len(named | set(letters)) >= 2


def added(s: str, valid: str) -> set[str]:
    """Options the reply adds with "too", "as well", "also"."""
    return {x for m in _ADDED.finditer(s) for x in _found(s, m, valid)}
