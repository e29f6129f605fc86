"""Options named by their place or by the whole set: ordinals, exclusions, "all/none of the above", "the rest".

- "the third option", "the last one", "option 3" name C, D (of four) and C: they are rewritten as the letter.
- "all except C", "everything but leaf area index", "除了C和E", "C 以外すべて" choose every option but the
  named ones (and reject those); an option that itself says "all/none of the above" is not among them.
- "all of the above" in an answer position (the whole line, or after "the answer is", "so", a colon) is the
  option that says so, else every option; "none of the above" is the option that says so.
- "the others are" / "the rest" after rejections chooses the options not rejected.
"""

from __future__ import annotations

import re

from runner.scorers.reading.options import Options
from runner.scorers.reading.phrases import alternation, ordinals, phrases, table
from runner.scorers.reading.tokens import read_list

_ORDINALS = ordinals()
_ORD = alternation(_ORDINALS)
_NOUN = alternation(phrases("ordinal_nouns"))
_ARTICLE = alternation(phrases("ordinal_articles"))
_NUMBERS = {k.lower(): int(v) for k, v in table()["numbers"]["en"].items()}
# "the first, second and fourth": ordinals listed after one article.
_ORDS = rf"{_ORD}(?:\s*(?:,\s*(?:and\s+|or\s+)?|\s+and\s+|\s+or\s+)(?:{_ARTICLE}\s+)?{_ORD})*"
_PLACE = re.compile(
    rf"(?:{_ARTICLE}\s+)?(?P<o>{_ORD})\s+{_NOUN}"
    rf"|{_ARTICLE}\s+(?P<os>{_ORDS})(?=\s*(?:[.,;:!?)]|$|\s+(?:and|or)\s+{_ARTICLE}\s+{_ORD}))"
    rf"|(?<![\w'’]){alternation(phrases('numbered'))}\s*(?:#|no\.?|number)?\s*"
    rf"(?P<n>\d{{1,2}}|{alternation(_NUMBERS)})(?![\w.,]\d)",
    re.I | re.M)
_ONE_ORD = re.compile(rf"(?:{_ARTICLE}\s+)?(?P<o>{_ORD})", re.I)
_ALL = alternation(phrases("exclusion", "all"))
_EXCEPT = alternation(phrases("exclusion", "except"))
_EXCLUSION = re.compile(rf"(?<![\w'’]){_ALL}\s*,?\s+(?:{_EXCEPT})\s+(?P<tail>[^.;:!?\n—–]{{1,120}})"
                        rf"|{alternation(phrases('exclusion', 'before'))}\s*(?P<tail2>[^.;:!?\n,]{{1,80}})", re.I)
_EXCLUDED_AFTER = re.compile(rf"(?P<tail>(?>(?:\(?[A-Z]\)?(?:\s*(?:,|and|or)\s*)?)+))\s*"
                             rf"{alternation(phrases('exclusion', 'after'))}")
_SUFFIX = re.compile(alternation(phrases("exclusion", "after")))
_PAREN_LETTERS = re.compile(r"\(([A-Z](?:\s*(?:,|and|&)\s*[A-Z])*)\)")
_ARTICLES = re.compile(r"^(?:l['’]|(?:the|la|le|les|el|los|las|il|lo|o|a|os|as|die|der|das)\s+)+", re.I)
_ABOVE = alternation(phrases("all_of_the_above"))
_NONE = alternation(phrases("none_of_the_above"))
# An answer position: the start of a line (after bullets, bold and an "answer:" label) or after a statement.
_LEAD = r"(?:^|(?<=\n))[ \t*_>#-]*(?:(?:final\s+)?answers?\s*:?\s*)?|\b(?:is|are|so|choose|pick|select)\s+|:\s*"
_WHOLE = r"(?=[ \t*_]*(?:[.!,;:)(—–-]|$))"
_EVERY = re.compile(rf"(?:{_LEAD})(?P<w>{_ABOVE}){_WHOLE}", re.I | re.M)
_NO_OPTION = re.compile(rf"(?:{_LEAD})(?P<w>{_NONE}){_WHOLE}", re.I | re.M)
_WORDS = re.compile(r"[^\W\d_]+")
_CJK = re.compile(r"[\u3000-\u30ff\u3400-\u9fff]")
_PLACE_WORDS = frozenset(w for p in [*_ORDINALS, *phrases("numbered")] for w in _WORDS.findall(p))
_SCOPE_WORDS = frozenset(w for p in [*phrases("exclusion", "all"), *phrases("exclusion", "before"),
                                     *phrases("all_of_the_above"), *phrases("none_of_the_above")]
                         for w in _WORDS.findall(p)[:1])
