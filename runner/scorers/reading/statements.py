"""Readers of what a reply says about the letters: answer statements, hedges and assertions.

1. Statement - "the answer is (B)", "Answer: b", "**Final Answer:** C", "Correct: C", "correct answer(s): A, C"
   (or "ACD"), ``{"answer": "B"}``, "I think A", "it is B", "I'd go with B", "Therefore, C", "the answer is C,
   not A", "not A but C", "B, or rather C". The LAST statement that reads as letters wins. The letters follow
   on the same line (a bare "Answer:" reads the labelled lines beneath it) and do not start a new clause:
   "I think A is tempting" states nothing, "I think A and C are correct" does.
3. Hedge - two valid letters joined by "or" ("I'm not sure, A or B", "either A or C", "B or maybe D",
   "maybe A, maybe B"): no answer, unless negated ("not A or B") or the letters start a clause that does not
   call them right ("A or B might seem plausible").
4. Assertion - letters before "is/are (both) correct / right / the answer(s) / the one": "A and C are correct",
   "Option C is the one" (all such letters, unless negated).
"""

from __future__ import annotations

import re

from runner.scorers.reading.lines import labelled
from runner.scorers.reading.tokens import (
    CALLED_CORRECT,
    CLAUSE,
    LIST,
    NEGATED,
    PREDICATE,
    Reading,
    finish,
    match_end,
    read_list,
    tok,
)

STATEMENT = re.compile(
    rf"""\b(?:answers?|options?|choices?|selections?|picks?|réponses?|respuestas?|antwort|risposta
            |resposta|jawaban)(?:\(s\))?["'”’*_]*
          (?:\s+(?:is|are|would\s+be|should\s+be|must\s+be|will\s+be|(?:seems|appears)\s+to\s+be
                |est|es|ist|è|é)\b|[ \t]*[:=：]|[ \t]+[-–—](?=[ \t]))
      | \b(?:correct|final|selected|chosen)(?:\s+(?:one|letter))?["'”’*_]*[ \t]*[:=：]
      | 答案\s*(?:是|为|[:：])
      | \b(?:it|this|that)(?:\s+(?:is|would\s+be|must\s+be|should\s+be)\b|['’]s\b)
      | \bI(?:\s+(?:think|believe|guess|choose|pick|select|prefer|say
                   |(?:would|will)\s+(?:say|choose|pick|select|go\s+with))
            |['’](?:d|ll)\s+(?:say|choose|pick|select|go\s+with))\b
      | \bgo(?:ing)?\s+with\b
      | (?:^|(?<=[.!?:\n]))[ \t*_]*(?:clearly|definitely|certainly|obviously|undoubtedly|so|thus|therefore
            |hence|actually|wait)\b,?
      | ,[ \t]*(?:so|thus|hence|therefore)\b,?
      | \bor\s+(?:rather|actually)\b,?
      | \bnot\s+(?:options?\s+)?{LIST}[ \t]*[,;]?[ \t]*but(?:\s+rather)?\b""",
    re.I | re.X | re.M,
)
# Words between a statement and its letters: "the answer is clearly option **C**".
_FILLER = re.compile(
    r"[ \t:=\-*_]*(?:(?:the|options?|choices?|letters?|选项|clearly|definitely|certainly|surely|obviously"
    r"|undoubtedly|probably|likely|indeed|therefore|thus|hence|so|then|actually|still|both|either|just"
    r"|simply|only|correct|final|answer)\b[ \t:=\-*_,]*)*",
    re.I,
)
# "Answers:" heads the chosen lines beneath it; "The options are:" heads a list of all options.
_CHOSEN = re.compile(r"answer|correct|right|final|best|pick|cho(?:ose|se)|select|réponse|respuesta|antwort|答案", re.I)
_RUN = re.compile(r"([A-Z]{2,6})(?![\w'’])")
# The lookbehinds keep a match from starting inside a comma list ("A, [B is correct]").
_ASSERT = re.compile(
    rf"(?:\b(?P<kw>options?|choices?|answers?|letters?|statements?)\s+)?(?:(?:both|only|just)\s+)?"
    rf"(?<![\w'’])(?<!\b[A-Za-z], )(?<!\b[A-Za-z],)(?<![)\]*], )(?P<list>{LIST}){PREDICATE}",
    re.I,
)
_HEDGE = re.compile(
    rf"(?<![\w'’]){tok()}[ \t]*,?\s+or\s+(?:(?:maybe|perhaps|possibly)\s+)?{tok('2')}"
    rf"|\b(?:maybe|perhaps|possibly)\s+{tok('3')}[ \t]*[,;]?\s+(?:or\s+)?(?:maybe|perhaps|possibly)\s+{tok('4')}",
    re.I,
)
_CLOSING = re.compile(rf"(?:[:=]|[ \t][—–-]|[.!?][ \t]|\banswer\b)[ \t]*(?:options?[ \t]+)?(?P<list>{LIST})"
                      r"[ \t*_.!]*\s*\Z", re.I)
