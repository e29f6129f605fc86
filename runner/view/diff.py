"""Two runs compared sample by sample: per task they share, the samples (paired by id and epoch) whose
headline score or outcome differs, with both records whole so the page can show them side by side."""

from __future__ import annotations

from typing import Any

from runner.run.store import key_of
from runner.view.rows import Strings, default_score, pairwise_models, sample_row, score_keys
from runner.view.run_data import Run


def task_diff(name: str, a: list[dict[str, Any]], b: list[dict[str, Any]], block: dict[str, Any],
              strings: Strings) -> dict[str, Any]:
    """One shared task: the differing pairs (A's order), how many went each way, ids found in one run only.

    Both runs are scored with the score A's records name (so a change of panel in B still pairs up); a
    sample that has a score in one run and none in the other (an error) differs, with no `delta`.
    """
    pairwise = pairwise_models(a) or pairwise_models(b)
    key = default_score(score_keys(a), block, pairwise)
    by_b = {key_of(r): r for r in b}
    keys_a = {key_of(r) for r in a}
    pairs: list[dict[str, Any]] = []
    n_paired = 0
    for record in a:
        other = by_b.get(key_of(record))
        if other is None:
            continue
        n_paired += 1
        row_a, row_b = sample_row(record, key, pairwise, strings), sample_row(other, key, pairwise, strings)
        if row_a["_s"] == row_b["_s"] and row_a["_c"] == row_b["_c"]:
            continue
        both = row_a["_s"] is not None and row_b["_s"] is not None
        pairs.append({"a": row_a, "b": row_b, "delta": row_a["_s"] - row_b["_s"] if both else None})
    deltas = [p["delta"] for p in pairs if p["delta"] is not None]
    return {"name": name, "score_key": key, "pairwise": pairwise, "n_paired": n_paired, "pairs": pairs,
            "a_better": sum(1 for d in deltas if d > 0), "b_better": sum(1 for d in deltas if d < 0),
            "only_a": [key_of(r) for r in a if key_of(r) not in by_b],
            "only_b": [key_of(r) for r in b if key_of(r) not in keys_a]}


def diff_data(a: Run, b: Run) -> dict[str, Any]:
    """The comparison page's data: both runs' headers and every task they share."""
    strings = Strings()
    blocks = a.results.get("tasks") or {}
    tasks = [task_diff(name, records, b.tasks[name], blocks.get(name) or {}, strings)
             for name, records in a.tasks.items() if name in b.tasks]
    return {"kind": "diff", "strings": strings.items, "tasks": tasks,
            "a": {"label": a.label, "dir": str(a.dir)}, "b": {"label": b.label, "dir": str(b.dir)}}
