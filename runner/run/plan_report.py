"""The plan of a whole `-m` sweep run with `dry_run=true`: every job's plan.json summed (runner/run/dry_run.py)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from runner.run.dry_run import PLAN_FILE, print_plan, total_cost

log = logging.getLogger("runner.report")


def find_plans(root: Path) -> list[Path]:
    """Every plan.json below `root`, in path order."""
    return sorted(Path(root).rglob(PLAN_FILE))


def sweep_plan(root: Path) -> dict[str, Any] | None:
    """The sum of the plans below `root`, in plan.json's shape plus `jobs` (how many plans were read):
    samples per task name, and per endpoint name the requests, tokens and cost; a cost or an output
    bound unknown in one job is unknown in the sum. None when there is no plan."""
    tasks: dict[str, dict[str, int]] = {}
    endpoints: dict[str, dict[str, Any]] = {}
    jobs = 0
    for path in find_plans(root):
        try:
            plan = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            log.warning("plan: %s left out: %s", path, exc)
            continue
        jobs += 1
        for name, block in (plan.get("tasks") or {}).items():
            tasks.setdefault(name, {"samples": 0})["samples"] += int(block.get("samples", 0))
        for name, block in (plan.get("endpoints") or {}).items():
            into = endpoints.setdefault(name, {"requests": 0, "input_tokens": 0, "output_tokens_max": 0,
                                               "cost_usd": 0.0})
            into["requests"] += int(block.get("requests", 0))
            into["input_tokens"] += int(block.get("input_tokens", 0))
            for key in ("output_tokens_max", "cost_usd"):
                value = block.get(key)
                into[key] = None if value is None or into[key] is None else into[key] + value
    if not jobs:
        return None
    return {"tasks": tasks, "endpoints": endpoints, "total_cost_usd": total_cost(endpoints), "jobs": jobs}


def print_sweep_plan(root: Path) -> dict[str, Any] | None:
    """Print the summed plan of the sweep in `root` (nothing when it has none); return it."""
    total = sweep_plan(root)
    if total is not None:
        print(f"Sweep plan: {total['jobs']} job(s) in {root}")
        print_plan(total)
    return total
