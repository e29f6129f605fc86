"""Reading multiple-choice answers the way a careful human grader would.

Options are labelled A, B, C, ... in dataset order. Only the first ``n_choices``
letters are valid, and only valid letters are ever returned (never raw text).

Reading policy. The reply is cleaned first: ``None`` reads as empty; anything inside
``<think>...</think>`` (or after an unclosed ``<think>``) is dropped; ``\\boxed{B}``
and ``$\\boxed{\\text{B}}$`` read as "answer: B"; ``$B$``, ``"B"`` and ``'B'`` as B.
Readers are then tried in order, and the first one that finds evidence decides:

1. Statement - "the answer is (B)", "Answer: b", "**Final Answer:** C", "Correct: C",
   "correct answer(s): A, C" (or "ACD"), "Réponse : B", "答案：B", ``{"answer": "B"}``,
   "I think A", "it is B", "I'd go with B", "Therefore, C", "the answer is C, not A", "not A but C",
   "B, or rather C". The LAST statement that reads as letters wins. The letters follow on
   the same line (a bare "Answer:" reads the labelled lines beneath it) and do not start a
   new clause: "I think A is tempting" states nothing, "I think A and C are correct" does.
2. Answer lines - lines that are nothing but letters (with bullets, brackets, bold,
   punctuation and a lead word such as "Option", "Both", "Definitely"): the block of
   such lines that ends the reply, else the one that opens it. A leading "C." then an
   explanation naming other letters ("not A or B") reads C; reasoning that ends on
   "**C**" reads C; "- A\\n- C" reads A and C.
3. Hedge - two valid letters joined by "or" ("I'm not sure, A or B", "either A or C",
   "B or maybe D", "maybe A, maybe B"): no answer, unless negated ("not A or B") or the
   letters start a clause that does not call them right ("A or B might seem plausible").
4. Assertion - letters before "is/are (both) correct / right / the answer(s) / the
   one": "A and C are correct", "Option C is the one" (all such letters, unless negated).
5. Labelled lines - the reply opens with lines labelled by letters: "B: 10 meters",
   "B) 10 meters", "C (B is a distractor)", "Definitely B, since ...", "A. x\\nC. y".
   Lines that carry verdicts ("A) True", "B. Paris - incorrect") keep the positive ones.
6. Emphasis - bold or bracketed letters anywhere in the reply ("my pick is **D**").
7. Option text (only with ``option_texts``) - the reply equals one option's text
   after normalising case, punctuation and whitespace, or contains exactly one
   option text as a whole phrase ("yes, it is hallucinated" -> "Yes").

A capital letter in prose is not evidence on its own: the pronoun "I" and the article
"A" followed by a word are never options. Lower-case letters count only as a whole
answer, after a statement, inside brackets/bold, or as a line label ("b. 4"). Letters
joined by "or"/"maybe"/"/" are a hedge: no answer. Letters outside the valid range are
dropped. ``extract_choice`` returns a letter only when the reading selects exactly one,
so a reply naming two options ("A and C are correct", "Both A and C") is not a single
answer; ``extract_choices`` returns them all.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["extract_choice", "extract_choices"]

_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _tok(n: str = "") -> str:
    """A letter, optionally wrapped - (B) [B] {B} <B> **B** *B* __B__ `B` B) - and not part of a word.

    Groups: w (bold/code marker), o (opening bracket), l (the letter), c (closing bracket). An
    opening bracket needs its closing one, so "C (B is a distractor)" is not the list "C, B".
    """
    return (
        rf"(?P<w{n}>\*{{1,2}}|__|`)?[ \t]*(?P<o{n}>[(\[{{<])?[ \t]*(?P<l{n}>[A-Za-z])"
        rf"[ \t]*(?P<c{n}>[)\]}}>])?(?(o{n})(?<=[)\]}}>]))[ \t]*(?:\*{{1,2}}|__|`)?(?![\w'’])"
    )


_TOKEN = re.compile(_tok())
_SEP = re.compile(
    r"[ \t]*(?:,[ \t]*)?(?:(\band\b|&|\+|;)|(\bor\b(?:[ \t]+(?:maybe|perhaps|possibly)\b)?"
    r"|\b(?:maybe|perhaps|possibly)\b|/))?[ \t]*",
    re.I,
)
# "[A, C]": one bracket around a whole list.
_OPEN_LIST = re.compile(r"(?:[ \t]*[\[{](?=[ \t]*[A-Za-z][ \t]*(?:[,;&/+]|(?:and|or)\b)))?", re.I)
# The token without groups, to repeat inside one pattern. It holds no spaces and the list is atomic:
# with the reply's whitespace collapsed first, a long list cannot make the pattern backtrack.
_ITEM = r"(?:\*{1,2}|__)?[(\[]?[A-Za-z][)\]]?(?:\*{1,2}|__)?(?![\w'’])"
_LIST = rf"(?>{_ITEM}(?:[ ]?(?:,(?:[ ](?:and|or)\b)?|\band\b|\bor\b|[&+/])[ ]?{_ITEM})*)"
# Words that may follow the option letters "A"/"I" (otherwise they are prose).
_CONNECTORS = {"and", "or", "nor", "is", "are", "was", "because", "since", "as", "but", "then", "seems"}
_NEXT_WORD = re.compile(r"\s+([a-z][\w'’]*)")

# Cleaning: reasoning blocks, LaTeX and quotes hide letters from the readers.
_THINK = re.compile(r"<think(?:ing)?>.*?(?:</think(?:ing)?>|\Z)", re.S | re.I)
_THINK_END = re.compile(r"</think(?:ing)?>", re.I)
_LATEX_TEXT = re.compile(r"\\(?:text|textbf|textit|mathrm|mathbf|mathit)\s*\{([^{}]*)\}")
_BOXED = re.compile(r"\\(?:boxed|fbox)\s*\{((?:[^{}]|\{[^{}]*\})*)\}")
_DOLLARS = re.compile(r"\$+([^$\n]{1,40}?)\$+")
_LETTERISH = re.compile(r"\s*(?:answer:\s*)?[(\[]?[A-Za-z][)\]]?(?:\s*[,&]\s*[(\[]?[A-Za-z][)\]]?)*\s*")
_QUOTED = re.compile(r"[\"'“‘`]([A-Za-z])[\"'”’`]")
_SPACES = re.compile(r"[^\S\n]+")
_BLANK_LINES = re.compile(r"\s*\n\s*")

_STATEMENT = re.compile(
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
      | \bor\s+(?:rather|actually)\b,?
      | \bnot\s+(?:options?\s+)?{_LIST}[ \t]*[,;]?[ \t]*but(?:\s+rather)?\b""",
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
# A letter followed by one of these starts a clause about it rather than ending an answer.
_CLAUSE = re.compile(
    r"\s+(?:is|are|was|were|seems?|looks?|appears?|would|could|might|may|can|has|have|does|do|did"
    r"|refers|describes|mentions|states|says|sounds?)\b",
    re.I,
)
_PREDICATE = (
    r"\s+(?:is|are|seems?|looks?|appears?)\s+(?:to\s+be\s+)?"
    r"(?:(?:both|all|also|definitely|clearly|indeed|certainly)\s+)?(?:the\s+)?(?:(?:most|only|single)\s+)?"
    r"(?:(?:correct|right|best)\s+(?:ones?|options?|choices?|answers?)|correct|right|true|accurate|valid|best"
    r"|answers?|ones?(?!\s+(?:that|which|who)\b))\b"
)
_CALLED_CORRECT = re.compile(_PREDICATE, re.I)
# The lookbehinds keep a match from starting inside a comma list ("A, [B is correct]").
_ASSERT = re.compile(
    rf"(?:\b(?P<kw>options?|choices?|answers?|letters?|statements?)\s+)?(?:(?:both|only|just)\s+)?"
    rf"(?<![\w'’])(?<!\b[A-Za-z], )(?<!\b[A-Za-z],)(?<![)\]*], )(?P<list>{_LIST}){_PREDICATE}",
    re.I,
)
_NEGATED = re.compile(
    r"(?:\bnot|\bneither|\bnor|n['’]t|\bthan|\bunlike|\binstead\s+of|\bexcept|\bexcluding|\bover|\bversus|\bvs\.?)"
    r"\s+(?:(?:options?|choices?)\s+)?$",
    re.I,
)
_HEDGE = re.compile(
    rf"(?<![\w'’]){_tok()}[ \t]*,?\s+or\s+(?:(?:maybe|perhaps|possibly)\s+)?{_tok('2')}"
    rf"|\b(?:maybe|perhaps|possibly)\s+{_tok('3')}[ \t]*[,;]?\s+(?:or\s+)?(?:maybe|perhaps|possibly)\s+{_tok('4')}",
    re.I,
)
_CALLED_RIGHT = re.compile(r"[^.\n;,]{0,40}?\b(?:correct|right|true|valid|the\s+answer)\b", re.I)
_NEGATION = re.compile(r"\b(?:not|never|neither)\b|n['’]t\b", re.I)
_BULLET = re.compile(r"[ \t]*(?:[-*•+>][ \t]+|\d+[.)][ \t]+)?")
_LEAD = re.compile(
    r"(?:(?:options?|choices?|letters?|answers?|both|either|only|just|maybe|perhaps|final(?:\s+answer)?"
    r"|clearly|definitely|certainly|surely|obviously|undoubtedly|probably|likely|选项)\b[ \t]*[:\-]?[ \t]*)?",
    re.I,
)
_LINE_END = re.compile(r"[\s.!,;*_]*")
# What may follow a label: an end, punctuation, a reason, or echoed option text ("B London"), but
# not a word that continues a sentence ("B is wrong") nor an abbreviation ("i.e.").
_LABEL_END = re.compile(r"[ \t]*(?:$|[.,:;!?)\]–—\-(](?!\w\.)|(?:because|since|as|given)\b|[A-Z0-9\"“(])")
_LOWER_LABEL_END = re.compile(r"[.)](?:\s|$)|$")
_VERDICT = re.compile(
    r"(?:^[\s.:)\-–—*]*|[-–—:(]\s*\**\s*)(?:(?:this|it)\s+is\s+)?"
    r"(?:(?P<neg>incorrect|false|wrong|no|not\s+correct|✗|✘|❌)|(?P<pos>correct|true|right|yes|✓|✔|✅))(?!\w)",
    re.I,
)
_EMPHASIS = re.compile(r"\*\*[ \t]*\(?([A-Za-z])\)?[ \t]*\*\*|(?<![\w'’])[(\[]([A-Z])[)\]]")
_PUNCTUATION = re.compile(r"[^\w\s]")

