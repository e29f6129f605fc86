"""The reading of one reply: its forms brought to one shape, then read by each reader in turn until one finds
evidence, then checked against what the reply rejects and hedges (docs/reading-replies.md).

A capital letter in prose is not evidence on its own: the pronoun "I" and the article "A" followed by a word
are never options. Lower-case letters count only as a whole answer, after a statement, inside brackets/bold,
or as a line label ("b. 4"). Letters joined by "or"/"maybe"/"/" are a hedge: no answer. Letters outside the
valid range are dropped. ``extract_choice`` returns a letter only when the reading selects exactly one, so a
reply naming two options ("A and C are correct", "Both A and C") is not a single answer; ``extract_choices``
returns them all.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from runner.scorers.reading.clean import clean, unthink
from runner.scorers.reading.extras import added, hedged
from runner.scorers.reading.forms import answer_fields, marks, own_parentheses, parenthesised_lists, prepare
from runner.scorers.reading.lines import answer_lines, emphasis, labelled
from runner.scorers.reading.negation import rejections
from runner.scorers.reading.options import Options, option_text
from runner.scorers.reading.scope import abstains, every_or_none, exclusions, places, rest
from runner.scorers.reading.statements import STATEMENT, assertion, closing, hedge, statement
from runner.scorers.reading.tokens import LETTERS, Reading
from runner.scorers.reading.topic import topic
from runner.untrusted import for_reading

_SPACES = re.compile(r"[^\S\n]+")
# Readers that name their options (an answer statement, a line of letters, a labelled line): a weak rejection
# ("C is not a JAXA satellite") does not take an option out of their reading; the others collect letters from
# anywhere in the reply, and it does.
_EXPLICIT = {"statement", "marks", "answer_lines", "hedge", "assertion", "topic", "closing", "labelled"}


_RUN = re.compile(r"[\s*_]*([A-Z]{2,6})[\s*_.!]*")


def run_together(s: str, valid: str) -> Reading:
    """A reply that is nothing but capitals in order, "AC" or "ABD": those options."""
    m = _RUN.fullmatch(s)
    run = m[1] if m else ""
    return tuple(run) if run and list(run) == sorted(set(run)) and set(run) <= set(valid) else None


@dataclass(frozen=True)
class Reply:
    """What the rules read in a reply."""

    letters: tuple[str, ...]
    """The options chosen, sorted and unique; () for none."""
    sure: bool
    """False when the rules found nothing to read, or only readings the reply contradicts (every option read
    is one it rejects, several options named by text in prose): a task's extractor, if set, is asked."""
    rejected: tuple[str, ...] = ()
    """The options the reply rejects (never among `letters`)."""


def _prepared(text: str, valid: str, texts: Sequence[str] | None) -> tuple[str, str, set[str], Options]:
    """(the reply for the letter readers, the reply for option texts, the options an exclusion names, the
    options)."""
    fields = answer_fields(unthink(text))  # before quotes are dropped: they make the JSON
    s = prepare(clean(fields or text))
    options = Options(valid, texts, s)
    letters = places(options.lettered(own_parentheses(options.echoes(s))), valid)
    letters, excluded = exclusions(letters, valid, options)
    letters = every_or_none(parenthesised_lists(letters), valid, options)
    return _SPACES.sub(" ", letters), s, excluded, options


