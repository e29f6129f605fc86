"""A win-rate comparison's files in `<run_dir>/win_rate/`, shaped like EVE's script's, plus the dropped rows
and a chart, written from the records after aggregation; and the tracker's rationale tables and charts.

- `results_<task>.csv`: one row per question: the question, reference, both answers, and per judge its
  decision (a model's name, `tie`, `invalid` or `error`), who was shown first, and the rationale.
- `summary_<task>.csv`: one row per judge: counts, rates (fractions), per-position rates, position bias.
- `metrics_<task>.csv`: long format `model_name, task, subtask, opponent, metric, value`, for both models.
- `dropped_<task>.csv`: the rows the pairing left out, with the reason.
- `comparison_<task>.png`: wins / ties / losses per judge, and alpaca win rates against the 50 % line.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.benchmarks.win_rate.metrics import Tally, judgement_of, tally
from runner.benchmarks.win_rate.task import PairwiseTask
from runner.config.paths import inside
from runner.metrics.results import judge_names
from runner.untrusted import csv_cell

if TYPE_CHECKING:
    from runner.tasks.base import BaseTask
    from runner.types import TaskResult

SUBDIR = "win_rate"


class WinRateReporter:
    """Writes every comparison's CSVs and chart; returns the rationale tables and charts for the tracker."""

    def report(self, tasks: Sequence[BaseTask], records: Mapping[str, list[dict[str, Any]]],
               results: Mapping[str, TaskResult], run_dir: Path) -> dict[str, Any] | None:
        tables: dict[str, tuple[list[str], list[list[Any]]]] = {}
        images: dict[str, Path] = {}
        for task in tasks:
            if not isinstance(task, PairwiseTask) or task.name not in results:
                continue
            mine = records.get(task.name, [])
            write_outputs(task, mine, results[task.name], run_dir)
            tables[f"rationales/{task.name}"] = results_table(task, mine)
            images[f"charts/{task.name}"] = chart_path(task, run_dir)
        return {"tables": tables, "images": images} if tables else None


def chart_path(task: PairwiseTask, run_dir: Path) -> Path:
    """Where the task's chart is written."""
    return inside(Path(run_dir), SUBDIR, f"comparison_{task.name}.png")


def write_outputs(task: PairwiseTask, records: Sequence[Mapping[str, Any]], result: TaskResult,
                  run_dir: Path) -> None:
    """Write the task's CSVs and chart (idempotent: a resumed run rewrites them from all records)."""
    out = Path(run_dir) / SUBDIR
    out.mkdir(parents=True, exist_ok=True)
    judged = [r for r in records if r.get("status") != "error"]
    judges = judge_names(judged)
    tallies = {j: tally(judged, j, task.model_a, task.model_b) for j in judges}
    _write_csv(inside(out, f"results_{task.name}.csv"), *results_table(task, records))
    _write_csv(inside(out, f"summary_{task.name}.csv"), *summary_table(task, tallies))
    _write_csv(inside(out, f"metrics_{task.name}.csv"), *metrics_table(task, result, tallies))
    if task.pairing is not None:
        columns = ["side", "model", "id", "reason", "question"]
        names = {"a": task.model_a, "b": task.model_b}
        rows = [[d["side"], names[d["side"]], d["id"], d["reason"], d["question"]] for d in task.pairing.dropped]
        _write_csv(inside(out, f"dropped_{task.name}.csv"), columns, rows)
    from runner.outputs.charts import win_rate_chart

    # A judge with no valid judgement draws empty bars; its label says n=0.
    shares = {f"{j} (n={t.valid}" + (f", {t.invalid} invalid)" if t.invalid else ")"):
              (t.share(t.wins_a) or 0.0, t.share(t.ties) or 0.0, t.share(t.wins_b) or 0.0)
              for j, t in tallies.items()}
    win_rate_chart(shares, task.model_a, task.model_b, chart_path(task, run_dir),
                   title=f"{task.model_a} vs {task.model_b} ({len(judged)} questions)")


