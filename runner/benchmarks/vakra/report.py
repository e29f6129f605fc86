"""VAKRA's figures from the dialogue records: per-domain results and the run summary (the VAKRA-shaped report
file is written from them by runner/benchmarks/vakra/reporter.py).

Per domain (as VAKRA reports it): `num_samples` counts the ground-truth dialogues, `num_correct` sums the
dialogue scores, `mean_dialogue_score` divides by the dialogues that were paired and scored (null when none
was). Overall, `mean_dialogue_score` = n_correct / n_samples, so a missing prediction counts as 0 there (null
when there is no ground-truth dialogue at all). A missing prediction is not an error: its record is `ok`
with `extra.missing_prediction` and a dialogue score of 0. A dialogue that could not be scored (bad
prediction, server that never started, judge call that kept failing) is an error: left out of the domain
mean, counted in num_samples (so 0 overall), listed in error_ids and retried on resume.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from runner.types import TaskResult

FILE_PROBLEM = "file:"
"""Id prefix of records standing for an unreadable ground-truth file rather than a dialogue."""


@dataclass
class DomainResult(TaskResult):
    """A domain's results block: the contract's metrics plus the pairing VAKRA reports."""

    n_paired: int = 0
    """Dialogues with a prediction that were scored."""
    missing_prediction_uuids: list[Any] = field(default_factory=list)
    extra_prediction_uuids: list[Any] = field(default_factory=list)
    duplicate_uuids: dict[str, list[Any]] = field(default_factory=dict)
    """uuids that occur more than once in a file (the last occurrence was used)."""


def extra_of(record: Mapping[str, Any]) -> Mapping[str, Any]:
    """The record's `extra` (empty when it has none)."""
    return record.get("extra") or {}


def _missing(record: Mapping[str, Any]) -> bool:
    return bool(extra_of(record).get("missing_prediction"))


def is_error(record: Mapping[str, Any]) -> bool:
    """A dialogue that could not be scored (a missing prediction is not one)."""
    # Runs before missing predictions became `ok` recorded them as errors; they are still missing ones.
    return record.get("status") == "error" and not _missing(record)


def paired(records: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The dialogues that had a prediction and were scored (neither missing nor an error)."""
    return [r for r in records if not str(r["id"]).startswith(FILE_PROBLEM) and not _missing(r)
            and r.get("status") != "error"]


def dialogue_score(record: Mapping[str, Any]) -> float:
    """The record's dialogue score (0 when it has none)."""
    return float((record.get("scores") or {}).get("dialogue_score", 0.0))


def domain_result(records: Sequence[Mapping[str, Any]], pairing: Mapping[str, Any] | None) -> DomainResult:
    """A domain's figures from its records (and, for extra/duplicate uuids, from its files' pairing)."""
    dialogues = [r for r in records if not str(r["id"]).startswith(FILE_PROBLEM)]
    missing = [r["id"] for r in dialogues if _missing(r)]
    scored = paired(records)
    errors = [r["id"] for r in records if is_error(r)]
    invalid = [r["id"] for r in scored if r.get("status") == "invalid"]
    num_correct = float(sum(dialogue_score(r) for r in scored))
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
