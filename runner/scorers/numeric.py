"""Numeric answers: the number a reply states as its answer (or ends on), read as a careful person reads it,
compared with the reference within a tolerance.

How a reply is read (docs/reading-replies.md, "Numbers"; tests/fixtures/numeric_replies.jsonl):
- which number: a `\\boxed{}` value, else the last statement of the answer ("Answer: X", "the final answer is
  X", "answer to ... is X": the first number of that clause, or the one after its last `=`), else the last
  statement of a result or total, else the last number of the reply; a `<think>` block is never read;
- a number is written `1,234.5`, `-0.5`, `.5`, `1.2e3`, `1.2 × 10^3` (`x`, `*`, `·`, `10³`, LaTeX `\\times
  10^{3}`), `2^10`, `3/4` or `\\frac{3}{4}` (a fraction), `50%`; a unit after it is not a number (`48 m^2`,
  `48 m²`, `9.8 m/s^2`, `5kg`: 48, 48, 9.8, 5), nor is a digit inside a word (`H2O`, `CO2`);
- a percentage is its number with or without the sign: `50%` equals a reference of 50 and of 0.5 (the
  question says which it asks for, the reply's sign says it is a percentage); no benchmark of the seeds scores
  numbers, so nothing of theirs decides otherwise.
A reference is read the same way and must be one number (a unit after it allowed): `1/2` is 0.5, `ten` and
`3 to 5` are no number, and such a row is a bad row (`check`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from runner.types import CURRENT_REPLY, Sample, Scored
from runner.untrusted import for_reading

if TYPE_CHECKING:
    from runner.tasks.base import Context

_SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺", "0123456789-+")
_LATEX = [  # LaTeX a reply may write its number in, as plain text
    (re.compile(r"\\[dt]?frac\s*\{\s*([^{}]*?)\s*\}\s*\{\s*([^{}]*?)\s*\}"), r"\1/\2"),
    (re.compile(r"\\(?:times|cdot)(?![a-zA-Z])"), "×"),
    (re.compile(r"\^\s*\{\s*([^{}]*?)\s*\}"), r"^\1"),
    (re.compile(r"\\%"), "%"),
    (re.compile(r"(?<=\d)\\[,;!]\s*(?=\d{3})"), ""),  # 1\,234
    (re.compile(r"\\(?:left|right|,|;|!|text|mathrm)(?![a-zA-Z])"), ""),
]
_DIGIT_GROUP_SPACE = re.compile(r"(?<=\d)[\u2009\u202f\u00a0](?=\d{3}(?!\d))")  # 1 234 567 (thin spaces)

_SIGN = r"[-+−]"
_MANTISSA = r"(?:\d{1,3}(?:,\d{3})+(?!\d)(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
# A number starts where no word, decimal point, fraction bar or power sign is just before it: the 2 of `m^2`,
# `s^-2` and `H2O` is no number.
_START = r"(?<![\w.^/])(?<!\^[-+−])(?<!\^\()"
_NUMBER = re.compile(
    _START + rf"(?P<sign>{_SIGN})?(?P<mantissa>{_MANTISSA})"
    rf"(?:[eE](?P<exp>{_SIGN}?\d+))?"
    rf"(?:\s*(?:\^|\*\*)\s*\(?(?P<power>{_SIGN}?\d+)\)?)?"
    rf"(?:\s*[×xX*·]\s*10\s*(?:\^|\*\*)\s*\(?(?P<ten>{_SIGN}?\d+)\)?)?"
    rf"(?:\s*/\s*(?P<denominator>{_MANTISSA})(?![\d/]|\s*/\s*\d))?"
    r"(?P<percent>\s*%|\s+per\s?cent\b)?")
_STATEMENT = r"(?:[^\n.:=]{0,40}?\b(?:is|was|be|equals)\b|\s*[:=≈])"
_ANSWER = re.compile(r"\b(?:final\s+)?answer\b" + _STATEMENT, re.I)
_RESULT = re.compile(r"\b(?:result|total)\b" + _STATEMENT, re.I)
_CLAUSE_END = re.compile(r"[.;!?](?:\s|$)|\n")
_BOXED = re.compile(r"\\boxed\s*\{([^{}]*)\}")
_THINK = re.compile(r"<think>.*?(?:</think>|$)", re.S | re.I)


@dataclass(frozen=True)
class Reading:
    """One number as written: its `value` and whether a percent sign followed it."""

    value: float
    percent: bool = False

    def values(self) -> tuple[float, ...]:
        """What it may equal: `50%` is 50 (the percentage asked for) or 0.5 (the fraction it is)."""
        return (self.value, self.value / 100) if self.percent else (self.value,)


def _float(text: str) -> float:
    return float(text.replace(",", "").replace("−", "-"))


def _reading(match: re.Match[str]) -> Reading | None:
    """The number a token writes, or None when it is no finite number (`1/0`, `10^999`)."""
    try:
        value = _float(match["mantissa"])
        if match["exp"]:
            value *= 10.0 ** _float(match["exp"])
        if match["power"]:
            value **= _float(match["power"])
        if match["ten"]:
            value *= 10.0 ** _float(match["ten"])
        if match["denominator"]:
            value /= _float(match["denominator"])
    except (ArithmeticError, ValueError):
        return None
    if match["sign"] in ("-", "−"):
        value = -value
    return Reading(value, bool(match["percent"])) if math.isfinite(value) else None


def _plain(text: str) -> str:
    """LaTeX and superscripts written as plain text (`\\frac{3}{4}` as 3/4, `10³` as 10^3)."""
    for pattern, repl in _LATEX:
        text = pattern.sub(repl, text)
    text = re.sub(r"[⁻⁺]?[⁰¹²³⁴⁵⁶⁷⁸⁹]+", lambda m: "^" + m.group(0).translate(_SUPERSCRIPT), text)
    return _DIGIT_GROUP_SPACE.sub("", text)


def _numbers(text: str) -> list[Reading]:
    return [r for m in _NUMBER.finditer(text) if (r := _reading(m)) is not None]


def _stated(text: str, pattern: re.Pattern[str]) -> Reading | None:
    """The number of the last statement `pattern` finds: the first of its clause, or the one after the
    clause's last `=` ("Answer: 2 × 3 = 6" states 6; "the answer is 12, not 13" states 12)."""
    for found in reversed(list(pattern.finditer(text))):
        rest = text[found.end():]
        end = _CLAUSE_END.search(rest)
        clause = rest[: end.start() if end else len(rest)].rsplit("=", 1)[-1]
        numbers = _numbers(clause)
        if numbers:
            return numbers[0]
    return None


