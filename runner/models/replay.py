"""The model under test's replies as recorded in an earlier run dir, for re-judging: nothing is sent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from runner.errors import CallError, ConfigError
from runner.models.litellm_model import Endpoint
from runner.run.store import key_of
from runner.types import CURRENT_SAMPLE, ModelOutput, Usage


class ReplayEndpoint(Endpoint):
    """Answers each sample with the reply its record in `source` holds; a sample without one is an error.

    Keeps the replayed entry's name, model and params, so records and fingerprints name the model that
    really answered.
    """

    def __init__(self, base: Endpoint, source: Path) -> None:
        super().__init__(name=base.name, model=base.model, api_base=base.api_base, params=dict(base.params),
                         concurrency=base.concurrency, origin=base.origin)
        self.source = source
        self.replies = _recorded_replies(source)
        if not self.replies:
            raise ConfigError(f"{source}/samples holds no recorded reply to judge again; rejudge needs the run "
                              "dir of a run that asked the model")

    def missing_key(self) -> str | None:
        return None  # never called

    async def complete(self, messages: list[dict[str, Any]], *, params: dict[str, Any] | None = None,
                       response_format: dict[str, Any] | None = None,
                       tools: list[dict[str, Any]] | None = None) -> ModelOutput:
        if tools:
            # A recorded reply is only the final text: replaying it as an agent's answer would drop every
            # tool call and score a different trajectory.
            raise ConfigError(f"rejudge replays recorded replies, not agent trajectories; to judge the agent run "
                              f"{self.source} again, score its predictions in replay mode: benchmark.mode=replay "
                              f"benchmark.pred_root={self.source}/predictions/<capability>")
        where = CURRENT_SAMPLE.get()
        text = self.replies.get(where) if where else None
        if text is None:
            task, sample = where or ("?", "?")
            raise CallError(f"{self.name}: {self.source} has no reply for sample {sample} of task {task} "
                            "(it ended as an error there, or was not selected)", attempts=0)
        self.stats.cache_hits += 1
        return ModelOutput(text=text, model=self.model, usage=Usage(cached=True))


def _recorded_replies(source: Path) -> dict[tuple[str, str], str]:
    """(task, id) -> response for every finished record of every samples file (the last line wins)."""
    replies: dict[tuple[str, str], str] = {}
    for path in sorted((source / "samples").glob("*.jsonl")):
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue  # a torn last line
                key = (str(rec.get("task") or path.stem), key_of(rec))
                if rec.get("status") == "error" or rec.get("response") is None:
                    replies.pop(key, None)
                else:
                    replies[key] = str(rec["response"])
    return replies
