"""Reading a reply against its question, as a careful human does: which of the reply's groups answers it.

A question's words tie a group of options to it (a word counts when the question has it, or shares its first
five letters and more, "measured" for "measure"); a group is tied when more of its words are the question's
than not, so "D is an atmospheric mission" is not tied to "Which Sentinel mission carries OLCI?":

- labelled groups: "Passive: A, C. Active: B, D." to "Which ... are passive sensors?" reads A, C (and rejects
  B, D), when exactly one group's label is tied by the words that tell the labels apart;
- a subject that names the asked property: "The passive ones are A and C", "The radar missions are Sentinel-1
  and Sentinel-3";
- options given the asked property: "A is passive. C is also passive. B and D are active." reads A, C.

A negative question ("Which is NOT ...", "all EXCEPT") turns these around, so they are not used for it. One
form needs no question: a short subject and "are" before nothing but letters ending the sentence ("Aktiv
sind A, B und D.", "主动遥感仪器是A、B和D。").
"""

from __future__ import annotations

import re

from runner.scorers.reading.options import Options, normalise
from runner.scorers.reading.tokens import LIST, LIST_START, Reading, read_list

_STOP = {"which", "following", "these", "those", "that", "this", "what", "does", "with", "from", "their", "there",
         "have", "answer", "option", "options", "correct", "true", "false", "select", "choose", "among", "below",
         "above", "best", "most", "about", "into", "when", "where", "they", "them", "would", "could", "should",
         "each", "only", "also", "statement", "item", "apply", "both", "then", "than", "other", "ones"}
_START = r"(?:^|(?<=[\n.;!?|]))[ \t*_-]*"
_GROUP = re.compile(rf"{_START}(?P<label>[^\W\d_][\w '’-]{{0,40}}?)\**[ \t]*:[ \t]*(?P<list>{LIST})"
                    r"(?=[ \t*_]*(?:[|\n.;]|$))", re.I | re.M)
_SUBJECT = re.compile(rf"{_START}(?P<subj>(?:[\w'’-]+[ \t]+){{0,5}}?[\w'’-]+)[ \t]+(?:is|are|was|were)[ \t]+"
                      r"(?:(?:both|all|also)[ \t]+)?(?P<tail>[^.;!?\n]{1,160})", re.I | re.M)
_LETTERS_END = re.compile(rf"(?P<list>{LIST})[ \t*_]*(?:[.;!]|\s*$)")
_HAS = re.compile(rf"{LIST_START}(?P<list>{LIST})[ \t]+(?:is|are)[ \t]+(?:(?:also|both|all)[ \t]+)?"
                  r"(?P<pred>[^.,;!?\n]{1,40}?)(?=[.,;!?\n]|$|\s+(?:and|but|while|whereas|since|because|so)\b)",
                  re.M)
_NEGATIVE = re.compile(r"\b(?:not|no|never|neither|nor|none)\b|n['’]t\b", re.I)
_NEGATIVE_QUESTION = re.compile(r"\b(?:NOT|EXCEPT|LEAST|FALSE|INCORRECT)\b|\b(?:not|except|false|incorrect)\b")
_LISTY = re.compile(r"\b(?:options?|choices?|answers?|letters?|alternatives?)\b", re.I)
_CUT = re.compile(r"[ \t]*,?[ \t]*(?:whereas|while|but|since|because|so)\b.*", re.I)


def _words(text: str) -> set[str]:
    return {w for w in normalise(text).split() if (len(w) >= 4 or w.isdigit()) and w not in _STOP}


def _known(word: str, asked: set[str]) -> bool:
    return word in asked or (len(word) >= 5 and any(len(a) >= 5 and (a.startswith(word[:-1]) or word.startswith(
        a[:-1])) and min(len(a), len(word)) >= 5 for a in asked))


def _tied(text: str, asked: set[str]) -> bool:
    words = _words(text)
    shared = {w for w in words if _known(w, asked)}
    return len(shared) > len(words - shared)


def _letters(s: str, start: int, valid: str) -> list[str]:
    found, _, _ = read_list(s, start, loose=False)
    return [x for x in found if x in valid]


def _groups(s: str, valid: str, asked: set[str]) -> tuple[Reading, set[str]]:
    groups = [(_words(m["label"]), _letters(s, m.start("list"), valid)) for m in _GROUP.finditer(s)]
    groups = [(words, letters) for words, letters in groups if letters]
    if len(groups) < 2:
        return None, set()
    common = set.intersection(*(words for words, _ in groups))
    tied = [letters for words, letters in groups if any(_known(w, asked) for w in words - common)]
    if len(tied) != 1:
        return None, set()
    others = {x for _, letters in groups for x in letters} - set(tied[0])
    return tuple(sorted(set(tied[0]))), others


def topic(s: str, valid: str, question: str | None, options: Options) -> tuple[Reading, set[str]]:
    """(letters, options rejected) read against the question; (None, set()) when nothing ties to it."""
    asked = set() if question and _NEGATIVE_QUESTION.search(question) else _words(question or "")
    if asked and (grouped := _groups(s, valid, asked))[0]:
        return grouped
    for m in _SUBJECT.finditer(s):
        subject, tail = m["subj"], m["tail"]
        if _NEGATIVE.search(subject) or _LISTY.search(subject) or _NEGATIVE.match(tail):
            continue
        # Options named as the subject of the asked property: "Sentinel-2 and Landsat 9 are polar-orbiting".
        if asked and options and _tied(_CUT.sub("", tail), asked) and (named := options.as_list(subject)):
            return named, set()
        short = len(subject.split()) <= 4 and _LETTERS_END.fullmatch(tail.strip() + ".")
        if not (short or (asked and _tied(subject, asked))):
            continue
        if letters := _letters(s, m.start("tail"), valid):
            return tuple(sorted(set(letters))), set()
        for part in (_CUT.sub("", tail), tail.split(",")[0]) if asked and options else ():
            if listed := options.as_list(part):
                return listed, set()
    chosen = set()
    for m in _HAS.finditer(s) if asked else ():
        if _tied(m["pred"], asked) and not _NEGATIVE.search(m["pred"]):
            chosen.update(_letters(s, m.start("list"), valid))
    return (tuple(sorted(chosen)) if chosen else None), set()