_LABELLED_GROUPS = re.compile(rf":[ \t]*{LIST}(?=[ \t*_]*(?:[|\n.;]|$))", re.M)
_CALLED_RIGHT = re.compile(r"[^.\n;,]{0,40}?\b(?:correct|right|true|valid|the\s+answer)\b", re.I)
_NEGATION = re.compile(r"\b(?:not|never|neither)\b|n['’]t\b", re.I)


def statement(s: str, valid: str) -> Reading:
    """The letters of the last answer statement that names some."""
    found: Reading = None
    for m in STATEMENT.finditer(s):
        line_end = s.find("\n", m.end())
        # The letters follow the statement closely; the bound keeps long lines from costing n².
        line = s[m.end() : line_end if line_end >= 0 else len(s)][:300]
        start = match_end(_FILLER, line, 0)
        if not line[start:].strip() and line_end >= 0:
            chosen = _CHOSEN.search(s, max(0, m.start() - 25), m.end())
            reading = labelled(s[line_end + 1 : line_end + 2000].split("\n"), valid) if chosen else None
        else:
            reading = statement_tail(line, start, valid)
        if reading is not None:
            found = reading
    return found


def closing(s: str, valid: str) -> Reading:
    """The letters that end the reply after a colon, a dash or a full stop: "SAR, lidar and the altimeter: A, B,
    D.", "Not B or D — those are active. A and C."."""
    m = _CLOSING.search(s)
    if m is None or len(_LABELLED_GROUPS.findall(s)) > 1:  # "Passive: A, C. Active: B, D." ends on a group
        return None
    letters, hedged, _ = read_list(s, m.start("list"), loose=False)
    return finish(letters, hedged, valid)


def statement_tail(line: str, start: int, valid: str) -> Reading:
    """The letters right after a statement, unless they start a clause that does not call them right."""
    letters, hedged, end = read_list(line, start, loose=True)
    if not letters:
        # "Answer: ACD" - capitals run together in order, as some multi-answer replies write them.
        run = _RUN.match(line, start)
        if run and list(run[1]) == sorted(set(run[1])) and set(run[1]) <= set(valid):
            return tuple(run[1])
        return None
    before = len(line[:end].rstrip())
    if CLAUSE.match(line, before) and not CALLED_CORRECT.match(line, before):
        return None
    return finish(letters, hedged, valid)


def hedge(s: str, valid: str, rejected: frozenset[str] = frozenset()) -> Reading:
    """() when the reply hedges between two valid letters it does not reject ("A, C and not B, D or F" rejects
    D and F, it does not hedge between them); None otherwise."""
    for m in _HEDGE.finditer(s):
        a, b = ("", "2") if m["l"] else ("3", "4")
        first, second = m["l" + a], m["l" + b]
        capital = (first.isupper() or m["o" + a]) and (second.isupper() or m["o" + b])
        pair = {first.upper(), second.upper()}
        negated = NEGATED.search(s, max(0, m.start() - 30), m.start())
        if not capital or len(pair) < 2 or not pair <= set(valid) or negated or pair <= rejected:
            continue
        rest = s[m.end() :]
        if CLAUSE.match(rest):
            called = _CALLED_RIGHT.match(rest)
            if not called or _NEGATION.search(called[0]):
                continue
        return ()
    return None


def assertion(s: str, valid: str) -> Reading:
    """Every letter called correct ("A and C are correct"), unless negated."""
    letters: list[str] = []
    for m in _ASSERT.finditer(s):
        if NEGATED.search(s, max(0, m.start("list") - 30), m.start("list")):
            continue
        found, hedged, _ = read_list(m["list"], 0, loose=bool(m["kw"]))
        if hedged:
            return ()
        letters += found
    return finish(letters, False, valid)
