"""VAKRA's files: one JSON list of dialogues per domain, paired by uuid; turns, tool calls and answers.

Ground truth: `[{uuid, domain, additional_instructions?, output: [{turn_id, query, answer, sequence:
{tool_call: [{name, arguments}], tool_response?}}]}]`, every turn of the dialogue. A prediction has the same
shape with exactly one turn, the final one. Problems become one clear line each, attached to the dialogue
(or the file) they concern, so the rest of the domain is still scored.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CAPABILITIES = {"capability_bi_apis": 1, "capability_dashboard_apis": 2, "capability_multihop_reasoning": 3,
                "capability_multiturn": 4}
"""VAKRA's capability names and the ids its mcp_connection_config.yaml is keyed by."""

RERUN = "re-run with the same hydra.run.dir"


@dataclass(frozen=True)
class Call:
    """One tool call as written in a file (arguments may be a dict or a JSON string)."""

    name: str
    arguments: Any


@dataclass
class DomainFiles:
    """One domain's ground truth and predictions, paired by uuid (the last of duplicate uuids wins)."""

    gt: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Ground-truth dialogues by uuid, in file order."""
    pred: dict[str, dict[str, Any]] = field(default_factory=dict)
    gt_duplicates: list[str] = field(default_factory=list)
    pred_duplicates: list[str] = field(default_factory=list)
    gt_problems: list[tuple[str, str]] = field(default_factory=list)
    """(id, reason) for ground truth that cannot be scored: an unreadable file or a row without a uuid."""
    pred_problem: str | None = None
    """Why the prediction file cannot be read at all (every paired dialogue then carries this error)."""
    pred_rows_without_uuid: int = 0
    n_gt_rows: int = 0
    n_pred_rows: int = 0
    pred_file_found: bool = True

    @property
    def missing(self) -> list[str]:
        """Ground-truth uuids with no prediction (sorted, as VAKRA lists them)."""
        return [] if self.pred_problem else sorted(set(self.gt) - set(self.pred))

    @property
    def extra(self) -> list[str]:
        """Prediction uuids with no ground truth (sorted)."""
        return sorted(set(self.pred) - set(self.gt))

    def pairing(self) -> dict[str, Any]:
        """What the reports say about the pairing of this domain."""
        return {"n_groundtruth": len(self.gt), "n_prediction": len(self.pred),
                "missing_prediction_uuids": self.missing, "extra_prediction_uuids": self.extra,
                "duplicate_uuids": {"groundtruth": self.gt_duplicates, "prediction": self.pred_duplicates},
                "prediction_rows_without_uuid": self.pred_rows_without_uuid}


def _read_list(path: Path, what: str) -> tuple[list[Any] | None, str | None]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        return None, (f"{what} file {path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
                      f"fix the file and {RERUN}")
    except (OSError, UnicodeDecodeError) as exc:
        return None, f"{what} file {path} cannot be read ({exc}); fix it and {RERUN}"
    if not isinstance(data, list):
        return None, (f"{what} file {path} must hold a JSON list of dialogue objects, found a JSON "
                      f"{type(data).__name__}; fix the file and {RERUN}")
    return data, None


def _by_uuid(rows: list[Any]) -> tuple[dict[str, dict[str, Any]], list[str], list[int]]:
    out: dict[str, dict[str, Any]] = {}
    duplicates: list[str] = []
    no_uuid: list[int] = []
    for index, row in enumerate(rows):
        uuid = row.get("uuid") if isinstance(row, dict) else None
        if uuid is None or uuid == "":
            no_uuid.append(index)
            continue
        key = str(uuid)
        if key in out:
            duplicates.append(key)  # the last occurrence wins (VAKRA overwrites silently; we report it)
        out[key] = row
    return out, sorted(set(duplicates)), no_uuid


def read_domain(domain: str, gt_root: Path, pred_root: Path, limit: int | None = None) -> DomainFiles:
    """Read and pair one domain. Never raises for bad content: problems are recorded on the result."""
    files = DomainFiles()
    gt_path, pred_path = gt_root / f"{domain}.json", pred_root / f"{domain}.json"
    gt_rows, problem = _read_list(gt_path, "ground-truth")
    if gt_rows is None:
        files.gt_problems.append((f"file:{gt_path.name}", str(problem)))
        return files
    files.n_gt_rows = len(gt_rows)
    files.gt, files.gt_duplicates, no_uuid = _by_uuid(gt_rows)
    for index in no_uuid:
        files.gt_problems.append((f"{domain}[{index}]", f"ground-truth row {index} of {gt_path} is not a dialogue "
                                                         "object with a uuid, so it cannot be paired; fix the file and "
                                                         f"{RERUN}"))
    if limit is not None:
        files.gt = dict(list(files.gt.items())[:limit])
    if not pred_path.exists():
        files.pred_file_found = False
        return files
    pred_rows, problem = _read_list(pred_path, "prediction")
    if pred_rows is None:
        files.pred_problem = problem
        return files
    files.n_pred_rows = len(pred_rows)
    files.pred, files.pred_duplicates, no_uuid = _by_uuid(pred_rows)
    files.pred_rows_without_uuid = len(no_uuid)
    return files


def gt_turns(dialogue: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ground-truth turns; ValueError (one line) if they cannot be scored."""
    turns = dialogue.get("output")
    if not isinstance(turns, list) or not turns or not all(isinstance(t, dict) for t in turns):
        raise ValueError("the ground-truth dialogue has no turns ('output' must be a non-empty list of turn "
                         "objects)")
    if "answer" not in turns[-1]:
        raise ValueError("the last ground-truth turn has no 'answer'")
    return turns


