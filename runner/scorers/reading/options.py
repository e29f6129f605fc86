"""Options named by their text ("Sentinel-3", "sea surface heights") rather than their letter.

An option's text is matched as its words in order, whatever the case, punctuation and plural ("Sentinel 3",
"sentinel-3", "ice sheet elevations"); also without its parentheses ("B2" for "B2 (blue)") and without the
words every option shares ("sun-synchronous" for "Sun-synchronous orbit" when every option is an orbit).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from runner.scorers.reading.phrases import alternation, phrases
from runner.scorers.reading.tokens import Reading

_PUNCTUATION = re.compile(r"[^\w\s]")
_PARENS = re.compile(r"\([^()]*\)")
_LETTER_WORD = re.compile(r"(?<![\w'’])[A-Z](?![\w'’])")
# An item of a list of option texts: articles before it, "too"/"only" after it and its parentheses go.
_ARTICLES = re.compile(r"^(?:(?:the|a|an|le|la|les|l'|el|los|las|il|lo|gli|o|os|as|der|die|das|both|only|just"
                       r"|also|plus)\s+)+", re.I)
_TAIL = re.compile(r"\s+(?:too|as well|only|both)$", re.I)
# A list of option texts ends where the reply turns to what it rejects: "A, B and D — not C".
_NOT_TAIL = re.compile(r"\s*(?:[,;(]|\s[-–—])?\s*(?:but\s+|and\s+)?(?:not|except)\b.*$", re.I | re.S)
_REJECTING = re.compile(rf"(?:{alternation(phrases('reject', 'before'))})\s+(?:the\s+)?$", re.I)
_REJECTED = re.compile(rf"\s*(?:\([^()]*\)\s*)?(?:{alternation(phrases('reject', 'after'))})", re.I)
_DENIED = re.compile(rf"\s*(?:\([^()]*\)\s*)?(?:{alternation(phrases('reject', 'not'))})", re.I)
_JOINS = ["and", "as well as", "plus", "and also", *phrases("between_letters", "and")]
_ITEM_SPLIT = re.compile(rf"\s*(?:[,;&+/\n]|\s[-–—]\s|{alternation(_JOINS)})\s*", re.I)


_SAYS_ALL, _SAYS_NONE = set(phrases("all_of_the_above")), set(phrases("none_of_the_above"))


# "A) <text of A>", "A (<text of A>)" and "<text of A> (A)": the text beside its own letter.
_ECHO_BEFORE = re.compile(r"(?<![\w'’])([A-Z])\**[ ]?[).:]?\**[ ]?(\([ ]?)?\Z")
_ECHO_AFTER = re.compile(r"[ ]?\(([A-Z])\)")
_CLOSE = re.compile(r"[ ]?\)")


@lru_cache(maxsize=4096)
def _compiled(aliases: tuple[str, ...]) -> re.Pattern[str]:
    """One option's forms as a pattern; kept, since compiling one costs more than reading a short reply."""
    return re.compile("|".join(_pattern(a) for a in aliases), re.I)