def read_reply(text: str | None, n_choices: int, option_texts: Sequence[str] | None = None,
               question: str | None = None) -> Reply:
    """The options a reply chooses, read as a careful human reads it; `question` lets a reply that answers by
    naming the asked property ("Passive: A, C. Active: B, D.") be read."""
    if not text or not text.strip() or n_choices <= 0:
        return Reply((), True)
    text = for_reading(text)
    valid = LETTERS[: min(n_choices, len(LETTERS))]
    s, s_text, excluded, options = _prepared(text, valid, option_texts)
    rejected = rejections(s, valid)
    right, wrong = marks(s, valid)
    strong_text, weak_text = options.rejected(s_text) if options else (set(), set())
    rejected.strong |= wrong | excluded | strong_text
    rejected.weak |= weak_text - rejected.strong
    asked, others = topic(s, valid, question, options)
    rejected.weak |= others - rejected.strong
    readers: list[tuple[str, Callable[[], Reading]]] = [
        ("statement", lambda: statement(s, valid)), ("marks", lambda: tuple(sorted(right)) or None),
        ("answer_lines", lambda: run_together(s, valid) or answer_lines(s, valid)),
        ("hedge", lambda: hedge(s, valid, frozenset(rejected.strong))),
        ("assertion", lambda: assertion(s, valid)), ("topic", lambda: asked),
        ("closing", lambda: closing(s, valid)), ("labelled", lambda: labelled(s.split("\n"), valid)),
        ("emphasis", lambda: emphasis(s, valid))]
    for name, reader in readers:
        reading = reader()
        if reading is not None:
            return _checked(s, reading, name, rejected.strong, rejected.weak, valid)
    if added_only := added(s, valid) - rejected.all:
        return _checked(s, tuple(sorted(added_only)), "added", rejected.strong, rejected.weak, valid)
    if options:
        tails = [s_text[m.end():].split("\n")[0] for m in STATEMENT.finditer(s_text)]
        for tail in reversed(tails):
            if listed := options.as_list(tail):
                return _checked(s, listed, "statement", rejected.strong, rejected.weak, valid)
        by_text, sure = option_text(s_text, options, rejected.strong, rejected.weak)
        if by_text is not None:
            return _checked(s, by_text, "option_text", rejected.strong, rejected.weak, valid)
        if not sure:
            return Reply((), False, tuple(sorted(rejected.all)))
    if remaining := rest(s, valid, rejected.all):
        return Reply(remaining, True, tuple(sorted(rejected.all)))
    return Reply((), abstains(s), tuple(sorted(rejected.all)))


_STATED = re.compile(
    r"""\b(?:(?:the|my|our)\s+)?(?:final\s+|correct\s+|right\s+)?answers?(?:\(s\))?["'”’*_]*
          (?:\s+(?:is|are|would\s+be|must\s+be)\b|[ \t]*[:=：])
      | 答案\s*(?:是|为|[:：])
      | \\boxed\s*\{""", re.I | re.X)
"""An explicit answer statement: "Answer: B", "the answer is B", "Final answer: B", "答案是B", "\\boxed{B}"."""


def read_cut(text: str | None, n_choices: int, option_texts: Sequence[str] | None = None,
             question: str | None = None) -> Reply:
    """A reply cut at the token limit: read only from its last explicit answer statement made before the cut
    (its line, read as any reply is); without one it has no answer, and nothing for an extractor to guess from
    (a cut "...so C looks right. Checking the others: ... and D" states nothing)."""
    s = unthink(for_reading(text or ""))
    found = list(_STATED.finditer(s))
    if not found:
        return Reply((), True)
    reply = read_reply(s[found[-1].start():].split("\n")[0], n_choices, option_texts, question)
    return Reply(reply.letters, True, reply.rejected)


def _checked(s: str, reading: tuple[str, ...], source: str, strong: set[str], weak: set[str],
             valid: str) -> Reply:
    """A reading with the reply's hedges, additions and rejections applied."""
    if not reading:
        return Reply((), True, tuple(sorted(strong | weak)))
    if hedged(s, reading, valid):
        return Reply((), True, tuple(sorted(strong | weak)))
    letters = set(reading) | (added(s, valid) - strong - weak)
    drop = strong | (set() if source in _EXPLICIT else weak)
    kept = tuple(sorted(letters - drop))
    # A weak rejection an explicit answer overrode is no rejection: the reply chose that option.
    return Reply(kept, bool(kept), tuple(sorted((strong | weak) - set(kept))))


def extract_choice(text: str | None, n_choices: int, option_texts: Sequence[str] | None = None) -> str | None:
    """The single option letter the reply commits to; None if it names none, several, or hedges between some."""
    letters = read_reply(text, n_choices, option_texts).letters
    return letters[0] if len(letters) == 1 else None


def extract_choices(text: str | None, n_choices: int, option_texts: Sequence[str] | None = None) -> tuple[str, ...]:
    """The set of option letters the reply selects (sorted, unique); () if none."""
    return read_reply(text, n_choices, option_texts).letters
