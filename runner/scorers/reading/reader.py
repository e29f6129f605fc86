"""The reading of one reply: cleaned, then read by each reader in turn until one finds evidence.

A capital letter in prose is not evidence on its own: the pronoun "I" and the article "A" followed by a word
are never options. Lower-case letters count only as a whole answer, after a statement, inside brackets/bold,
or as a line label ("b. 4"). Letters joined by "or"/"maybe"/"/" are a hedge: no answer. Letters outside the
valid range are dropped. ``extract_choice`` returns a letter only when the reading selects exactly one, so a
reply naming two options ("A and C are correct", "Both A and C") is not a single answer; ``extract_choices``
returns them all.
"""

from __future__ import annotations

from collections.abc import Sequence

from runner.scorers.reading.clean import clean
from runner.scorers.reading.lines import answer_lines, emphasis, labelled
from runner.scorers.reading.options import option_text
from runner.scorers.reading.statements import assertion, hedge, statement
from runner.scorers.reading.tokens import LETTERS

_READERS = (statement, answer_lines, hedge, assertion, lambda s, v: labelled(s.split("\n"), v), emphasis)


def _read(text: str | None, n_choices: int, option_texts: Sequence[str] | None) -> tuple[str, ...]:
    if not text or n_choices <= 0:
        return ()
    valid = LETTERS[: min(n_choices, len(LETTERS))]
    s = clean(text)
    for reader in _READERS:
        if (reading := reader(s, valid)) is not None:
            return reading
    if option_texts:
        return option_text(s, valid, option_texts) or ()
    return ()


def extract_choice(text: str | None, n_choices: int, option_texts: Sequence[str] | None = None) -> str | None:
    """The single option letter the reply commits to; None if it names none, several, or hedges between some."""
    letters = _read(text, n_choices, option_texts)
    return letters[0] if len(letters) == 1 else None


def extract_choices(text: str | None, n_choices: int, option_texts: Sequence[str] | None = None) -> tuple[str, ...]:
    """The set of option letters the reply selects (sorted, unique); () if none."""
    return _read(text, n_choices, option_texts)
