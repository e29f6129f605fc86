"""VAKRA's figures from the dialogue records: per-domain results, the run summary, and the VAKRA-shaped report.

Per domain (as VAKRA reports it): `num_samples` counts the ground-truth dialogues, `num_correct` sums the
dialogue scores, `mean_dialogue_score` divides by the dialogues that were paired and scored (null when none
was). Overall, `mean_dialogue_score` = n_correct / n_samples, so a missing prediction counts as 0 there (null
when there is no ground-truth dialogue at all). A missing prediction is not an error: its record is `ok`
with `extra.missing_prediction` and a dialogue score of 0. A dialogue that could not be scored (bad
prediction, server that never started, judge call that kept failing) is an error: left out of the domain
mean, counted in num_samples (so 0 overall), listed in error_ids and retried on resume.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.tracking.local import write_json
from runner.types import TaskResult

FILE_PROBLEM = "file:"
"""Id prefix of records standing for an unreadable ground-truth file rather than a dialogue."""
REPORT_FILE = "vakra_results.json"


@dataclass
class DomainResult(TaskResult):
    """A domain's results block: the contract's metrics plus the pairing VAKRA reports."""

    n_paired: int = 0
    """Dialogues with a prediction that were scored."""
    missing_prediction_uuids: list[Any] = field(default_factory=list)
    extra_prediction_uuids: list[Any] = field(default_factory=list)
    duplicate_uuids: dict[str, list[Any]] = field(default_factory=dict)
    """uuids that occur more than once in a file (the last occurrence was used)."""


def _extra(record: Mapping[str, Any]) -> Mapping[str, Any]:
    return record.get("extra") or {}


def _missing(record: Mapping[str, Any]) -> bool:
    return bool(_extra(record).get("missing_prediction"))


def _is_error(record: Mapping[str, Any]) -> bool:
    # Runs before missing predictions became `ok` recorded them as errors; they are still missing ones.
    return record.get("status") == "error" and not _missing(record)


def paired(records: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The dialogues that had a prediction and were scored (neither missing nor an error)."""
    return [r for r in records if not str(r["id"]).startswith(FILE_PROBLEM) and not _missing(r)
            and r.get("status") != "error"]


def _score(record: Mapping[str, Any]) -> float:
    return float((record.get("scores") or {}).get("dialogue_score", 0.0))


def domain_result(records: Sequence[Mapping[str, Any]], pairing: Mapping[str, Any] | None) -> DomainResult:
    """A domain's figures from its records (and, for extra/duplicate uuids, from its files' pairing)."""
    dialogues = [r for r in records if not str(r["id"]).startswith(FILE_PROBLEM)]
    missing = [r["id"] for r in dialogues if _missing(r)]
    scored = paired(records)
    errors = [r["id"] for r in records if _is_error(r)]
    invalid = [r["id"] for r in scored if r.get("status") == "invalid"]
    num_correct = float(sum(_score(r) for r in scored))
    metrics: dict[str, Any] = {"mean_dialogue_score": num_correct / len(scored) if scored else None,
                               "num_correct": num_correct, "num_samples": len(dialogues)}
    pairing = pairing or {}
    return DomainResult(n=len(dialogues), n_invalid=len(invalid), invalid_ids=invalid, metrics=metrics,
                        n_errors=len(errors), error_ids=errors, n_paired=len(scored),
                        missing_prediction_uuids=sorted(missing, key=str),
                        extra_prediction_uuids=list(pairing.get("extra_prediction_uuids", [])),
                        duplicate_uuids=dict(pairing.get("duplicate_uuids", {})))


def overall(domains: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The run summary from per-domain counts (keys: n_paired, n_missing, n_extra, num_samples, num_correct)."""
    n_samples = sum(int(d["num_samples"]) for d in domains)
    n_correct = float(sum(float(d["num_correct"]) for d in domains))
    return {"n_domains": len(domains),
            "n_paired_dialogues": sum(int(d["n_paired"]) for d in domains),
            "n_missing_predictions": sum(int(d["n_missing"]) for d in domains),
            "n_extra_predictions": sum(int(d["n_extra"]) for d in domains),
            "n_samples": n_samples,
            "n_correct": n_correct,
            "mean_dialogue_score": n_correct / n_samples if n_samples else None}


def summary(results: Mapping[str, TaskResult]) -> dict[str, Any]:
    """The `summary` block of results.json."""
    counts = []
    for r in results.values():
        counts.append({"n_paired": getattr(r, "n_paired", 0),
                       "n_missing": len(getattr(r, "missing_prediction_uuids", [])),
                       "n_extra": len(getattr(r, "extra_prediction_uuids", [])),
                       "num_samples": r.metrics.get("num_samples") or 0,
                       "num_correct": r.metrics.get("num_correct") or 0})
    return {**overall(counts), "n_errors": sum(r.n_errors for r in results.values()),
            "n_invalid": sum(r.n_invalid for r in results.values())}


def dialogue_entry(record: Mapping[str, Any]) -> dict[str, Any]:
    """One scored dialogue in VAKRA's report shape."""
    extra = _extra(record)
    score = _score(record)
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
    scores = [_score(r) for r in scored]
    return {"domain": domain, "n_groundtruth": pairing.get("n_groundtruth", result.metrics["num_samples"]),
            "n_prediction": pairing.get("n_prediction"), "n_paired": result.n_paired,
            "missing_prediction_uuids": result.missing_prediction_uuids,
            "extra_prediction_uuids": result.extra_prediction_uuids,
            "duplicate_uuids": result.duplicate_uuids,
            "errors": {str(r["id"]): r.get("error") for r in records if _is_error(r)},
            "invalid_uuids": result.invalid_ids,
            "dialogues": [dialogue_entry(r) for r in scored],
            "summary": {**result.metrics, "min_dialogue_score": min(scores, default=None),
                        "max_dialogue_score": max(scores, default=None)}}


def write_report(run_dir: Path, head: Mapping[str, Any], domains: Sequence[str], block: Mapping[str, Any]) -> Path:
    """Put one domain's block into `vakra_results.json` (the other selected domains' blocks are kept)."""
    path = run_dir / REPORT_FILE
    report: dict[str, Any] = {}
    if path.exists():
        try:
            report = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            report = {}
    same_run = all(report.get(k) == v for k, v in head.items())
    kept = report.get("domains", {}) if same_run and isinstance(report.get("domains"), dict) else {}
    kept[block["domain"]] = block
    ordered = {d: kept[d] for d in domains if d in kept}
    all_scores = [d["score"] for b in ordered.values() for d in b["dialogues"]]
    counts = [{"n_paired": b["n_paired"], "n_missing": len(b["missing_prediction_uuids"]),
               "n_extra": len(b["extra_prediction_uuids"]), "num_samples": b["summary"]["num_samples"],
               "num_correct": b["summary"]["num_correct"]} for b in ordered.values()]
    write_json(path, {**head, "domains": ordered,
                      "summary": {**overall(counts), "min_dialogue_score": min(all_scores, default=None),
                                  "max_dialogue_score": max(all_scores, default=None)}})
    return path
