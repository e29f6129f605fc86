"""The model under test's replies as recorded in an earlier run dir, for re-judging: nothing is sent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runner.errors import CallError, ConfigError
from runner.models.entries import entry_fields
from runner.models.litellm_model import Endpoint
from runner.run.store import read_records
from runner.types import CURRENT_SAMPLE, ModelOutput, Usage


class ReplayEndpoint(Endpoint):
    """Answers each sample with the reply its record in `source` holds; a sample without one is an error.

    Keeps the replayed entry's name, model and params, so records and fingerprints name the model that
    really answered.
    """

    def __init__(self, base: Endpoint, source: Path) -> None:
        super().__init__(**{**entry_fields(base), "api_key": None})  # what decides a record's fingerprint
        self.source = source
        self.replies = _recorded_replies(source, self.model)
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
        reply = self.replies.get(where) if where else None
        if reply is None:
            task, sample = where or ("?", "?")
            raise CallError(f"{self.name}: {self.source} has no reply for sample {sample} of task {task} "
                            "(it ended as an error there, or was not selected)", attempts=0)
        self.stats.cache_hits += 1
        return reply


def _recorded_replies(source: Path, model: str) -> dict[tuple[str, str], ModelOutput]:
    """(task, id) -> the reply of every sample whose latest record in `source` is finished with one: its text,
    and how it ended, what it reasoned and who served it, so a cut reply is read as a cut one again."""
    replies: dict[tuple[str, str], ModelOutput] = {}
    for path in sorted((source / "samples").glob("*.jsonl")):
        for key, rec in read_records(path).items():
            if rec.get("status") != "error" and rec.get("response") is not None:
                fields = {k: rec.get(k) if isinstance(rec.get(k), str) else None
                          for k in ("finish_reason", "reasoning", "served_model")}
                replies[(str(rec.get("task") or path.stem), key)] = ModelOutput(
                    text=str(rec["response"]), model=fields["served_model"] or model, usage=Usage(cached=True),
                    finish_reason=fields["finish_reason"], reasoning=fields["reasoning"])
    return replies
