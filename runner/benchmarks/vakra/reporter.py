"""VAKRA's report file, `<run_dir>/vakra_results.json`, written from the records after aggregation; in agent
mode also the model's predictions, `<run_dir>/predictions/<capability>/<domain>.json`.

Its shape is VAKRA's evaluator's: the capability and the two roots, one block per selected domain (the
pairing, the errors, every scored dialogue with its per-turn details, and the domain's figures), and the
overall figures (missing predictions count as 0, as in results.json's summary).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.benchmarks.vakra.agent_files import PREDICTIONS_DIR, write_predictions
from runner.benchmarks.vakra.report import DomainResult, dialogue_score, extra_of, is_error, overall, paired
from runner.benchmarks.vakra.task import DomainTask
from runner.config.paths import inside
from runner.run.store import write_json

if TYPE_CHECKING:
    from runner.tasks.base import BaseTask
    from runner.types import TaskResult

REPORT_FILE = "vakra_results.json"


class VakraReporter:
    """Writes `vakra_results.json` with every domain of the run."""

    def report(self, tasks: Sequence[BaseTask], records: Mapping[str, list[dict[str, Any]]],
               results: Mapping[str, TaskResult], run_dir: Path) -> dict[str, Any] | None:
        domains = [t for t in tasks if isinstance(t, DomainTask) and t.name in results]
        if not domains or domains[0].settings is None:
            return None
        s = domains[0].settings
        predictions = Path(run_dir) / PREDICTIONS_DIR / s.capability
        head = {"capability_name": s.capability, "groundtruth_dir": str(s.gt_root),
                "prediction_dir": str(predictions if s.agent_mode else s.pred_root)}
        if s.agent_mode:
            head["input_dir"] = str(s.input_root)
        blocks = []
        for task in domains:
            if s.agent_mode:  # the model's trajectories, as a submission VAKRA's own evaluator also reads
                inside(Path(run_dir), PREDICTIONS_DIR, s.capability, f"{task.name}.json")  # stays in the run dir
                write_predictions(Path(run_dir), s.capability, task.name, records.get(task.name, []),
                                  list(task.files.gt) if task.files is not None else [])
            result = results[task.name]
            assert isinstance(result, DomainResult)
            blocks.append(domain_block(task.name, records.get(task.name, []), result, task.pairing()))
        write_report(Path(run_dir), head, blocks)
        if not s.agent_mode:
            return None
        return {"tables": {f"vakra/{t.name}/trajectories": trajectory_table(records.get(t.name, []))
                           for t in domains}}


TRAJECTORY_COLUMNS = ["uuid", "status", "dialogue_score", "query", "answer", "steps", "max_steps_reached",
                      "tool_calls", "messages", "error"]


def trajectory_table(records: Sequence[Mapping[str, Any]]) -> tuple[list[str], list[list[Any]]]:
    """One row per asked dialogue for the tracker: its score and the agent's whole trajectory. The calls
    and messages are JSON text (a W&B table column holds one type)."""
    rows = []
    for record in records:
        agent = extra_of(record).get("agent")
        if not agent:
            continue
        calls = [{"name": c["name"], "arguments": c["arguments"], "response": c["response"]} for c in agent["calls"]]
        rows.append([str(record["id"]), record.get("status"), (record.get("scores") or {}).get("dialogue_score"),
                     str(record.get("prompt") or ""), agent.get("answer"), agent.get("steps"),
                     agent.get("max_steps_reached"), json.dumps(calls, ensure_ascii=False),
                     json.dumps(agent.get("messages"), ensure_ascii=False), record.get("error")])
    return TRAJECTORY_COLUMNS, rows


def dialogue_entry(record: Mapping[str, Any]) -> dict[str, Any]:
    """One scored dialogue in VAKRA's report shape."""
    extra = extra_of(record)
    score = dialogue_score(record)
    return {"uuid": record["id"], "score": score, "status": record.get("status"),
            "metadata": {"capability": extra.get("capability"), "domain": record.get("task"),
                         "policy": {"dialogue_aggregate": extra.get("aggregate"),
                                    "execute_mcp_tools": extra.get("replayed")}},
            "details": {"dialogue_score": score, "num_turns": extra.get("num_turns"),
                        "per_turn": extra.get("per_turn", []), "aggregate": extra.get("aggregate")}}


def domain_block(domain: str, records: Sequence[Mapping[str, Any]], result: DomainResult,
                 pairing: Mapping[str, Any]) -> dict[str, Any]:
    """One domain of the VAKRA-shaped report."""
    scored = paired(records)
    scores = [dialogue_score(r) for r in scored]
    return {"domain": domain, "n_groundtruth": pairing.get("n_groundtruth", result.metrics["num_samples"]),
            "n_prediction": pairing.get("n_prediction"), "n_paired": result.n_paired,
            "missing_prediction_uuids": result.missing_prediction_uuids,
            "extra_prediction_uuids": result.extra_prediction_uuids,
            "duplicate_uuids": result.duplicate_uuids,
            "errors": {str(r["id"]): r.get("error") for r in records if is_error(r)},
            "invalid_uuids": result.invalid_ids,
            "dialogues": [dialogue_entry(r) for r in scored],
            "summary": {**result.metrics, "min_dialogue_score": min(scores, default=None),
                        "max_dialogue_score": max(scores, default=None)}}


def write_report(run_dir: Path, head: Mapping[str, Any], blocks: Sequence[Mapping[str, Any]]) -> Path:
    """`vakra_results.json`: the head, the domains' blocks (in the run's order) and the overall figures."""
    ordered = {b["domain"]: b for b in blocks}
    all_scores = [d["score"] for b in ordered.values() for d in b["dialogues"]]
    counts = [{"n_paired": b["n_paired"], "n_missing": len(b["missing_prediction_uuids"]),
               "n_extra": len(b["extra_prediction_uuids"]), "num_samples": b["summary"]["num_samples"],
               "num_correct": b["summary"]["num_correct"]} for b in ordered.values()]
    path = run_dir / REPORT_FILE
    write_json(path, {**head, "domains": ordered,
                      "summary": {**overall(counts), "min_dialogue_score": min(all_scores, default=None),
                                  "max_dialogue_score": max(all_scores, default=None)}})
    return path
