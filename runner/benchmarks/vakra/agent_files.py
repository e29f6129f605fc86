"""Agent mode's files: VAKRA's agent inputs in, VAKRA's submission format out.

Input (`<input_root>/<domain>.json`): `[{uuid, domain, num_turns, dialogue: {turns: [{turn_id, query,
answer?}]}, additional_instructions}]`; only the last turn is asked. Output
(`predictions/<capability>/<domain>.json` in the run dir): `[{uuid, domain, status, error, duration_s,
output: [{turn_id, query, answer, sequence: {tool_call: [{name, arguments}]}}]}]`, one output turn per
dialogue, so the file can also go to VAKRA's own evaluator or leaderboard.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.benchmarks.vakra.agent import input_turns
from runner.run.store import write_json

if TYPE_CHECKING:
    from runner.benchmarks.vakra.agent import Trajectory
    from runner.types import Sample

PREDICTIONS_DIR = "predictions"


def agent_turn(item: Mapping[str, Any]) -> dict[str, Any]:
    """The turn the agent answers (the input's last), before it has an answer; ValueError if unusable."""
    last = input_turns(item)[-1]
    return {"turn_id": last.get("turn_id"), "query": str(last.get("query") or "")}


def submission(sample: Sample, domain: str, trajectory: Trajectory, turn: Mapping[str, Any],
               error: str | None = None) -> dict[str, Any]:
    """One dialogue in VAKRA's submission format (an aborted one has status `error` and the calls so far)."""
    return {"uuid": str(sample.id), "domain": domain, "status": "error" if error else "success",
            "error": error or ("" if not trajectory.max_steps_reached
                               else f"no final answer within max_steps ({trajectory.steps} model calls)"),
            "duration_s": round(trajectory.duration_s, 3),
            "output": [{"turn_id": turn.get("turn_id"), "query": turn.get("query"), "answer": trajectory.answer,
                        "sequence": {"tool_call": trajectory.tool_calls()}}]}


def write_predictions(run_dir: Path, capability: str, domain: str, records: Sequence[Mapping[str, Any]],
                      order: Sequence[str]) -> Path | None:
    """`predictions/<capability>/<domain>.json` from the records (every invocation's, after a resume), in
    ground-truth order; None when no dialogue of the domain was asked."""
    by_id = {str(r.get("id")): (r.get("extra") or {}).get("prediction") for r in records}
    rows = [by_id[uuid] for uuid in order if by_id.get(uuid)]
    if not rows:
        return None
    path = Path(run_dir) / PREDICTIONS_DIR / capability / f"{domain}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, rows)
    return path
