"""Chat: a system prompt, few-shot examples as earlier turns, then the question; one model call (a solver
that makes several returns each of them in its `Solved`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.tasks.templates import Template, load_template
from runner.types import Sample, Solved, letters

if TYPE_CHECKING:
    from runner.tasks.base import Context


def variables(sample: Sample) -> dict[str, Any]:
    """What every template sees: the question, options and their letters, context documents, the
    reference, the row's own columns (`row.<column>`) when the data came through a `fields` map, and
    what a row adapter kept (`meta.<key>`)."""
    return {"question": sample.input, "choices": sample.choices, "letters": letters(len(sample.choices)),
            "context": sample.context, "target": sample.target, "reference": sample.target,
            "row": sample.metadata.get("row", {}), "meta": sample.metadata}


class Chat:
    """Asks the model under test one chat completion built from templates.

    `user` renders the question; `system` (optional) comes first; each few-shot example is the user
    template for the shot, then `shot` rendered for it as the assistant's turn (default: its target).
    """

    calls = 1
    """Model calls per sample."""

    def __init__(self, user: str, system: str | None = None, shot: str = "{{ target }}") -> None:
        self.specs = {"user": user, "system": system, "shot": shot}
        self.templates: dict[str, Template] = {}

    def prepare(self, folders: Sequence[Path], where: str) -> None:
        """Compile the templates (at build time)."""
        self.templates = {k: load_template(v, folders, f"{where}.solver.{k}")
                          for k, v in self.specs.items() if v is not None}

    def messages(self, sample: Sample, shots: Sequence[Sample]) -> list[dict[str, str]]:
        """The chat messages for one sample."""
        t = self.templates
        msgs: list[dict[str, str]] = []
        if "system" in t:
            msgs.append({"role": "system", "content": t["system"].render(**self.variables(sample))})
        for shot in shots:
            msgs.append({"role": "user", "content": t["user"].render(**self.variables(shot))})
            msgs.append({"role": "assistant", "content": self.shot_reply(shot)})
        msgs.append({"role": "user", "content": t["user"].render(**self.variables(sample))})
        return msgs

    def variables(self, sample: Sample) -> dict[str, Any]:
        """What this solver's templates see (`variables`; a subclass may add its own)."""
        return variables(sample)

    def shot_reply(self, shot: Sample) -> str:
        """The assistant turn shown for a few-shot example: the `shot` template."""
        return self.templates["shot"].render(**self.variables(shot))

    def response_format(self) -> dict[str, Any] | None:
        """Structured output to ask for (an OpenAI `response_format`); None: free text."""
        return None

    async def __call__(self, sample: Sample, shots: Sequence[Sample], ctx: Context,
                       params: dict[str, Any]) -> Solved:
        """Ask the model once; the messages sent and its reply."""
        assert ctx.model is not None
        messages = self.messages(sample, shots)
        out = await ctx.model.complete(messages, params=params, response_format=self.response_format())
        return Solved(messages=list(messages), outputs=(out,))