def read_reply(reply: str | None, *, cut: bool = False) -> Reading | None:
    """The number a reply gives as its answer (see the module's docstring); None when it has none. A reply `cut`
    at the token limit is read only from an explicit answer (`\\boxed{}`, "the answer is ..."): its last
    number may be a step of an unfinished calculation."""
    text = _plain(_THINK.sub("", for_reading(reply or "")))
    for boxed in reversed(_BOXED.findall(text)):
        if numbers := _numbers(boxed):
            return numbers[0]
    for pattern in (_ANSWER,) if cut else (_ANSWER, _RESULT):
        if (stated := _stated(text, pattern)) is not None:
            return stated
    numbers = [] if cut else _numbers(text)
    return numbers[-1] if numbers else None


def read_number(reply: str | None) -> float | None:
    """The reply's answer as a number, as written (`50%` is 50.0); None when it has none."""
    reading = read_reply(reply)
    return None if reading is None else reading.value


def read_reference(reference: object) -> Reading | None:
    """A reference as one number, read as a reply is (a unit after it allowed): None when it holds no number,
    more than one, or words before it ("ten", "3 to 5", "about 4")."""
    text = _plain(str(reference)).strip().lstrip("$€£¥").strip()
    found = list(_NUMBER.finditer(text))
    if len(found) != 1 or found[0].start() != 0:
        return None
    return _reading(found[0])


class Numeric:
    """`accuracy`: 1 when the number read equals the reference within `abs_tol` or `rel_tol`."""

    def __init__(self, rel_tol: float = 0.0, abs_tol: float = 1e-9) -> None:
        self.rel_tol, self.abs_tol = float(rel_tol), float(abs_tol)

    def prepare(self, folders: Sequence[Path], where: str) -> None:
        """Nothing to load."""

    def metrics(self) -> list[str]:
        """The per-sample score it gives, averaged by default."""
        return ["mean:accuracy"]

    def score_names(self) -> list[str]:
        """The per-sample score it gives."""
        return ["accuracy"]

    def check(self, sample: Sample) -> None:
        """ValueError when the reference is no number this scorer reads ("ten", "3 to 5"): no reply could be
        scored."""
        if read_reference(sample.target) is None:
            raise ValueError(f"reference {sample.target!r} is not a number (write it as one number, e.g. 0.5, "
                             "3/4 or 1.2e3)")

    def equal(self, reading: Reading, gold: Reading) -> float | None:
        """The value of `reading` that equals the reference (a percentage either way), else None."""
        for value in reading.values():
            if any(math.isclose(value, g, rel_tol=self.rel_tol, abs_tol=self.abs_tol) for g in gold.values()):
                return value
        return None

    async def __call__(self, sample: Sample, text: str, ctx: Context) -> Scored:
        """Read the number and compare it with the reference; the answer recorded is the value that matched
        (0.5 for `50%` against 0.5), else the number as written."""
        gold = read_reference(sample.target)
        if gold is None:
            raise ValueError(f"reference {sample.target!r} is not a number")
        output = CURRENT_REPLY.get()
        reading = read_reply(text, cut=output is not None and output.finish_reason == "length")
        matched = None if reading is None else self.equal(reading, gold)
        answer = matched if matched is not None else None if reading is None else reading.value
        return Scored(answer=answer, scores={"accuracy": float(matched is not None)})
