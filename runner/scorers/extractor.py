"""Asking a model which options a reply chose, for the replies the reading rules cannot read.

A choice scorer's `extractor:` is a model entry (the keys of conf/model/*.yaml) or `judges` (the run's first
judge). It is asked only when the rules are not sure (runner.scorers.reading `Reply.sure`): rules first,
always. Its prompt is prompts/extract_letters.j2 beside this file; its reply must be one JSON object
{"letters": [...]} of valid letters (in a code fence or not), else nothing is read from it and the reply
stays no answer. Its calls go through the run's call layer (`Endpoint.complete`: cache, retries, budget,
accounting) under its entry's name; runner/run/build.py builds its endpoint (`bind_extractors`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.config import plain
from runner.errors import ConfigError
from runner.solvers.chat import variables
from runner.tasks.templates import Template, load_template
from runner.types import Sample
from runner.untrusted import for_reading

if TYPE_CHECKING:
    from runner.models.cache import ResponseCache
    from runner.models.litellm_model import Endpoint

PROMPTS = Path(__file__).with_name("prompts")
PROMPT = "extract_letters.j2"
JUDGES = "judges"
_FENCE = re.compile(r"\A```(?:json)?\s*(.*?)\s*```\Z", re.S | re.I)


@dataclass(frozen=True)
class Extracted:
    """What the extractor said about one reply."""

    endpoint: str
    raw: str
    letters: tuple[str, ...] | None
    """The options it read (sorted, unique); None when its reply was not the JSON asked for."""
    usage: dict[str, Any]

    def record(self) -> dict[str, Any]:
        """The record's `extra.extractor`."""
        return {"endpoint": self.endpoint, "raw": self.raw,
                "letters": None if self.letters is None else list(self.letters), "usage": self.usage}


def parse_letters(text: str | None, n_choices: int) -> tuple[str, ...] | None:
    """The letters of an extractor reply that is exactly {"letters": [<valid letters>]}; None otherwise."""
    body = for_reading(text or "").strip()
    fenced = _FENCE.match(body)
    try:
        value = json.loads(fenced[1] if fenced else body)
    except ValueError:
        return None
    valid = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[:n_choices]
    letters = value.get("letters") if isinstance(value, dict) and set(value) == {"letters"} else None
    if not isinstance(letters, list) or not all(isinstance(x, str) and x.strip().upper() in valid for x in letters):
        return None
    found = [x.strip().upper() for x in letters]
    return tuple(sorted(set(found))) if len(set(found)) == len(found) else None


class Extractor:
    """Reads a reply with a model: `spec` is a model entry or "judges" (the run's first judge)."""

    def __init__(self, spec: Any, where: str) -> None:
        spec = plain(spec)
        self.where = f"{where}.extractor"
        if spec == JUDGES:
            self.entry: dict[str, Any] | None = None
        elif isinstance(spec, Mapping) and spec.get("name") and spec.get("model"):
            if spec.get("server"):
                raise ConfigError(f"{self.where}: an extractor entry cannot start the embedded model; use "
                                  "extractor: judges to ask the run's first judge")
            self.entry = dict(spec)
        else:
            raise ConfigError(f"{self.where}: a model entry ({{name: ..., model: ..., ...}}, as in conf/model/) or "
                              f"'{JUDGES}' (the run's first judge); got {spec!r}")
        self.endpoint: Endpoint | None = None
        """Set by runner/run/build.py before any sample is scored."""
        self.template: Template | None = None

    def prepare(self) -> None:
        """Compile the prompt file now, so a broken one stops the run before any request."""
        self.template = load_template(PROMPT, [PROMPTS], self.where)

    def messages(self, sample: Sample, response: str, multiple: bool) -> list[dict[str, str]]:
        """The one user message the extractor is sent about `response`."""
        assert self.template is not None
        return [{"role": "user", "content": self.template.render(**variables(sample), response=response,
                                                                  multiple=multiple)}]

    async def ask(self, sample: Sample, response: str, multiple: bool) -> Extracted:
        """The extractor's reading of one reply; a call failing after its retries raises (the sample is an
        error, asked again on resume)."""
        if self.endpoint is None:
            raise ConfigError(f"{self.where}: the extractor has no endpoint (it is built with the run)")
        out = await self.endpoint.complete(self.messages(sample, response, multiple))
        return Extracted(endpoint=self.endpoint.name, raw=out.text,
                         letters=parse_letters(out.text, len(sample.choices)),
                         usage={**asdict(out.usage), "served_model": out.model})


def bind_extractors(tasks: Sequence[Any], panel_entries: Sequence[Mapping[str, Any]], known: Sequence[Endpoint],
                    cache: ResponseCache | None) -> list[Endpoint]:
    """Give every scorer's extractor its endpoint: the run's first judge for `judges` (found among `known`),
    else one built from its entry; returns the endpoints built here (they join the run's endpoints: keys,
    budget, accounting). An entry named like another endpoint of the run is refused: usage is kept by name."""
    from runner.models.entries import endpoint_from_config

    by_name = {e.name: e for e in known}
    built: dict[str, tuple[dict[str, Any], Endpoint]] = {}
    for extractor in extractors(tasks):
        if extractor.entry is None:
            first = by_name.get(str(panel_entries[0]["name"])) if panel_entries else None
            if first is None:
                raise ConfigError(f"{extractor.where}: '{JUDGES}' asks the run's first judge, but the panel is "
                                  "empty; choose one with judges=NAME or give the extractor a model entry")
            extractor.endpoint = first
            continue
        name = str(extractor.entry["name"])
        if name in by_name:
            raise ConfigError(f"{extractor.where}.name: '{name}' is already the name of the model or a judge "
                              "of this run; give the extractor a name of its own (usage is kept by name)")
        if name in built and built[name][0] != extractor.entry:
            raise ConfigError(f"{extractor.where}.name: two extractors are named '{name}' with different "
                              "entries; give each a name of its own")
        if name not in built:
            built[name] = (extractor.entry, endpoint_from_config(extractor.entry, cache))
        extractor.endpoint = built[name][1]
    return [endpoint for _, endpoint in built.values()]


def extractors(tasks: Sequence[Any]) -> list[Extractor]:
    """The extractors of the tasks' scorers."""
    return [x for task in tasks for scorer in getattr(task, "scorers", {}).values()
            if isinstance(x := getattr(scorer, "extractor", None), Extractor)]


def wants_first_judge(tasks: Sequence[Any]) -> bool:
    """Whether an extractor asks the run's first judge (then the panel holds it even when nothing is judged)."""
    return any(x.entry is None for x in extractors(tasks))