_ABSTAIN = re.compile(alternation(phrases("abstain")), re.I)
_REST = re.compile(alternation(phrases("exclusion", "rest")), re.I)


def _letter(valid: str, place: int) -> str | None:
    index = len(valid) + place if place < 0 else place - 1
    return valid[index] if 0 <= index < len(valid) else None


def _has(s: str, words: frozenset[str]) -> bool:
    """Whether `s` holds one of the words (a pattern of many phrases tried at every character costs more)."""
    return not words.isdisjoint(_WORDS.findall(s.lower())) or bool(_CJK.search(s))


def places(s: str, valid: str) -> str:
    """Options named by place rewritten as their letter ("(A)" for A and I, which read as words when bare)."""
    if not _has(s, _PLACE_WORDS):
        return s
    def name(x: str | None) -> str | None:
        return None if x is None else f"({x})" if x in "AI" else x

    def letter(m: re.Match[str]) -> str:
        if m["os"]:
            return _ONE_ORD.sub(lambda o: name(_letter(valid, _ORDINALS[o["o"].lower()])) or o[0], m["os"])
        place = _ORDINALS[m["o"].lower()] if m["o"] else _NUMBERS.get(m["n"].lower()) or int(m["n"])
        return name(_letter(valid, place)) or m[0]

    return _PLACE.sub(letter, s)


def _excluded(tail: str, valid: str, options: Options) -> set[str]:
    inside = _PAREN_LETTERS.search(tail)
    if inside:
        return {x for x in re.findall(r"[A-Z]", inside[1]) if x in valid}
    body = _ARTICLES.sub("", tail.strip())
    letters, _, _ = read_list(body, 0, loose=False)
    if letters:
        return {x for x in letters if x in valid}
    listed = options.as_list(body) if options else None
    if listed:
        return set(listed)
    return {x for _, _, x in options.mentions(tail)} if options else set()


def exclusions(s: str, valid: str, options: Options) -> tuple[str, set[str]]:
    """The reply with each exclusion rewritten as the options it chooses, and the options it excludes."""
    excluded: set[str] = set()
    if not _has(s, _SCOPE_WORDS):
        return s, excluded
    others = {options.says_all, options.says_none} - {None}

    def chosen(m: re.Match[str]) -> str:
        names = _excluded(m["tail"] if m["tail"] is not None else m["tail2"], valid, options)
        keep = [x for x in valid if x not in names and x not in others]
        if not names or not keep:
            return m[0]
        excluded.update(names)
        return " " + ", ".join(keep) + " "

    if _SUFFIX.search(s):  # looked for first: the pattern tries every letter of the reply
        s = _EXCLUDED_AFTER.sub(chosen, s)
    return _EXCLUSION.sub(chosen, s), excluded


def every_or_none(s: str, valid: str, options: Options) -> str:
    """"all of the above" and "none of the above" in an answer position, rewritten as the options they name."""
    if not _has(s, _SCOPE_WORDS):
        return s
    every = options.says_all or ", ".join(x for x in valid if x != options.says_none)
    s = _EVERY.sub(lambda m: m[0][: m.start("w") - m.start()] + f" {every} ", s)
    if options.says_none:
        s = _NO_OPTION.sub(lambda m: m[0][: m.start("w") - m.start()] + f" {options.says_none} ", s)
    return s


def abstains(s: str) -> bool:
    """Whether the reply declines to answer ("I don't know", "none of the above" with no such option)."""
    return bool(_ABSTAIN.search(s) or _NO_OPTION.search(s))


def rest(s: str, valid: str, rejected: set[str]) -> tuple[str, ...] | None:
    """After rejections, "the others are" / "the rest": the options not rejected."""
    if not rejected or not _REST.search(s):
        return None
    keep = tuple(x for x in valid if x not in rejected)
    return keep or None
