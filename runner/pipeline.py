"""One run: load -> ask -> score -> record -> aggregate, resumable from the samples files."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.benchmarks.base import Context, Loaded, Task
from runner.build import Built
from runner.display import Display
from runner.errors import CallError, ConfigError, RunnerError
from runner.redact import redact_text
from runner.tracking.local import SampleStore, latest, record_key, write_json
from runner.types import Sample, SampleRecord, TaskResult

log = logging.getLogger("runner")


@dataclass
class _Job:
    task: Task
    loaded: Loaded
    sample: Sample


def error_record(task: Task, sample_id: Any, prompt: Any, reference: Any, error: str,
                 model: str | None) -> dict[str, Any]:
    """The record of a sample that could not be asked or scored."""
    return SampleRecord(id=sample_id, task=task.name, prompt=prompt, reference=reference, status="error",
                        error=redact_text(error), model=model).to_dict()


async def _evaluate(job: _Job, ctx: Context) -> dict[str, Any]:
    try:
        record = await job.task.evaluate(job.sample, job.loaded.shots, ctx)
        return record.to_dict()
    except (RunnerError, asyncio.CancelledError):
        raise
    except CallError as exc:
        error = f"call failed after {exc.attempts} attempt(s): {exc}"
    except Exception as exc:  # noqa: BLE001 - one bad sample must not stop the run; it is recorded
        log.debug("sample %s/%s failed", job.task.name, job.sample.id, exc_info=True)
        error = f"{type(exc).__name__}: {exc}"
    model = ctx.model.name if ctx.model else None
    return error_record(job.task, job.sample.id, job.sample.input, job.sample.target, error, model)


def plan(built: Built, store: SampleStore) -> tuple[dict[str, Loaded], list[_Job], dict[str, int]]:
    """Load every task and decide what to ask: samples without a finished record (`Task.finished`; by
    default errors are re-asked)."""
    loaded: dict[str, Loaded] = {}
    jobs: list[_Job] = []
    kept: dict[str, int] = {}
    model = built.model.name if built.model else None
    for task in built.tasks:
        data = built.benchmark.load(task)
        loaded[task.name] = data
        existing = store.load(task.name)
        _check_same_model(existing.values(), model, store.path(task.name))
        done = {k for k, r in existing.items() if task.finished(r)}
        for bad_id, reason in data.bad:
            if record_key(bad_id) not in done:
                store.append(error_record(task, bad_id, None, None, reason, model))
        todo = [s for s in data.samples if record_key(s.id) not in done]
        kept[task.name] = len(data.samples) - len(todo)
        jobs.extend(_Job(task, data, s) for s in todo)
    return loaded, jobs, kept


def _check_same_model(records: Any, model: str | None, path: Path) -> None:
    """Resuming into a run dir written for another model would mix two models' answers."""
    others = {r.get("model") for r in records if r.get("model") and r.get("model") != model}
    if others:
        raise ConfigError(f"{path} holds samples of model {', '.join(sorted(others))}, not {model}; "
                          "resume with the same model, or choose a new hydra.run.dir")


async def execute(built: Built, run_dir: Path, *, seed: int = 0, show_progress: bool = True
                  ) -> tuple[dict[str, TaskResult], dict[str, list[dict[str, Any]]]]:
    """Ask and score every pending sample, append each record as it finishes, and aggregate.

    Returns each task's results block and its records (as on disk).
    """
    store = SampleStore(run_dir)
    ctx = Context(model=built.model, panel=built.panel, seed=seed, run_dir=run_dir)
    try:
        loaded, jobs, kept = plan(built, store)
        display = Display(enabled=show_progress,
                          retries=lambda: sum(e.stats.retries for e in built.endpoints()))
        with display:
            for task in built.tasks:
                total = len(loaded[task.name].samples) + len(loaded[task.name].bad)
                display.add_task(task.name, total=total, done=kept[task.name] + len(loaded[task.name].bad))
            await _run_jobs(jobs, ctx, store, display)
    finally:
        store.close()
        await _close_tasks(built.tasks)
    results: dict[str, TaskResult] = {}
    records: dict[str, list[dict[str, Any]]] = {}
    for task in built.tasks:
        records[task.name] = _records_of(task, loaded[task.name], store)
        results[task.name] = task.aggregate(records[task.name])
        task.finalize(records[task.name], results[task.name], run_dir)
    return results, records


async def _close_tasks(tasks: Sequence[Task]) -> None:
    for task in tasks:
        try:
            await task.close()
        except Exception as exc:  # noqa: BLE001 - a failed clean-up must not hide the run's results
            log.warning("closing task %s failed: %s", task.name, exc)


async def _run_jobs(jobs: Sequence[_Job], ctx: Context, store: SampleStore, display: Display) -> None:
    if not jobs:
        return
    endpoints = ([ctx.model] if ctx.model else []) + (ctx.panel.judges if ctx.panel else [])
    # Enough samples in flight to keep every endpoint's own limit busy, without one coroutine per sample.
    width = min(len(jobs), 2 * max((e.concurrency for e in endpoints), default=8))
    queue: asyncio.Queue[_Job] = asyncio.Queue()
    for job in jobs:
        queue.put_nowait(job)

    async def worker() -> None:
        while True:
            try:
                job = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            record = await _evaluate(job, ctx)
            store.append(record)
            display.advance(job.task.name, error=record["status"] == "error")

    workers = [asyncio.create_task(worker()) for _ in range(width)]
    try:
        await asyncio.gather(*workers)
    except BaseException:
        for w in workers:
            w.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        raise


def _records_of(task: Task, data: Loaded, store: SampleStore) -> list[dict[str, Any]]:
    """The task's records from its samples file, restricted to this run's samples."""
    wanted = {record_key(s.id) for s in data.samples} | {record_key(b[0]) for b in data.bad}
    return [r for r in latest(store.load(task.name).values()) if record_key(r["id"]) in wanted]


def usage_summary(built: Built) -> dict[str, Any]:
    """Token, cost and retry accounting per endpoint, with the served model ids."""
    out: dict[str, Any] = {}
    for role, endpoint in ([("model", built.model)] if built.model else []) + \
            [("judge", j) for j in built.panel.judges]:
        out[endpoint.name] = {"role": role, "model": endpoint.model, **endpoint.stats.to_dict(),
                              "served_models": sorted(endpoint.served_models)}
    return out


def timestamp() -> str:
    """Local time as ISO 8601 with offset."""
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")
