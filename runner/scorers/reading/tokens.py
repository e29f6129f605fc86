"""The grammar of option letters in a reply: one letter and its wrappings, lists of letters, and the words
that tell a letter naming an option from a letter starting a clause about it.

Every reader of the package builds on these. Patterns hold no unbounded optional whitespace next to each
other: the reply's whitespace is collapsed first (clean.py), so a long reply cannot make one backtrack.
"""

from __future__ import annotations

import re

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"

Reading = tuple[str, ...] | None
"""What one reader makes of a reply: None when it found no evidence, () when it decided "no answer"."""


def tok(n: str = "") -> str:
    """A letter, optionally wrapped - (B) [B] {B} <B> **B** *B* __B__ `B` B) - and not part of a word.

    Groups: w (bold/code marker), o (opening bracket), l (the letter), c (closing bracket). An
    opening bracket needs its closing one, so "C (B is a distractor)" is not the list "C, B".
    """
    return (
        rf"(?P<w{n}>\*{{1,2}}|__|`)?[ \t]*(?P<o{n}>[(\[{{<])?[ \t]*(?P<l{n}>[A-Za-z])"
        rf"[ \t]*(?P<c{n}>[)\]}}>])?(?(o{n})(?<=[)\]}}>]))[ \t]*(?:\*{{1,2}}|__|`)?(?![\w'’])"
    )


TOKEN = re.compile(tok())
# Between two letters of a list: "," "and" "&" "+" (a list), or "or" "maybe" "/" (a hedge). A ";" ends the
# list: "A, B and D; C and E are not" names C in a new clause, not as a fourth answer.
SEP = re.compile(
    r"[ \t]*(?:,[ \t]*)?(?:(\band\b|&|\+)|(\bor\b(?:[ \t]+(?:maybe|perhaps|possibly)\b)?"
    r"|\b(?:maybe|perhaps|possibly)\b|/))?[ \t]*",
    re.I,
)
# "[A, C]": one bracket around a whole list.
OPEN_LIST = re.compile(r"(?:[ \t]*[\[{](?=[ \t]*[A-Za-z][ \t]*(?:[,;&/+]|(?:and|or)\b)))?", re.I)
# The token without groups, to repeat inside one pattern. It holds no spaces and the list is atomic:
# with the reply's whitespace collapsed first, a long list cannot make the pattern backtrack.
ITEM = r"(?:\*{1,2}|__)?[(\[]?[A-Za-z][)\]]?(?:\*{1,2}|__)?(?![\w'’])"
# Where a list may start: not inside another ("A, B and C" has one list), so a pattern that starts with a list
# cannot try every letter of a long one.
LIST_START = (r"(?<![\w'’(\[*_])(?<!\b[A-Za-z], )(?<!\b[A-Za-z],)(?<![)\]*], )(?<!\b[A-Za-z] or )(?<!\b[A-Za-z] and )"
              r"(?<!\b[A-Za-z]/)(?<!\b[A-Za-z] & )(?<!\b[A-Za-z]&)")
LIST = rf"(?>{ITEM}(?:[ ]?(?:,(?:[ ](?:and|or)\b)?|\band\b|\bor\b|[&+/])[ ]?{ITEM})*)"
# Words that may follow the option letters "A"/"I" (otherwise they are prose).
_CONNECTORS = {"and", "or", "nor", "is", "are", "was", "because", "since", "as", "but", "then", "seems", "only",
               "too"}
_NEXT_WORD = re.compile(r"\s+([a-z][\w'’]*)")

# A letter followed by one of these starts a clause about it rather than ending an answer.
CLAUSE = re.compile(
    r"\s+(?:is|are|was|were|seems?|looks?|appears?|would|could|might|may|can|has|have|does|do|did"
    r"|refers|describes|mentions|states|says|sounds?)\b",
    re.I,
)
PREDICATE = (
    r"\s+(?:is|are|seems?|looks?|appears?)\s+(?:to\s+be\s+)?"
    r"(?:(?:both|all|also|definitely|clearly|indeed|certainly)\s+)?(?:the\s+)?(?:(?:most|only|single)\s+)?"
    r"(?:(?:correct|right|best)\s+(?:ones?|options?|choices?|answers?)|correct|right|true|accurate|valid|best"
    r"|answers?|ones?(?!\s+(?:that|which|who)\b))\b"
)
CALLED_CORRECT = re.compile(PREDICATE, re.I)
NEGATED = re.compile(
    r"(?:\bnot|\bneither|\bnor|n['’]t|\bthan|\bunlike|\binstead\s+of|\bexcept|\bexcluding|\bover|\bversus|\bvs\.?)"
    r"\s+(?:(?:options?|choices?)\s+)?$",
    re.I,
)


def token_ok(m: re.Match[str], s: str, loose: bool) -> bool:
    """A token counts unless it is an unwrapped lower-case letter out of place or prose "A"/"I"."""
    letter, wrapped = m["l"], bool(m["w"] or m["o"])
    if not wrapped and not loose and letter.islower():
        return False
    if not (wrapped or m["c"]) and letter in "aAiI":
        nxt = _NEXT_WORD.match(s, m.end())
        if nxt and nxt.group(1) not in _CONNECTORS:
            return False
    return True


def read_list(s: str, pos: int, loose: bool) -> tuple[list[str], bool, int]:
    """Letters separated by , and & or ... starting at ``pos``: (letters, hedged, end)."""
    letters: list[str] = []
    hedged = pending = False
    pos = end = match_end(OPEN_LIST, s, pos)
    while (m := TOKEN.match(s, pos)) and token_ok(m, s, loose):
        letters.append(m["l"].upper())
        hedged, end = hedged or pending, m.end()
        sep = SEP.match(s, end)
        pending, pos = (bool(sep.group(2)), sep.end()) if sep else (False, end)
    return letters, hedged, end


def match_end(pattern: re.Pattern[str], s: str, pos: int) -> int:
    """Where a pattern that may match empty ends when matched at ``pos``."""
    m = pattern.match(s, pos)
    return m.end() if m else pos


def finish(letters: list[str], hedged: bool, valid: str) -> Reading:
    """The valid letters, sorted and unique; () for a hedge; None when no valid letter is left."""
    keep = sorted({x for x in letters if x in valid})
    if not keep:
        return None
    return () if hedged else tuple(keep)
