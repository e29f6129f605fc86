"""Which page goes where: a run's `view/index.html`, a sweep's (and each of its jobs'), and two runs compared."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from runner.errors import DataError
from runner.view.diff import diff_data
from runner.view.page import relative_href, write_page
from runner.view.rows import Strings, task_view
from runner.view.run_data import Run, kind_of, read_run
from runner.view.sweep import sweep_data

VIEW_DIR = "view"
INDEX = "index.html"


def page_path(run_dir: Path) -> Path:
    """Where a run's (or a sweep's) page is written."""
    return run_dir / VIEW_DIR / INDEX


def run_info(run: Run) -> dict[str, Any]:
    """The run's header: what results.json says about it (little when the run has not written it yet)."""
    results = run.results
    meta = results.get("run")
    meta = meta if isinstance(meta, dict) else {}
    summary = results.get("summary") if isinstance(results.get("summary"), dict) else {}
    return {"dir": str(run.dir), "benchmark": results.get("benchmark"), "model": results.get("model"),
            "judges": results.get("judges") or [], "summary": summary or {},
            "totals": results.get("totals"), "started": meta.get("started"), "duration_s": meta.get("duration_s"),
            "stopped": results.get("stopped"), "has_results": bool(results),
            "banners": banners(results, run)}


def banners(results: dict[str, Any], run: Run) -> list[dict[str, str]]:
    """What a reader must see before any number (`{kind, text}`, shown at the top of the page): a demo run,
    a run the budget stopped, one without results yet, samples that ended as errors."""
    out = []
    if results.get("demo"):
        names = ", ".join(str(n) for n in results.get("demo_endpoints") or []) or "the demo model"
        out.append({"kind": "demo", "text": f"DEMO: {names} = the embedded SmolLM2-135M model. These numbers show "
                                            "that the pipeline works, not what a model can do."})
    if results.get("stopped"):
        out.append({"kind": "stopped", "text": f"Stopped: {results['stopped']}. Not every sample was asked; "
                                               "re-running the same run dir goes on."})
    if not results:
        out.append({"kind": "incomplete", "text": "Incomplete: this run has no results.json yet (stopped or still "
                                                  "running); the samples files alone are shown."})
    summary = results.get("summary") if isinstance(results.get("summary"), dict) else {}
    errors = (summary or {}).get("n_errors") or sum(int((b or {}).get("n_errors") or 0)
                                                    for b in (results.get("tasks") or {}).values())
    if errors:
        out.append({"kind": "errors", "text": f"{errors} sample(s) ended as errors and are left out of the "
                                              "metrics (filter the samples by 'error')."})
    failed = [f"{name} ({b['failed']})" for name, b in (results.get("tasks") or {}).items()
              if isinstance(b, dict) and b.get("failed")]
    if failed:
        out.append({"kind": "errors", "text": f"The metrics of {'; '.join(failed)} could not be computed; their "
                                              "samples are shown (runner rescore DIR recomputes them)."})
    return out


def run_data(run: Run) -> dict[str, Any]:
    """Everything the run page shows: the header, and per task its results block and sample rows."""
    strings = Strings()
    blocks = run.results.get("tasks") or {}
    tasks = [task_view(name, records, blocks.get(name) or {}, strings) for name, records in run.tasks.items()]
    return {"kind": "run", "run": run_info(run), "tasks": tasks, "strings": strings.items}


def _title(*parts: Any) -> str:
    return " · ".join(str(p) for p in parts if p) + " — runner view"


def write_run(run_dir: Path) -> Path:
    """Write `run_dir/view/index.html` and return its path."""
    run = read_run(run_dir)
    return write_page(page_path(run_dir), run_data(run), _title(run.results.get("benchmark"), run.label))


def write_sweep(root: Path) -> Path:
    """Write every job's page, then `root/view/index.html` (comparison, charts, links to the jobs' pages)."""
    data = sweep_data(root, page_path(root).parent, job_page=write_run)
    return write_page(page_path(root), data, _title("sweep", root.name))


def write_view(folder: Path) -> Path:
    """`python -m runner.view DIR`: the page of a run dir or a sweep dir."""
    return write_run(folder) if kind_of(folder) == "run" else write_sweep(folder)


def diff_path(a: Path, b: Path) -> Path:
    """Where run A's comparison with run B is written: `A/view/diff-<B's folder name>.html`."""
    name = b.name if b.resolve().name != a.resolve().name else f"{b.resolve().parent.name}-{b.name}"
    return a / VIEW_DIR / f"diff-{re.sub(r'[^A-Za-z0-9._-]+', '_', name) or 'other'}.html"


def write_diff(a: Path, b: Path) -> Path:
    """`python -m runner.view A B`: A's and B's samples whose score differs, side by side."""
    for folder in (a, b):
        if kind_of(folder) != "run":
            raise DataError(f"{folder} is a sweep dir; comparing two runs needs two run dirs (e.g. two jobs of it)")
    run_a, run_b = read_run(a), read_run(b)
    path = diff_path(a, b)
    data = diff_data(run_a, run_b)
    for side, run in (("a", run_a), ("b", run_b)):
        own = page_path(run.dir)
        data[side]["href"] = relative_href(own, path.parent) if own.is_file() else None
    return write_page(path, data, _title(run_a.label, "vs", run_b.label))