Reading = tuple[str, ...] | None  # None: no evidence, (): decided "no answer"


def _token_ok(m: re.Match[str], s: str, loose: bool) -> bool:
    """A token counts unless it is an unwrapped lower-case letter out of place or prose "A"/"I"."""
    letter, wrapped = m["l"], bool(m["w"] or m["o"])
    if not wrapped and not loose and letter.islower():
        return False
    if not (wrapped or m["c"]) and letter in "aAiI":
        nxt = _NEXT_WORD.match(s, m.end())
        if nxt and nxt.group(1) not in _CONNECTORS:
            return False
    return True


def _read_list(s: str, pos: int, loose: bool) -> tuple[list[str], bool, int]:
    """Letters separated by , and & or ... starting at ``pos``: (letters, hedged, end)."""
    letters: list[str] = []
    hedged = pending = False
    pos = end = _end(_OPEN_LIST, s, pos)
    while (m := _TOKEN.match(s, pos)) and _token_ok(m, s, loose):
        letters.append(m["l"].upper())
        hedged, end = hedged or pending, m.end()
        sep = _SEP.match(s, end)
        pending, pos = (bool(sep.group(2)), sep.end()) if sep else (False, end)
    return letters, hedged, end


def _end(pattern: re.Pattern[str], s: str, pos: int) -> int:
    """Where a pattern that may match empty ends when matched at ``pos``."""
    m = pattern.match(s, pos)
    return m.end() if m else pos


