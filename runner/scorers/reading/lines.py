"""Readers of the reply's lines: answer lines, letter-labelled lines, and emphasis.

2. Answer lines - lines that are nothing but letters (with bullets, brackets, bold, punctuation and a lead word
   such as "Option", "Both", "Definitely"): the block of such lines that ends the reply, else the one that
   opens it. A leading "C." then an explanation naming other letters ("not A or B") reads C; reasoning that
   ends on "**C**" reads C; "- A\\n- C" reads A and C.
5. Labelled lines - the reply opens with lines labelled by letters: "B: 10 meters", "B) 10 meters",
   "C (B is a distractor)", "Definitely B, since ...", "A. x\\nC. y". Lines that carry verdicts ("A) True",
   "B. Paris - incorrect") keep the positive ones.
6. Emphasis - bold or bracketed letters anywhere in the reply ("my pick is **D**").
"""

from __future__ import annotations

import re

from runner.scorers.reading.phrases import alternation, phrases
from runner.scorers.reading.tokens import TOKEN, Reading, finish, match_end, read_list, token_ok

_BULLET = re.compile(r"[ \t]*(?:[-*•+>][ \t]+|\d+[.)][ \t]+)?")
_LEAD = re.compile(
    r"(?:(?:options?|choices?|letters?|answers?|both|either|only|just|maybe|perhaps|final(?:\s+answer)?"
    r"|clearly|definitely|certainly|surely|obviously|undoubtedly|probably|likely|选项)\b[ \t]*[:\-]?[ \t]*)?",
    re.I,
)
_LINE_END = re.compile(rf"[\s.!,;*_]*(?:{alternation(phrases('line_tail'))}[\s.!,;*_]*)?", re.I)
# What may follow a label: an end, punctuation, a reason, or echoed option text ("B London"), but
# not a word that continues a sentence ("B is wrong") nor an abbreviation ("i.e.").
_LABEL_END = re.compile(r"[ \t]*(?:$|[.,:;!?)\]–—\-(](?!\w\.)|(?:because|since|as|given|but|and\s+not)\b"
                        rf"|{alternation(phrases('line_tail'))}|[A-Z0-9\"“(])")
_LOWER_LABEL_END = re.compile(r"[.)](?:\s|$)|$")
VERDICT = re.compile(
    r"(?:^[\s.:)\-–—*]*|[-–—:(]\s*\**\s*)(?:(?:this|it)\s+is\s+)?"
    r"(?:(?P<neg>incorrect|false|wrong|no|not\s+correct|✗|✘|❌)|(?P<pos>correct|true|right|yes|✓|✔|✅))(?!\w)",
    re.I,
)
_EMPHASIS = re.compile(r"\*\*[ \t]*\(?([A-Za-z])\)?[ \t]*\*\*|(?<![\w'’])[(\[]([A-Z])[)\]]")


def _answer_line(line: str) -> tuple[list[str], bool] | None:
    """(letters, hedged) of a line that is nothing but an answer; None for any other line."""
    body = line[match_end(_BULLET, line, 0) :]
    letters, hedged, end = read_list(body, match_end(_LEAD, body, 0), loose=True)
    if not letters or not _LINE_END.fullmatch(body, end):
        return None
    return letters, hedged


def answer_lines(s: str, valid: str) -> Reading:
    """The letters of the block of answer lines that ends the reply, else of the one that opens it."""
    readings = [_answer_line(line) for line in s.split("\n") if line.strip()]

    def block(rows: list[tuple[list[str], bool] | None]) -> Reading:
        letters: list[str] = []
        for row in rows:
            if row is None:
                break
            if finish(*row, valid) == ():
                return ()
            letters += row[0]
        return finish(letters, False, valid)

    # The closing block is the reply's last word; the opening one a leading answer.
    last = block(readings[::-1])
    return last if last is not None else block(readings)


def _label(line: str) -> tuple[list[str], str] | None:
    """The letters labelling a line and the text after them, or None if it is not labelled."""
    body = line[match_end(_BULLET, line, 0) :]
    start = match_end(_LEAD, body, 0)
    m = TOKEN.match(body, start)
    letters, hedged, end = read_list(body, start, loose=True)
    if not m or hedged or not letters:
        return None
    rest = body[end:]
    if not (m["w"] or m["o"] or m["c"]):
        if m["l"].islower():
            if not _LOWER_LABEL_END.match(rest):
                return None
        elif not token_ok(m, body, loose=False) or not _LABEL_END.match(rest):
            return None
    return letters, rest


def labelled(lines: list[str], valid: str) -> Reading:
    """The block of letter-labelled lines at the start of ``lines``."""
    rows: list[tuple[list[str], str]] = []
    for line in lines:
        if not line.strip():
            continue
        if (row := _label(line)) is None:
            break
        rows.append(row)
    verdicts = [VERDICT.search(rest) for _, rest in rows]
    if any(verdicts):
        rows = [row for row, v in zip(rows, verdicts, strict=True) if v and v["pos"]]
    return finish([x for letters, _ in rows for x in letters], False, valid)


def emphasis(s: str, valid: str) -> Reading:
    """Bold or bracketed letters anywhere in the reply."""
    return finish([(a or b).upper() for a, b in _EMPHASIS.findall(s)], False, valid)
