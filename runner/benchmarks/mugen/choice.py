"""Reading which clip a free-form reply picks, without a judge: letters and clip references.

Used where the runner must read many replies itself: the self-consistency vote (each generation's
choice, mapped back through its shuffled order) and each record's `answer` field. The official score
stays the LLM judge's, as in the paper. The policy follows the rubric the judge gets:

- a letter counts as runner.scorers.letters reads it: "(B)", "b", "**B**", "The answer is B.";
- so does a clip reference: "Audio 2", "clip #2", "the second clip", "2nd recording", "audio two";
- letters and clip references that agree ("Audio 2 (B)") are one choice;
- several different options, a hedge between options, or nothing at all is no choice (None). A reply
  that mentions several clips still counts when exactly one is stated as the answer ("The answer is
  Audio 2; Audio 1 is too quiet").
"""

from __future__ import annotations

import re

from runner.scorers.letters import extract_choices
from runner.untrusted import for_reading

_LETTERS = "ABCDEFGHIJ"
_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9}
_ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
             "eighth": 8, "ninth": 9, "1st": 1, "2nd": 2, "3rd": 3, "4th": 4, "5th": 5, "6th": 6,
             "7th": 7, "8th": 8, "9th": 9}
_NOUN = r"(?:audio(?:\s+(?:clip|sample|file|recording|segment))?|clip|recording|sample|track|candidate|file|segment)s?"
_NUMBERED = re.compile(rf"\b{_NOUN}\s*(?:no\.?\s*|number\s+|#\s*)?(?P<n>[1-9]|{'|'.join(_WORDS)})\b", re.I)
_ORDINAL = re.compile(
    rf"\b(?P<o>{'|'.join(_ORDINALS)}|last)\s+(?:(?:one|option|choice)\b|{_NOUN}\b)", re.I)
_CUE = re.compile(r"(?:\banswer\b|\bchoice\b|\bchoose\b|\bpick\b|\bselect(?:ion)?\b|\bgo(?:ing)?\s+with\b"
                  r"|\bit\s+is\b|\bit['’]s\b|\bis\s+the\b|\bmatches\b|:)[^.\n]{0,40}$", re.I)
_HEDGE = re.compile(r"\b(?:or|maybe|perhaps|possibly|either)\b", re.I)
_THINK = re.compile(r"<think(?:ing)?>.*?(?:</think(?:ing)?>|\Z)", re.S | re.I)


def _clip_refs(text: str, n: int) -> list[tuple[int, int, int]]:
    """(start, end, option index from 0) of every clip reference in range, in reply order."""
    refs: list[tuple[int, int, int]] = []
    for m in _NUMBERED.finditer(text):
        raw = m["n"].lower()
        number = int(raw) if raw.isdigit() else _WORDS[raw]
        refs.append((m.start(), m.end(), number - 1))
    for m in _ORDINAL.finditer(text):
        raw = m["o"].lower()
        refs.append((m.start(), m.end(), n - 1 if raw == "last" else _ORDINALS[raw] - 1))
    return sorted(r for r in refs if 0 <= r[2] < n)


def _clip_choice(text: str, n: int) -> int | None | str:
    """The option a reply's clip references pick; None if none are mentioned; "ambiguous" otherwise."""
    refs = _clip_refs(text, n)
    options = {r[2] for r in refs}
    if not options:
        return None
    if len(options) == 1:
        return refs[0][2]
    # Several clips are mentioned: a hedge between two of them is no answer; otherwise an answer
    # statement right before one reference decides ("The answer is Audio 2; Audio 1 is too quiet").
    between = [text[a[1]:b[0]] for a, b in zip(refs, refs[1:], strict=False)]
    if any(_HEDGE.search(gap) and a[2] != b[2] for gap, a, b in zip(between, refs, refs[1:], strict=False)):
        return "ambiguous"
    starts = [0] + [r[1] for r in refs[:-1]]  # a cue belongs to the reference right after it
    cued = {r[2] for r, lo in zip(refs, starts, strict=True) if _CUE.search(text[max(lo, r[0] - 60):r[0]])}
    return cued.pop() if len(cued) == 1 else "ambiguous"


def read_choice(text: str | None, n_options: int) -> str | None:
    """The letter of the one option the reply picks (A = Audio 1), or None if it picks none or several."""
    if not text or n_options <= 0:
        return None
    s = _THINK.sub(" ", for_reading(text))
    s = re.split(r"</think(?:ing)?>", s, flags=re.I)[-1]
    letters = extract_choices(s, n_options)
    clip = _clip_choice(s, n_options)
    if clip == "ambiguous" or len(letters) > 1:
        return None
    clip_letter = _LETTERS[clip] if isinstance(clip, int) else None
    letter = letters[0] if letters else None
    if clip_letter and letter and clip_letter != letter:
        return None
    return clip_letter or letter