def _finish(letters: list[str], hedged: bool, valid: str) -> Reading:
    keep = sorted({x for x in letters if x in valid})
    if not keep:
        return None
    return () if hedged else tuple(keep)


def _clean(text: str) -> str:
    s = _THINK_END.split(_THINK.sub(" ", text))[-1]
    s = _BOXED.sub(lambda m: f" answer: {m[1]} ", _LATEX_TEXT.sub(r"\1", s))
    s = _DOLLARS.sub(lambda m: m[1] if _LETTERISH.fullmatch(m[1]) else m[0], s)
    s = _QUOTED.sub(r"\1", s)
    # One whitespace character per run, so the optional spaces inside a token cannot backtrack
    # polynomially on long runs of padding. Blank lines carry no meaning for the readers.
    return _BLANK_LINES.sub("\n", _SPACES.sub(" ", s))


# --- 1. statements


def _statement(s: str, valid: str) -> Reading:
    found: Reading = None
    for m in _STATEMENT.finditer(s):
        line_end = s.find("\n", m.end())
        # The letters follow the statement closely; the bound keeps long lines from costing n².
        line = s[m.end() : line_end if line_end >= 0 else len(s)][:300]
        start = _end(_FILLER, line, 0)
        if not line[start:].strip() and line_end >= 0:
            chosen = _CHOSEN.search(s, max(0, m.start() - 25), m.end())
            reading = _labelled(s[line_end + 1 : line_end + 2000].split("\n"), valid) if chosen else None
        else:
            reading = _statement_tail(line, start, valid)
        if reading is not None:
            found = reading
    return found