def _write_csv(path: Path, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    with open(path, "w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(columns)
        # Questions and answers are untrusted text: never a formula in a spreadsheet.
        writer.writerows([csv_cell(v) for v in row] for row in rows)


def _decision(entry: Mapping[str, Any] | None) -> str | None:
    if entry is None:
        return None
    return str(entry["verdict"]) if entry.get("status") == "ok" else str(entry.get("status"))


def results_table(task: PairwiseTask, records: Sequence[Mapping[str, Any]]) -> tuple[list[str], list[list[Any]]]:
    """One row per question with every judge's decision, order and rationale (also the W&B table)."""
    judges = judge_names(records)
    both = task.orders == "both"
    a, b = task.model_a, task.model_b
    columns = ["id", "question", "target", f"answer_{a}", f"answer_{b}"]
    for j in judges:
        columns.append(f"judge_{j}_decision")
        columns += [f"judge_{j}_decision_{a}_first", f"judge_{j}_decision_{b}_first", f"judge_{j}_flip"] \
            if both else [f"judge_{j}_shown_first"]
        columns.append(f"judge_{j}_rationale")
    rows = []
    for r in records:
        extra = r.get("extra") or {}
        row: list[Any] = [r.get("id"), r.get("prompt"), r.get("reference"), extra.get("response_a"),
                          extra.get("response_b")]
        for j in judges:
            entry = judgement_of(r, j)
            calls = {c.get("shown_first"): c for c in (entry or {}).get("calls") or []}
            row.append(_decision(entry) if r.get("status") != "error" else "error")
            if both:
                first_a, first_b = (_call_decision(calls.get(m)) for m in (a, b))
                row += [first_a, first_b, None if entry is None or entry.get("status") != "ok"
                        else first_a != first_b]
            else:
                row.append((entry or {}).get("shown_first"))
            row.append((entry or {}).get("explanation") if (entry or {}).get("status") == "ok"
                       else (entry or {}).get("raw"))
        rows.append(row)
    return columns, rows


def _call_decision(call: Mapping[str, Any] | None) -> str | None:
    if call is None:
        return None
    return str(call["verdict"]) if call.get("status") == "ok" else str(call.get("status"))


def summary_table(task: PairwiseTask, tallies: Mapping[str, Tally]) -> tuple[list[str], list[list[Any]]]:
    """One row per judge: counts, rates over valid judgements, and where model A was shown."""
    a, b = task.model_a, task.model_b
    columns = ["judge", f"{a}_wins", f"{b}_wins", "ties", "valid", "invalid", f"{a}_win_rate", f"{b}_win_rate",
               "tie_rate", f"{a}_alpaca_win_rate", f"{b}_alpaca_win_rate", f"{a}_shown_first",
               f"{a}_shown_second", f"{a}_win_rate_shown_first", f"{a}_win_rate_shown_second",
               "position_bias"]
    both = task.orders == "both"
    if both:
        columns.append("flip_rate")
    rows = []
    for j, t in tallies.items():
        row: list[Any] = [j, t.wins_a, t.wins_b, t.ties, t.valid, t.invalid, t.share(t.wins_a),
                          t.share(t.wins_b), t.share(t.ties), t.share(t.wins_a + t.ties / 2),
                          t.share(t.wins_b + t.ties / 2), t.a_first, t.a_second,
                          t.a_win_rate_first, t.a_win_rate_second, t.position_bias]
        if both:
            row.append(t.flip_rate)
        rows.append(row)
    return columns, rows


def metrics_table(task: PairwiseTask, result: TaskResult, tallies: Mapping[str, Tally],
                  ) -> tuple[list[str], list[list[Any]]]:
    """EVE's long format, for both models (EVE wrote model B's rows only); differences are this − opponent."""
    m = result.metrics
    columns = ["model_name", "task", "subtask", "opponent", "metric", "value"]
    rows: list[list[Any]] = []
    valid = sum(t.valid for t in tallies.values())
    ties = sum(t.ties for t in tallies.values())
    invalid = sum(t.invalid for t in tallies.values())
    for model, opponent, wins in ((task.model_a, task.model_b, "wins_a"), (task.model_b, task.model_a, "wins_b")):
        values: dict[str, Any] = {
            "win_rate": m.get(f"aggregate/{model}_win_rate"),
            "avg_win_rate": m.get(f"aggregate/avg_{model}_win_rate"),
            "alpaca_win_rate": m.get(f"aggregate/{model}_alpaca_win_rate"),
            "avg_alpaca_win_rate": m.get(f"aggregate/avg_{model}_alpaca_win_rate"),
            "total_wins": sum(getattr(t, wins) for t in tallies.values()),
            "total_ties": ties, "total_evaluations": valid, "total_invalid": invalid,
            "win_rate_difference_vs_opponent": _diff(m, f"aggregate/{model}_win_rate",
                                                     f"aggregate/{opponent}_win_rate"),
            "alpaca_win_rate_difference_vs_opponent": _diff(m, f"aggregate/{model}_alpaca_win_rate",
                                                            f"aggregate/{opponent}_alpaca_win_rate"),
            "judge_agreement": m.get("judge_agreement"),
        }
        for j in tallies:
            values[f"win_rate_judge_{j}"] = m.get(f"win_rate/{j}/{model}")
            values[f"alpaca_win_rate_judge_{j}"] = m.get(f"alpaca_win_rate/{j}/{model}")
            values[f"position_bias_judge_{j}"] = m.get(f"position_bias/{j}")
            if f"flip_rate/{j}" in m:
                values[f"flip_rate_judge_{j}"] = m[f"flip_rate/{j}"]
        rows += [[model, task.name, "win_rate", opponent, k, v] for k, v in values.items()]
    return columns, rows


def _diff(metrics: Mapping[str, float | None], mine: str, theirs: str) -> float | None:
    a, b = metrics.get(mine), metrics.get(theirs)
    return None if a is None or b is None else a - b
