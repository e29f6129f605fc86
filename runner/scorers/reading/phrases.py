"""The phrase table (phrases.yaml) compiled into patterns: the reader's words are data, one list per language.

Each list becomes one alternation (longest phrase first, spaces as any whitespace, either apostrophe); a
phrase of Latin script must stand as whole words, one of Chinese or Japanese script need not.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

import yaml

TABLE_FILE = Path(__file__).with_name("phrases.yaml")
_CJK = re.compile(r"[\u3000-\u30ff\u3400-\u9fff\uac00-\ud7af]")


@cache
def table() -> dict[str, Any]:
    """The phrase table as written in phrases.yaml."""
    with TABLE_FILE.open(encoding="utf-8") as f:
        data: dict[str, Any] = yaml.safe_load(f)
    return data


def phrases(*path: str) -> list[str]:
    """Every language's phrases under `path` (e.g. "reject", "after"), lower case."""
    node: Any = table()
    for key in path:
        node = node[key]
    if isinstance(node, Mapping):
        node = [p for per_language in node.values() for p in per_language]
    return [str(p).lower() for p in node]


def key(text: str) -> str:
    """How a matched phrase is looked up: lower case, single spaces, straight apostrophes."""
    return " ".join(text.lower().replace("’", "'").split())


def _one(phrase: str) -> str:
    body = r"\s+".join(re.escape(w).replace("'", "['’]") for w in phrase.split())
    if _CJK.search(phrase):
        return body
    head = r"(?<![\w'’])" if re.match(r"\w", phrase) else ""
    tail = r"(?![\w'’])" if re.search(r"\w$", phrase) else ""
    return head + body + tail


def alternation(items: Iterable[str]) -> str:
    """One regex alternation of the phrases, longest first, each bounded as its script needs."""
    unique = sorted({p for p in items if p.strip()}, key=lambda p: (-len(p), p))
    return "(?:" + "|".join(_one(p) for p in unique) + ")" if unique else "(?!)"


def compiled(*path: str, flags: int = re.I) -> re.Pattern[str]:
    """The alternation of the phrases under `path`, compiled."""
    return re.compile(alternation(phrases(*path)), flags)


_WORD = re.compile(r"(?<![\w'’])[^\W\d_]+")


@cache
def _rewrites() -> tuple[dict[str, re.Pattern[str]], re.Pattern[str], dict[str, str]]:
    """The phrases to rewrite by their first word (Latin script), those of Chinese and Japanese script in one
    pattern, and each phrase's English. Looking phrases up by their first word keeps a long reply linear: one
    alternation of every phrase, tried at every character, took 0.13 s on 9,000 characters."""
    target: dict[str, str] = {}
    for english, per_language in table()["rewrite"].items():
        for items in per_language.values():
            for p in items:
                target.setdefault(key(str(p)), str(english))
    by_word: dict[str, list[str]] = {}
    for p in target:
        if not _CJK.search(p):
            by_word.setdefault(_WORD.match(p)[0], []).append(p)  # type: ignore[index]
    first = {w: re.compile(alternation(ps), re.I) for w, ps in by_word.items()}
    return first, re.compile(alternation(p for p in target if _CJK.search(p))), target


def rewrite(s: str) -> str:
    """Every phrase of another language replaced by the English phrase the readers know."""
    first, cjk, target = _rewrites()
    out: list[str] = []
    done = 0
    for m in _WORD.finditer(s):
        if m.start() < done or (pattern := first.get(m[0].lower())) is None:
            continue
        if found := pattern.match(s, m.start()):
            out += [s[done : m.start()], f" {target[key(found[0])]} "]
            done = found.end()
    s = "".join(out) + s[done:]
    return cjk.sub(lambda m: f" {target[key(m[0])]} ", s) if _CJK.search(s) else s


@cache
def _joins() -> re.Pattern[str]:
    joins = table()["between_letters"]
    words = {key(str(p)): "and" for items in joins["and"].values() for p in items}
    words.update({key(str(p)): "or" for items in joins["or"].values() for p in items})
    letter = r"(?<![\w'’])[(\[*]*[A-Z][)\]*]*"
    return re.compile(rf"({letter})[ \t]*({alternation(words)})[ \t]*(?=[(\[*]*[A-Z](?![\w'’]))")


@cache
def _ors() -> frozenset[str]:
    return frozenset(key(str(p)) for items in table()["between_letters"]["or"].values() for p in items)


def join_letters(s: str) -> str:
    """Letters joined in another language ("A et C", "A、C") joined in English ("A and C")."""
    return _joins().sub(lambda m: f"{m[1]} {'or' if key(m[2]) in _ors() else 'and'} ", s)


def ordinals() -> dict[str, int]:
    """Ordinal word -> place (1-based; -1 the last), every language."""
    return {key(str(k)): int(v) for per_language in table()["ordinals"].values() for k, v in per_language.items()}