def _statement_tail(line: str, start: int, valid: str) -> Reading:
    letters, hedged, end = _read_list(line, start, loose=True)
    if not letters:
        # "Answer: ACD" - capitals run together in order, as some multi-answer replies write them.
        run = _RUN.match(line, start)
        if run and list(run[1]) == sorted(set(run[1])) and set(run[1]) <= set(valid):
            return tuple(run[1])
        return None
    before = len(line[:end].rstrip())
    if _CLAUSE.match(line, before) and not _CALLED_CORRECT.match(line, before):
        return None
    return _finish(letters, hedged, valid)


# --- 2. answer lines


def _answer_line(line: str) -> tuple[list[str], bool] | None:
    """(letters, hedged) of a line that is nothing but an answer; None for any other line."""
    body = line[_end(_BULLET, line, 0) :]
    letters, hedged, end = _read_list(body, _end(_LEAD, body, 0), loose=True)
    if not letters or not _LINE_END.fullmatch(body, end):
        return None
    return letters, hedged


def _answer_lines(s: str, valid: str) -> Reading:
    readings = [_answer_line(line) for line in s.split("\n") if line.strip()]

    def block(rows: list[tuple[list[str], bool] | None]) -> Reading:
        letters: list[str] = []
        for row in rows:
            if row is None:
                break
            if _finish(*row, valid) == ():
                return ()
            letters += row[0]
        return _finish(letters, False, valid)

    # The closing block is the reply's last word; the opening one a leading answer.
    last = block(readings[::-1])
    return last if last is not None else block(readings)


# --- 3. hedges, 4. assertions


def _hedge(s: str, valid: str) -> Reading:
    for m in _HEDGE.finditer(s):
        a, b = ("", "2") if m["l"] else ("3", "4")
        first, second = m["l" + a], m["l" + b]
        capital = (first.isupper() or m["o" + a]) and (second.isupper() or m["o" + b])
        pair = {first.upper(), second.upper()}
        negated = _NEGATED.search(s, max(0, m.start() - 30), m.start())
        if not capital or len(pair) < 2 or not pair <= set(valid) or negated:
            continue
        rest = s[m.end() :]
        if _CLAUSE.match(rest):
            called = _CALLED_RIGHT.match(rest)
            if not called or _NEGATION.search(called[0]):
                continue
        return ()
    return None


