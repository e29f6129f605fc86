"""Time the intervals and judge statistics a run adds to results.json, on N synthetic records.

    .venv/bin/python bench/bench_uncertainty.py [N]

Two tasks as the EVE YAML builds them: multiple choice (Wilson intervals) and an open-ended task judged
by three judges (bootstrap of the panel means, kappas with intervals), n_boot 1000.
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from conftest import compose  # noqa: E402

from runner.config import instantiate  # noqa: E402
from runner.metrics.uncertainty import with_uncertainty  # noqa: E402


def records(task: str, n: int, judged: bool) -> list[dict[str, object]]:
    rng = random.Random(0)
    out: list[dict[str, object]] = []
    for i in range(n):
        if judged:
            judgements = [{"judge": j, "status": "ok", "verdict": v, "score": float(v == "correct")}
                          for j in ("a", "b", "c") for v in [rng.choice(["correct", "incorrect"])]]
            out.append({"id": i, "status": "ok", "reference": "r", "judgements": judgements, "scores": {}})
        else:
            right = rng.random() < 0.7
            out.append({"id": i, "status": "ok", "reference": "A", "answer": "A" if right else "B",
                        "scores": {"accuracy": float(right)}})
    return out


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    cfg = compose(["benchmark=eve", "benchmark.tasks=[mcqa_single_answer,open_ended]"])
    tasks = {t.name: t for t in instantiate(cfg.benchmark, "benchmark").build_tasks()}
    print(f"N={n}, n_boot=1000")
    for name, judged in (("mcqa_single_answer", False), ("open_ended", True)):
        recs = records(name, n, judged)
        task = tasks[name]
        start = time.perf_counter()
        result = task.aggregate(recs)
        aggregated = time.perf_counter()
        with_uncertainty(task, recs, result, n_boot=1000, seed=0)
        done = time.perf_counter()
        print(f"{name:<20} aggregate {aggregated - start:6.3f} s   intervals + judge stats {done - aggregated:6.3f} s")


if __name__ == "__main__":
    main()
