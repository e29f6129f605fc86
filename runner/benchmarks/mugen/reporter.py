"""MUGEN's own files and console lines, written from the records after aggregation.

Per task: `<run_dir>/<Task_Name>/llm_judge_results.json` (the input records plus `Explanation` and
`Judgement`, in file or dataset order, as MUGEN's judge script writes it); when the model was asked, also
its replies in the MUGEN layout, `<run_dir>/predictions/<Task_Name>/output.json`; and MUGEN's lines
`Task: X | Accuracy: ...` (plus the invalid and not-judged ids). Then one line per dimension present and
the Overall line (micro averages, as results.json's summary).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.benchmarks.mugen.catalog import ABBREVIATIONS
from runner.benchmarks.mugen.scores import tally
from runner.benchmarks.mugen.task import MugenTask
from runner.config.paths import inside
from runner.run.store import record_key

if TYPE_CHECKING:
    from runner.tasks.base import BaseTask
    from runner.types import TaskResult

JUDGED_FILE = "llm_judge_results.json"


class MugenReporter:
    """Writes MUGEN's per-task judge files (and prediction files when generating) and prints its lines."""

    def report(self, tasks: Sequence[BaseTask], records: Mapping[str, list[dict[str, Any]]],
               results: Mapping[str, TaskResult], run_dir: Path) -> dict[str, Any] | None:
        for task in tasks:
            if isinstance(task, MugenTask) and task.name in results:
                write_task_files(task, records.get(task.name, []), Path(run_dir))
                for line in task_lines(task.name, results[task.name]):
                    print(line, flush=True)
        for line in summary_lines(results):
            print(line, flush=True)
        return None


def write_task_files(task: MugenTask, records: Sequence[Mapping[str, Any]], run_dir: Path) -> None:
    """The task's `llm_judge_results.json` and, when the model was asked, its `predictions/.../output.json`."""
    by_id = {record_key(r["id"]): r for r in records}
    inputs: list[dict[str, Any]] = []
    judged: list[dict[str, Any]] = []
    for item_id in task.order:
        rec = by_id.get(record_key(item_id))
        if task.predictions:
            source = task.sources.get(record_key(item_id))
        else:
            source = ((rec or {}).get("extra") or {}).get("input")
        if not isinstance(source, dict):
            continue  # a failed generation has no reply; a non-object record cannot carry fields
        inputs.append(source)
        judged.append({**source, **mugen_fields(rec)})
    if not task.predictions:
        write_records(inside(run_dir, "predictions", task.name, "output.json"), inputs)
    write_records(inside(run_dir, task.name, JUDGED_FILE), judged)


def task_lines(name: str, result: TaskResult) -> list[str]:
    """MUGEN's console lines for one task."""
    scored = result.n - result.n_errors
    accuracy = result.metrics.get("accuracy")
    n_correct = round(accuracy * scored) if accuracy is not None else 0
    lines = [f"Task: {name} | Accuracy: {percent(accuracy)} ({n_correct}/{scored})"]
    if result.invalid_ids:
        lines.append(f"Invalid judgements for IDs: {result.invalid_ids}")
    if result.error_ids:
        lines.append(f"Not judged (errors, see samples/{name}.jsonl) for IDs: {result.error_ids}")
    return lines


def summary_lines(results: Mapping[str, TaskResult]) -> list[str]:
    """One line per dimension present (in the data card's order), then Overall."""
    counts = tally(results)
    lines = [f"Dimension: {d} ({ABBREVIATIONS[d]}) | Accuracy: {percent(counts.rate(d))} "
             f"({counts.correct[d]}/{counts.judged[d]})" for d in counts.dimensions]
    lines.append(f"Overall | Accuracy: {percent(counts.accuracy)} ({counts.n_correct}/{counts.n_judged})")
    return lines


def percent(rate: float | None) -> str:
    """A rate as MUGEN prints it; n/a when it is over nothing (null in results.json)."""
    return "n/a" if rate is None else f"{100 * rate:.2f}%"


def mugen_fields(record: Mapping[str, Any] | None) -> dict[str, str]:
    """MUGEN's Explanation and Judgement for a record (an unjudged one says why it was not judged)."""
    if record is None:
        return {"Explanation": "not judged in this run", "Judgement": "error"}
    extra = record.get("extra") or {}
    if record.get("status") == "error" or "Judgement" not in extra:
        return {"Explanation": f"not judged: {record.get('error') or 'no judgement recorded'}", "Judgement": "error"}
    return {"Explanation": extra.get("Explanation", ""), "Judgement": extra["Judgement"]}


def write_records(path: Path, records: list[dict[str, Any]]) -> None:
    """A MUGEN JSON file: a list of records, indented by 4, UTF-8 kept as is; written atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(records, indent=4, ensure_ascii=False, default=str), encoding="utf-8")
    os.replace(tmp, path)
