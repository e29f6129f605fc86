"""Reading multiple-choice answers the way a careful human grader would.

Options are labelled A, B, C, ... in dataset order. Only the first ``n_choices``
letters are valid, and only valid letters are ever returned (never raw text).

Reading policy. The reply is first cleaned: ``None`` reads as empty, and anything
inside ``<think>...</think>`` (or after an unclosed ``<think>``) is discarded. Then
readers are tried in order, and the first one that finds evidence decides:

1. Explicit statement - "the answer is (B)", "Answer: b", "the correct option is
   **C**", "the answers are A and C", "I think/believe A and C", "it is B",
   "I'd go with B". If there are several, the LAST one whose tail reads as letters
   wins. The letters must follow on the same line, so letters in a following
   explanation are not read ("Answer: A, C\\nBecause B is wrong" -> A, C); a
   statement that ends its line ("Answers:") reads the option lines beneath it.
2. Assertion - "C is correct", "option c is the right answer" (all such letters).
3. Bare reply - the whole reply is only letters, separators ("," "and" "&" "or")
   and formatting: "b", "(B)", "[B]", "**B**", "B.", "A,C,D", "Option C".
4. Hedge - two letters joined by "or" / "or maybe" anywhere ("I'm not sure, A or B").
5. Option lines - the reply opens with lines labelled by a letter: "B: 10 meters",
   "B) ...", "- A\\n- C", "A. text of A\\nC. text of C".
6. Emphasis - bold or bracketed letters anywhere in the reply ("**B**", "(B)").
7. Option text (only with ``option_texts``) - the reply equals one option's text
   after normalising case, punctuation and whitespace, or contains exactly one
   option text as a whole phrase ("yes, it is hallucinated" -> "Yes").

A capital letter in ordinary prose is not evidence on its own: the pronoun "I" and
the article "A" followed by a word are never options. Lower-case letters count only
as the whole reply, after an answer statement or inside brackets/bold. A reading
that joins letters with "or"/"maybe"/"/" is a hedge: no answer at all. A reading
naming letters outside the valid range only keeps the valid ones.
``extract_choice`` returns a letter only when the reading selects exactly one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["extract_choice", "extract_choices"]

_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _tok(n: str = "") -> str:
    """A letter, optionally wrapped - (B) [B] **B** *B* __B__ B) - and not part of a word.

    Groups: w (bold/italic marker), o (opening bracket), l (the letter), c (closing bracket).
    """
    return (
        rf"(?P<w{n}>\*{{1,2}}|__)?[ \t]*(?P<o{n}>[(\[])?[ \t]*(?P<l{n}>[A-Za-z])"
        rf"[ \t]*(?P<c{n}>[)\]])?[ \t]*(?:\*{{1,2}}|__)?(?![\w'’])"
    )


_TOKEN = re.compile(_tok())
_SEP = re.compile(
    r"[ \t]*(?:,[ \t]*)?(?:(\band\b|&|\+|;)|(\bor\b(?:[ \t]+(?:maybe|perhaps|possibly)\b)?"
    r"|\b(?:maybe|perhaps|possibly)\b|/))?[ \t]*",
    re.I,
)
# Words that may follow the option letters "A"/"I" (otherwise they are prose).
_CONNECTORS = {"and", "or", "is", "are", "was", "because", "since", "as", "but", "then", "seems"}
_THINK = re.compile(r"<think(?:ing)?>.*?(?:</think(?:ing)?>|\Z)", re.S | re.I)
_STATEMENT = re.compile(
    r"""\b(?:answers?|options?|choices?|selections?)\b
          (?:\s+(?:is|are|would\s+be|should\s+be|must\s+be|will\s+be)\b|[ \t]*[:=])
      | \b(?:it|this|that)(?:\s+(?:is|would\s+be|must\s+be|should\s+be)\b|['’]s\b)
      | \bI(?:\s+(?:think|believe|guess|choose|pick|select|would\s+(?:say|choose|pick|go\s+with))
            |['’]d\s+(?:say|choose|pick|go\s+with))\b
      | \bgo(?:ing)?\s+with\b""",
    re.I | re.X,
)
_FILLER = re.compile(r"[ \t:=\-]*(?:(?:the\s+)?(?:options?|choices?|letters?)\b[ \t:]*)?", re.I)
_ASSERT = re.compile(
    r"(?:\b(?P<kw>option|choice)\s+)?(?<![\w'’])" + _tok() + r"\s+(?:is|are|seems|looks)\s+(?:to\s+be\s+)?"
    r"(?:the\s+)?(?:most\s+)?(?:correct|right|best|true|accurate|answer)\b",
    re.I,
)
_HEDGE = re.compile(
    r"(?<![\w'’])" + _tok() + r"[ \t]*,?\s+or\s+(?:(?:maybe|perhaps|possibly)\s+)?" + _tok("2"),
    re.I,
)
_BARE_PREFIX = re.compile(r"\s*(?:(?:options?|choices?|letters?|either)\b[ \t]*[:\-]?[ \t]*)?", re.I)
_BULLET = re.compile(r"[ \t]*(?:[-*•+][ \t]+|\d+[.)][ \t]+)?")
_EMPHASIS = re.compile(r"\*\*[ \t]*\(?([A-Za-z])\)?[ \t]*\*\*|(?<![\w'’])[(\[]([A-Z])[)\]]")

Reading = tuple[str, ...] | None  # None: no evidence, (): decided "no answer"


def _token_ok(m: re.Match[str], s: str, loose: bool) -> bool:
    """A token counts unless it is an unwrapped lower-case letter out of place or prose "A"/"I"."""
    letter, wrapped = m["l"], bool(m["w"] or m["o"])
    if not wrapped and not loose and letter.islower():
        return False
    if not (wrapped or m["c"]) and letter in "aAiI":
        nxt = re.match(r"\s+([a-z][\w'’]*)", s[m.end() :])
        if nxt and nxt.group(1) not in _CONNECTORS:
            return False
    return True


def _read_list(s: str, pos: int, loose: bool) -> tuple[list[str], bool, int]:
    """Letters separated by , and & or ... starting at ``pos``: (letters, hedged, end)."""
    letters: list[str] = []
    hedged = pending = False
    end = pos
    while (m := _TOKEN.match(s, pos)) and _token_ok(m, s, loose):
        letters.append(m["l"].upper())
        hedged, end = hedged or pending, m.end()
        sep = _SEP.match(s, end)
        pending, pos = bool(sep.group(2)), sep.end()
    return letters, hedged, end


def _finish(letters: list[str], hedged: bool, valid: str) -> Reading:
    keep = sorted({x for x in letters if x in valid})
    if not keep:
        return None
    return () if hedged else tuple(keep)


def _option_lines(lines: list[str], valid: str) -> Reading:
    """The block of letter-labelled lines at the start of ``lines``."""
    letters: list[str] = []
    for line in lines:
        if not line.strip():
            continue
        body = line[_BULLET.match(line).end() :]
        m = _TOKEN.match(body)
        if not m:
            break
        letter, rest = m["l"], body[m.end() :]
        if m["w"] or m["o"] or m["c"]:
            ok = letter.isupper() or bool(m["o"] or m["c"])
        else:
            ok = letter.isupper() and re.match(r"\s*(?:[.:\-–]|$)", rest) is not None
        if not ok:
            break
        letters.append(letter.upper())
    return _finish(letters, False, valid)


def _statement(s: str, valid: str) -> Reading:
    found: Reading = None
    for m in _STATEMENT.finditer(s):
        line_end = s.find("\n", m.end())
        line = s[m.end() : line_end if line_end >= 0 else len(s)]
        start = _FILLER.match(line).end()
        if not line[start:].strip() and line_end >= 0:
            reading = _option_lines(s[line_end + 1 :].split("\n"), valid)
        else:
            reading = _finish(*_read_list(line, start, loose=True)[:2], valid)
        if reading is not None:
            found = reading
    return found


def _assertion(s: str, valid: str) -> Reading:
    letters = [
        m["l"].upper()
        for m in _ASSERT.finditer(s)
        if m["kw"] or m["w"] or m["o"] or m["l"].isupper()
    ]
    return _finish(letters, False, valid)


def _bare(s: str, valid: str) -> Reading:
    letters, hedged, end = _read_list(s, _BARE_PREFIX.match(s).end(), loose=True)
    if letters and re.fullmatch(r"[\s.!*_]*", s[end:]):
        return _finish(letters, hedged, valid)
    return None


def _hedge(s: str, valid: str) -> Reading:
    for m in _HEDGE.finditer(s):
        first, second = m["l"], m["l2"]
        upper = (first.isupper() or m["o"]) and (second.isupper() or m["o2"])
        if upper and first.upper() != second.upper() and {first.upper(), second.upper()} <= set(valid):
            return ()
    return None


def _emphasis(s: str, valid: str) -> Reading:
    return _finish([(a or b).upper() for a, b in _EMPHASIS.findall(s)], False, valid)


def _normalise(s: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", s.lower()).split())


def _option_text(s: str, valid: str, option_texts: Sequence[str]) -> Reading:
    reply = _normalise(s)
    options = [(x, _normalise(o)) for x, o in zip(valid, option_texts) if _normalise(o)]
    exact = {x for x, o in options if o == reply}
    if len(exact) == 1 or not reply:
        return tuple(exact) or None
    hits = [(x, o) for x, o in options if re.search(rf"(?<!\w){re.escape(o)}(?!\w)", reply)]
    # "Paris" inside the matched "Paris, Texas" is not a second hit.
    letters = {x for x, o in hits if not any(o != p and o in p for _, p in hits)}
    return tuple(letters) if len(letters) == 1 else None


def _read(text: str | None, n_choices: int, option_texts: Sequence[str] | None) -> tuple[str, ...]:
    if not text or n_choices <= 0:
        return ()
    valid = _LETTERS[: min(n_choices, len(_LETTERS))]
    s = re.split(r"</think(?:ing)?>", _THINK.sub(" ", text), flags=re.I)[-1]
    for reader in (_statement, _assertion, _bare, _hedge):
        if (reading := reader(s, valid)) is not None:
            return reading
    for reading in (_option_lines(s.split("\n"), valid), _emphasis(s, valid)):
        if reading is not None:
            return reading
    if option_texts:
        return _option_text(s, valid, option_texts) or ()
    return ()


def extract_choice(text: str | None, n_choices: int, option_texts: Sequence[str] | None = None) -> str | None:
    """The single option letter the reply commits to, or None if it names none (or is ambiguous/hedges between several)."""
    letters = _read(text, n_choices, option_texts)
    return letters[0] if len(letters) == 1 else None


def extract_choices(text: str | None, n_choices: int, option_texts: Sequence[str] | None = None) -> tuple[str, ...]:
    """The set of option letters the reply selects (sorted, unique); () if none."""
    return _read(text, n_choices, option_texts)