def _assertion(s: str, valid: str) -> Reading:
    letters: list[str] = []
    for m in _ASSERT.finditer(s):
        if _NEGATED.search(s, max(0, m.start("list") - 30), m.start("list")):
            continue
        found, hedged, _ = _read_list(m["list"], 0, loose=bool(m["kw"]))
        if hedged:
            return ()
        letters += found
    return _finish(letters, False, valid)


# --- 5. labelled lines, 6. emphasis, 7. option text


def _label(line: str) -> tuple[list[str], str] | None:
    """The letters labelling a line and the text after them, or None if it is not labelled."""
    body = line[_end(_BULLET, line, 0) :]
    start = _end(_LEAD, body, 0)
    m = _TOKEN.match(body, start)
    letters, hedged, end = _read_list(body, start, loose=True)
    if not m or hedged or not letters:
        return None
    rest = body[end:]
    if not (m["w"] or m["o"] or m["c"]):
        if m["l"].islower():
            if not _LOWER_LABEL_END.match(rest):
                return None
        elif not _token_ok(m, body, loose=False) or not _LABEL_END.match(rest):
            return None
    return letters, rest


def _labelled(lines: list[str], valid: str) -> Reading:
    """The block of letter-labelled lines at the start of ``lines``."""
    rows: list[tuple[list[str], str]] = []
    for line in lines:
        if not line.strip():
            continue
        if (row := _label(line)) is None:
            break
        rows.append(row)
    verdicts = [_VERDICT.search(rest) for _, rest in rows]
    if any(verdicts):
        rows = [row for row, v in zip(rows, verdicts, strict=True) if v and v["pos"]]
    return _finish([x for letters, _ in rows for x in letters], False, valid)


def _emphasis(s: str, valid: str) -> Reading:
    return _finish([(a or b).upper() for a, b in _EMPHASIS.findall(s)], False, valid)


def _normalise(s: str) -> str:
    return " ".join(_PUNCTUATION.sub(" ", s.lower()).split())


def _option_text(s: str, valid: str, option_texts: Sequence[str]) -> Reading:
    reply = _normalise(s)
    options = [(x, _normalise(o)) for x, o in zip(valid, option_texts, strict=False) if _normalise(o)]
    exact = {x for x, o in options if o == reply}
    if len(exact) == 1 or not reply:
        return tuple(exact) or None
    hits = [(x, o) for x, o in options if f" {o} " in f" {reply} "]
    # "Paris" inside the matched "Paris, Texas" is not a second hit.
    letters = {x for x, o in hits if not any(o != p and o in p for _, p in hits)}
    return tuple(letters) if len(letters) == 1 else None


_READERS = (_statement, _answer_lines, _hedge, _assertion, lambda s, v: _labelled(s.split("\n"), v), _emphasis)


def _read(text: str | None, n_choices: int, option_texts: Sequence[str] | None) -> tuple[str, ...]:
    if not text or n_choices <= 0:
        return ()
    valid = _LETTERS[: min(n_choices, len(_LETTERS))]
    s = _clean(text)
    for reader in _READERS:
        if (reading := reader(s, valid)) is not None:
            return reading
    if option_texts:
        return _option_text(s, valid, option_texts) or ()
    return ()


def extract_choice(text: str | None, n_choices: int, option_texts: Sequence[str] | None = None) -> str | None:
    """The single option letter the reply commits to; None if it names none, several, or hedges between some."""
    letters = _read(text, n_choices, option_texts)
    return letters[0] if len(letters) == 1 else None


def extract_choices(text: str | None, n_choices: int, option_texts: Sequence[str] | None = None) -> tuple[str, ...]:
    """The set of option letters the reply selects (sorted, unique); () if none."""
    return _read(text, n_choices, option_texts)