def _singular(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


@lru_cache(maxsize=8192)
def normalise(s: str) -> str:
    """Lower case, punctuation as spaces, whitespace collapsed, each word singular."""
    return " ".join(_singular(w) for w in _PUNCTUATION.sub(" ", s.lower()).split())


def _pattern(alias: str) -> str:
    words = [re.escape(w) + r"(?:e?s)?" for w in alias.split()]
    return r"(?<![\w])" + r"[\W_]*".join(words) + r"(?![\w])"


class Options:
    """The options of one question: each letter's text and the forms of it a reply may use."""

    def __init__(self, valid: str, texts: Sequence[str] | None, reply: str = "") -> None:
        self.valid = valid
        self.texts = {x: str(t) for x, t in zip(valid, texts or (), strict=False)}
        self.aliases: dict[str, set[str]] = {x: {normalise(t)} - {""} for x, t in self.texts.items()}
        for x, t in self.texts.items():
            bare = normalise(_PARENS.sub(" ", t))
            if bare:
                self.aliases[x].add(bare)
        shared = set.intersection(*(set(normalise(t).split()) for t in self.texts.values())) \
            if len(self.texts) >= 3 else set()
        for x, t in self.texts.items():
            rest = " ".join(w for w in normalise(t).split() if w not in shared)
            if shared and re.search(r"[^\W\d_]{4}", rest):
                self.aliases[x].add(rest)
        # An alias two options share names neither.
        counts: dict[str, int] = {}
        for names in self.aliases.values():
            for a in names:
                counts[a] = counts.get(a, 0) + 1
        self.aliases = {x: {a for a in names if counts[a] == 1} for x, names in self.aliases.items()}
        # Patterns only for the options the reply may name (their words are in it): compiling one costs more
        # than reading a short reply.
        words = f" {normalise(reply)} "
        self._found = {x: _compiled(tuple(sorted(names, key=len, reverse=True)))
                       for x, names in self.aliases.items() if any(f" {a} " in words for a in names)}
        self.says_all = next((x for x, t in self.texts.items() if _plain(t) in _SAYS_ALL), None)
        self.says_none = next((x for x, t in self.texts.items() if _plain(t) in _SAYS_NONE), None)

    def __bool__(self) -> bool:
        return bool(self.texts)

    def mentions(self, s: str) -> list[tuple[int, int, str]]:
        """(start, end, letter) of each option text in `s`, a text inside a longer one's match left out."""
        found = sorted(((m.start(), m.end(), x) for x, p in self._found.items() for m in p.finditer(s)),
                       key=lambda f: (f[0], -f[1]))
        kept, reach = [], -1
        for f in found:  # by start, the longest first: a match ending within an earlier one's reach is inside it
            if f[1] > reach:
                kept.append(f)
                reach = f[1]
        return kept

    def item(self, text: str) -> str | None:
        """The letter whose text `text` is (articles, parentheses, trailing "too" aside): whole, else a part of
        one option's text only, of two words or one of five letters ("gravity field", "Chlorophyll-a")."""
        body = normalise(_TAIL.sub("", _ARTICLES.sub("", _PARENS.sub(" ", text).strip(" .!*_:"))))
        hits = {x for x, names in self.aliases.items() if body in names}
        if not hits and (" " in body or len(body) >= 5):
            hits = {x for x, names in self.aliases.items() if any(f" {body} " in f" {a} " for a in names)}
        return hits.pop() if len(hits) == 1 else None

    def as_list(self, text: str) -> Reading:
        """The letters of `text` when it is nothing but option texts joined by commas, "and", newlines..."""
        text = _NOT_TAIL.sub("", _PARENS.sub(" ", text))
        items = [i for i in _ITEM_SPLIT.split(text.strip(" .!*_:\n")) if i.strip(" .*_-")]
        letters = [self.item(i.strip(" .*_-")) for i in items]
        if not letters or any(x is None for x in letters):
            return None
        return tuple(sorted({x for x in letters if x}))

    def rejected(self, s: str) -> tuple[set[str], set[str]]:
        """(strongly, weakly) rejected options named by text: "not Sentinel-2", "5 meters? No", "Landsat 9
        is not" (weak: see negation.py)."""
        strong: set[str] = set()
        weak: set[str] = set()
        for start, end, x in self.mentions(s):
            if _REJECTING.search(s, max(0, start - 30), start) or _REJECTED.match(s, end):
                strong.add(x)
            elif _DENIED.match(s, end):
                weak.add(x)
        return strong, weak - strong

    def echoes(self, s: str) -> str:
        """Option texts written beside their own letter dropped: "A) Multispectral radiometer and C) ..." reads
        "A) and C)", "A (Land monitoring)" reads "A", "NDVI (B)" reads "B"."""
        out: list[str] = []
        done = 0
        for start, end, x in self.mentions(s):
            lead = _ECHO_BEFORE.search(s, max(0, start - 8), start)
            if lead and lead[1] == x and start >= done:
                close = _CLOSE.match(s, end) if lead[2] else None
                if not lead[2] or close:
                    out.append(s[done:start].rstrip("( "))
                    done = close.end() if close else end
                    continue
            trail = _ECHO_AFTER.match(s, end)
            if trail and trail[1] == x and start >= done:
                out.append(s[done:start])
                done = trail.start(1) - 1
        return "".join(out) + s[done:]

    def lettered(self, s: str) -> str:
        """Option texts that hold a letter of their own ("C-band", "Plan B") replaced by their option's
        letter, so "The answer is C-band" reads B, not C."""
        for x, t in self.texts.items():
            own = {w for w in _LETTER_WORD.findall(t) if w in self.valid}  # "GCOM-W" holds no option's letter
            if own and not _LETTER_WORD.fullmatch(t.strip()):
                s = self._found[x].sub(x, s) if x in self._found else s
        return s


def _plain(text: str) -> str:
    return " ".join(_PUNCTUATION.sub(" ", text.lower()).split())


def option_text(s: str, options: Options, strong: set[str], weak: set[str]) -> tuple[Reading, bool]:
    """(letters, sure) of a reply naming options by their text: the whole reply as a list of option texts,
    else the one option it mentions and does not reject; several mentioned is unsure."""
    whole = options.as_list(s)
    if whole and len(whole) == len(options.texts) == 2:
        return (), True  # "Yes and no" to a yes/no question answers neither
    if whole:
        return whole, True
    hits = {x for _, _, x in options.mentions(s)} - strong
    if len(hits) > 1:
        hits -= weak
    if len(hits) == 1:
        return tuple(hits), True
    return None, not hits
