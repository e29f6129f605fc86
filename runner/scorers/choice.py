"""Multiple choice: the option letter(s) a careful human reads in the reply, against the reference.

The reply is read by the rules of runner.scorers.reading (docs/reading-replies.md). With `extractor:` (a model
entry, or `judges` for the run's first judge), a reply the rules cannot read, or read only in contradiction,
is read by that model (runner.scorers.extractor); each record then says who read it: `read_by` is
"rules" or "extractor", `extra.extractor` holds the extractor's raw reply, the letters it gave and its usage,
and results.json counts the replies each way (`counts.read_by_rules`, `counts.read_by_extractor`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.metrics.core import iou
from runner.scorers.extractor import Extractor
from runner.scorers.reading import read_reply
from runner.scorers.reading.reader import read_cut
from runner.tasks.base import PlannedCall
from runner.types import CURRENT_REPLY, Sample, Scored, letters

if TYPE_CHECKING:
    from runner.tasks.base import Context


@dataclass
class ReadScored(Scored):
    """A choice scorer's result, with what goes into the record's `extra` (who read the reply)."""

    extra: dict[str, Any] = field(default_factory=dict)


class Choice:
    """One letter (`accuracy`), or with `multiple: true` a set of letters (`iou` and exact-set `accuracy`).

    The reference is a letter, or a list of letters; a reply that names no option (or, for one answer,
    names two) is wrong, never invalid.
    """

    def __init__(self, multiple: bool = False, extractor: Any = None) -> None:
        self.multiple = bool(multiple)
        self.extractor = Extractor(extractor, "scorers.choice") if extractor is not None else None

    def prepare(self, folders: Sequence[Path], where: str) -> None:
        """Compile the extractor's prompt, if there is one."""
        if self.extractor is not None:
            self.extractor.where = f"{where}.extractor"
            self.extractor.prepare()

    def metrics(self) -> list[str]:
        """The per-sample scores it gives, averaged by default."""
        return ["mean:iou", "mean:accuracy"] if self.multiple else ["mean:accuracy"]

    def score_names(self) -> list[str]:
        """The per-sample scores it gives."""
        return ["iou", "accuracy"] if self.multiple else ["accuracy"]

    def check(self, sample: Sample) -> None:
        """ValueError when the reference names a letter that is no option of the sample: no reply could be right."""
        gold = [sample.target] if isinstance(sample.target, str) or not isinstance(sample.target, Sequence) \
            else list(sample.target)
        options = letters(len(sample.choices))
        wrong = [g for g in gold if g not in options]
        if wrong or not gold:
            have = f"its options are {', '.join(options)}" if options else \
                "the sample has no options (name their column in the task's fields.choices)"
            raise ValueError(f"reference {sample.target!r} is not among the option letters: {have}")

    def counts(self, records: Sequence[Mapping[str, Any]]) -> dict[str, int]:
        """results.json `counts` of a task with an extractor: how many replies each reader read."""
        if self.extractor is None:
            return {}
        read_by = [r.get("read_by") or (r.get("extra") or {}).get("read_by") for r in records
                   if r.get("status") != "error"]
        return {"read_by_rules": read_by.count("rules"), "read_by_extractor": read_by.count("extractor")}

    def planned_calls(self, sample: Sample, reply: str | None, judges: Sequence[str]) -> list[PlannedCall]:
        """The extractor once per sample: an upper bound, since it is asked only for the replies the rules
        cannot read (its prompt holds the reply, counted as the model's max_tokens while not written)."""
        extractor = self.extractor
        if extractor is None or extractor.endpoint is None:
            return []
        return [PlannedCall("extractor", extractor.messages(sample, reply or "", self.multiple),
                            endpoint=extractor.endpoint, holds_reply=reply is None)]

    async def __call__(self, sample: Sample, text: str, ctx: Context) -> Scored:
        """Read the letter(s), by the rules first, and score them."""
        output = CURRENT_REPLY.get()
        cut = output is not None and output.finish_reason == "length"  # read only what it stated before the cut
        reply = (read_cut if cut else read_reply)(text, len(sample.choices), sample.choices, sample.input)
        letters = reply.letters
        extra: dict[str, Any] = {}
        if self.extractor is not None:
            extra["read_by"] = "rules"
            if not reply.sure:
                asked = await self.extractor.ask(sample, text, self.multiple)
                extra["extractor"] = asked.record()
                if asked.letters is not None:
                    letters, extra["read_by"] = asked.letters, "extractor"
        if self.multiple:
            gold = [sample.target] if isinstance(sample.target, str) else list(sample.target)
            return ReadScored(answer=list(letters), scores={"iou": iou(letters, gold),
                                                            "accuracy": float(set(letters) == set(gold))},
                              extra=extra)
        letter = letters[0] if len(letters) == 1 else None
        return ReadScored(answer=letter, scores={"accuracy": float(letter == sample.target)}, extra=extra)