def pred_turn(prediction: Mapping[str, Any], gt: list[dict[str, Any]]) -> dict[str, Any]:
    """The prediction's one turn, checked against the ground truth; ValueError (one line) if unusable."""
    turns = prediction.get("output")
    last_id = gt[-1].get("turn_id")
    if not isinstance(turns, list) or not turns:
        raise ValueError(f"the prediction has no turns ('output' is empty or missing); it must hold exactly one "
                         f"turn, the final one (turn_id {last_id})")
    if len(turns) > 1:
        raise ValueError(f"the prediction has {len(turns)} turns; VAKRA scores exactly one predicted turn, the "
                         f"final one (turn_id {last_id})")
    turn = turns[0]
    if not isinstance(turn, dict):
        raise ValueError("the prediction's turn is not a JSON object")
    if turn.get("turn_id") is not None and str(turn["turn_id"]) != str(last_id):
        ids = [str(t.get("turn_id")) for t in gt]
        if str(turn["turn_id"]) in ids:
            raise ValueError(f"the prediction's turn_id {turn['turn_id']} is not the last ground-truth turn "
                             f"({last_id}); only the last turn is scored")
        raise ValueError(f"the prediction's turn_id {turn['turn_id']} matches no ground-truth turn (turn_ids: "
                         f"{', '.join(ids)})")
    return turn


def tool_calls(turn: Mapping[str, Any]) -> list[Call]:
    """A turn's tool calls, in order (`sequence.tool_call`; an old-style list `sequence` is read too)."""
    sequence = turn.get("sequence")
    raw = sequence.get("tool_call") if isinstance(sequence, dict) else sequence
    calls = []
    for entry in raw if isinstance(raw, list) else []:
        if isinstance(entry, dict) and isinstance(entry.get("function"), dict):
            entry = entry["function"]  # OpenAI-style {"function": {"name", "arguments"}}
        if isinstance(entry, dict):
            calls.append(Call(name=str(entry.get("name") or ""), arguments=entry.get("arguments")))
        else:
            calls.append(Call(name="", arguments=entry))
    return calls


def stored_responses(turn: Mapping[str, Any]) -> list[Any]:
    """The tool responses written in the file (`sequence.tool_response`), if any."""
    sequence = turn.get("sequence")
    responses = sequence.get("tool_response") if isinstance(sequence, dict) else None
    return list(responses) if isinstance(responses, list) else []


def answer_text(answer: Any) -> str:
    """An answer as the judges read it. Rows keep every column (VAKRA kept only the first of each row)."""
    if answer is None:
        return ""
    if isinstance(answer, str):
        return answer
    if isinstance(answer, list):
        rows = [_row(item) for item in answer]
        return ("; " if any(isinstance(item, list) and len(item) > 1 for item in answer) else ", ").join(rows)
    return _cell(answer)


def _row(item: Any) -> str:
    return ", ".join(_cell(c) for c in item) if isinstance(item, list) else _cell(item)


def _cell(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    return "" if value is None else str(value)
