"""Multiple choice: the option letter(s) a careful human reads in the reply, against the reference."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from runner.metrics.core import iou
from runner.scorers.letters import extract_choice, extract_choices
from runner.types import Sample, Scored

if TYPE_CHECKING:
    from runner.benchmarks.base import Context


class Choice:
    """One letter (`accuracy`), or with `multiple: true` a set of letters (`iou` and exact-set `accuracy`).

    The reference is a letter, or a list of letters; a reply that names no option (or, for one answer,
    names two) is wrong, never invalid.
    """

    def __init__(self, multiple: bool = False) -> None:
        self.multiple = bool(multiple)

    def prepare(self, folders: Sequence[Path], where: str) -> None:
        """Nothing to load."""

    def metrics(self) -> list[str]:
        """The per-sample scores it gives, averaged by default."""
        return ["mean:iou", "mean:accuracy"] if self.multiple else ["mean:accuracy"]

    async def __call__(self, sample: Sample, text: str, ctx: Context) -> Scored:
        """Read the letter(s) and score them."""
        if self.multiple:
            picked = extract_choices(text, len(sample.choices), sample.choices)
            gold = [sample.target] if isinstance(sample.target, str) else list(sample.target)
            return Scored(answer=list(picked), scores={"iou": iou(picked, gold),
                                                       "accuracy": float(set(picked) == set(gold))})
        letter = extract_choice(text, len(sample.choices), sample.choices)
        return Scored(answer=letter, scores={"accuracy": float(letter == sample.target)})
