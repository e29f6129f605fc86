"""Numeric answers: the number a reply ends on (or states as its answer), within a tolerance."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from runner.types import Sample, Scored

if TYPE_CHECKING:
    from runner.tasks.base import Context

# A number as people write it: sign, thousands separators, decimals, exponent ("-1,234.5e3", ".5").
_NUMBER = re.compile(r"(?<![\w.])[-+−]?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w])")
# Where a reply says which number is its answer; the last such statement wins over trailing prose.
_STATED = re.compile(r"(?:answer|result|total|final)\s*(?:is|=|:)?\s*\**\s*\$?\s*(?:\\boxed\{)?\s*"
                     r"([-+−]?[\d.,]+(?:[eE][-+]?\d+)?)", re.I)
_BOXED = re.compile(r"\\boxed\{\s*([-+−]?[\d.,]+(?:[eE][-+]?\d+)?)\s*\}")
_THINK = re.compile(r"<think>.*?(?:</think>|$)", re.S | re.I)


def _to_float(text: str) -> float | None:
    cleaned = text.replace(",", "").replace("−", "-").rstrip(".")
    try:
        value = float(cleaned)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def read_number(reply: str | None) -> float | None:
    """The reply's answer as a number: a `\\boxed{}` value, else the last "answer is N", else the last
    number in the reply; None when it has none."""
    text = _THINK.sub("", reply or "")
    for pattern in (_BOXED, _STATED):
        found = pattern.findall(text)
        if found and (value := _to_float(found[-1])) is not None:
            return value
    numbers = [m.group(0) for m in _NUMBER.finditer(text) if any(c.isdigit() for c in m.group(0))]
    return _to_float(numbers[-1]) if numbers else None


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
        """ValueError when the reference is no number this scorer reads ("1/2", "ten"): no reply could be scored."""
        if _to_float(str(sample.target)) is None:
            raise ValueError(f"reference {sample.target!r} is not a number (write it as digits, e.g. 0.5)")

    async def __call__(self, sample: Sample, text: str, ctx: Context) -> Scored:
        """Read the number and compare it with the reference."""
        gold = _to_float(str(sample.target))
        if gold is None:
            raise ValueError(f"reference {sample.target!r} is not a number")
        value = read_number(text)
        right = value is not None and math.isclose(value, gold, rel_tol=self.rel_tol, abs_tol=self.abs_tol)
        return Scored(answer=value, scores={"accuracy": float(right)})
