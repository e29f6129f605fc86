"""One run: load -> ask -> score -> record -> aggregate, resumable from the samples files."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from runner.benchmarks.base import Context, Loaded, Task
from runner.build import Built
from runner.display import Display
from runner.errors import CallError, ConfigError, RunnerError
from runner.fingerprint import changed, describe_changes, fingerprint, names
from runner.models.budget import BudgetStop
from runner.models.litellm_model import Endpoint
from runner.redact import redact_text
from runner.store import SampleStore, key_of, latest, record_key
from runner.types import CURRENT_EPOCH, CURRENT_SAMPLE, Sample, SampleRecord, TaskResult

log = logging.getLogger("runner")


@dataclass
class _Job:
    task: Task
    loaded: Loaded
    sample: Sample
    fingerprint: str
    epoch: int = 0


@dataclass
class Plan:
    """What a run will do, decided before anything is written: the data, and the samples to ask."""

    loaded: dict[str, Loaded]
    jobs: list[_Job]
    kept: dict[str, int]


def error_record(task: Task, sample_id: Any, prompt: Any, reference: Any, error: str,
                 model: str | None) -> dict[str, Any]:
    """The record of a sample that could not be asked or scored."""
    return SampleRecord(id=sample_id, task=task.name, prompt=prompt, reference=reference, status="error",
                        error=redact_text(error), model=model).to_dict()


async def _evaluate(job: _Job, ctx: Context) -> dict[str, Any]:
    CURRENT_SAMPLE.set((job.task.name, record_key(job.sample.id, job.epoch)))
    CURRENT_EPOCH.set((job.epoch, ctx.seed + job.epoch) if ctx.epochs > 1 else None)
    try:
        done = await job.task.evaluate(job.sample, job.loaded.shots, ctx)
        return {**done.to_dict(), "epoch": job.epoch, "fingerprint": job.fingerprint}
    except (RunnerError, asyncio.CancelledError, BudgetStop):
        raise
    except CallError as exc:
        error = f"call failed after {exc.attempts} attempt(s): {exc}"
    except Exception as exc:  # noqa: BLE001 - one bad sample must not stop the run; it is recorded
        log.debug("sample %s/%s failed", job.task.name, job.sample.id, exc_info=True)
        error = f"{type(exc).__name__}: {exc}"
    model = ctx.model.name if ctx.model else None
    failed = error_record(job.task, job.sample.id, job.sample.input, job.sample.target, error, model)
    return {**failed, "epoch": job.epoch, "fingerprint": job.fingerprint}


def plan(built: Built, store: SampleStore, ctx: Context, *, resume: str = "auto") -> Plan:
    """Load every task and decide what to ask: samples without a finished record whose fingerprint
    matches this configuration. Writes nothing: a refused resume leaves the run dir as it was.

    A finished record made with another configuration stops the run (ConfigError, naming what changed),
    unless `resume="refresh"`: then exactly those samples are asked again.
    """
    if ctx.epochs < 1:
        raise ConfigError(f"epochs={ctx.epochs}: must be a whole number of at least 1 (the times each sample is "
                          "asked)")
    loaded: dict[str, Loaded] = {}
    jobs: list[_Job] = []
    kept: dict[str, int] = {}
    problems: list[str] = []
    for task in built.tasks:
        data = built.benchmark.load(task)
        loaded[task.name] = data
        existing = store.load(task.name)
        ctx.previous[task.name] = existing
        counts: dict[str, int] = {}
        stale: list[dict[str, Any]] = []
        unbuildable: list[tuple[Any, str]] = []
        kept[task.name] = 0
        for sample in data.samples:
            try:
                parts = task.fingerprint_parts(sample, data.shots, ctx)
            except Exception as exc:  # noqa: BLE001 - e.g. a template variable this row lacks
                unbuildable.append((sample.id, f"cannot build the prompt: {type(exc).__name__}: {exc}"))
                continue
            for epoch in range(ctx.epochs):
                # Epoch 0's fingerprint is the one-epoch run's: adding epochs keeps its records.
                fp = fingerprint({**parts, "epoch": epoch} if epoch else parts)
                rec = existing.get(record_key(sample.id, epoch))
                if rec is not None and task.finished(rec):
                    if rec.get("fingerprint") == fp:
                        kept[task.name] += 1
                        continue
                    stale.append(rec)
                    for part in changed(rec.get("fingerprint"), fp):
                        counts[part] = counts.get(part, 0) + 1
                jobs.append(_Job(task, data, sample, fp, epoch))
        if unbuildable and len(unbuildable) == len(data.samples):
            raise ConfigError(f"benchmark.specs.{task.name}: no sample's prompt can be built "
                              f"(sample {unbuildable[0][0]}: {unbuildable[0][1]}); check the task's templates")
        if unbuildable:  # recorded as errors, like rows that could not become samples
            ids = {record_key(i) for i, _ in unbuildable}
            data.samples = [s for s in data.samples if record_key(s.id) not in ids]
            data.bad.extend(unbuildable)
        if counts:
            problems.append(describe_changes(f"{task.name} ({len(stale)} finished sample(s))", counts,
                                             _change_detail(stale, ctx)))
    if problems and resume != "refresh":
        raise ConfigError(f"{store.dir.parent} holds samples made with another configuration: "
                          + "; ".join(problems) + "; re-run with resume=refresh to ask exactly those samples "
                          "again (unchanged calls come from the cache), or choose a new hydra.run.dir")
    return Plan(loaded=loaded, jobs=jobs, kept=kept)


def _change_detail(stale: Sequence[dict[str, Any]], ctx: Context) -> dict[str, str]:
    """Who made the stale records, where that is what changed: model or judge names."""
    detail: dict[str, str] = {}
    now_model = [ctx.model.name] if ctx.model else []
    was_model = names(stale, "model")
    if was_model and was_model != now_model:
        detail["model"] = f"was {', '.join(was_model)}, now {', '.join(now_model) or 'none'}"
    now_judges = ctx.panel.names if ctx.panel else []
    was_judges = names(stale, "judges")
    if was_judges and was_judges != now_judges:
        detail["judges"] = f"was {', '.join(was_judges)}, now {', '.join(now_judges) or 'none'}"
    return detail


async def execute(built: Built, planned: Plan, store: SampleStore, ctx: Context, *, show_progress: bool = True,
                  n_boot: int = 1000) -> tuple[dict[str, TaskResult], dict[str, list[dict[str, Any]]]]:
    """Ask and score every planned sample, append each record as it finishes, and aggregate.

    Returns each task's results block and its records (as on disk).
    """
    loaded, model = planned.loaded, (built.model.name if built.model else None)
    try:
        display = Display(enabled=show_progress,
                          retries=lambda: sum(e.stats.retries for e in built.endpoints()),
                          level=lambda: in_flight_levels(built.endpoints()))
        with display:
            for task in built.tasks:
                data = loaded[task.name]
                done = {record_key(i) for i, r in store.load(task.name).items() if task.finished(r)}
                for bad_id, reason in data.bad:
                    if record_key(bad_id) not in done:
                        store.append(error_record(task, bad_id, None, None, reason, model))
                display.add_task(task.name, total=len(data.samples) * ctx.epochs + len(data.bad),
                                 done=planned.kept[task.name] + len(data.bad))
            await _run_jobs(planned.jobs, ctx, store, display)
    finally:
        store.close()
        await _close_tasks(built.tasks)
    # numpy (the intervals) is imported once the requests are done, not before the first one.
    from runner.metrics.uncertainty import with_uncertainty

    results: dict[str, TaskResult] = {}
    records: dict[str, list[dict[str, Any]]] = {}
    for task in built.tasks:
        records[task.name] = _records_of(task, loaded[task.name], store, ctx.epochs)
        result = with_uncertainty(task, records[task.name], task.aggregate(records[task.name]),
                                  n_boot=n_boot, seed=ctx.seed, epochs=ctx.epochs)
        results[task.name] = replace(result, data=loaded[task.name].data)
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
            try:
                record = await _evaluate(job, ctx)
            except BudgetStop:  # this sample stays unasked (asked on resume); no new one starts
                while not queue.empty():
                    queue.get_nowait()
                return
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


def _records_of(task: Task, data: Loaded, store: SampleStore, epochs: int = 1) -> list[dict[str, Any]]:
    """The task's records from its samples file, restricted to this run's samples and epochs."""
    wanted = {record_key(s.id, e) for s in data.samples for e in range(epochs)} | {record_key(b[0]) for b in data.bad}
    return [r for r in latest(store.load(task.name).values()) if key_of(r) in wanted]


def in_flight_levels(endpoints: Sequence[Endpoint]) -> str:
    """`in flight name n/ceiling` for the endpoints whose level is below their ceiling (rate-limited)."""
    low = [f"{e.name} {e.limiter().current}/{e.concurrency}" for e in endpoints
           if e.limiter().current < int(e.concurrency)]
    return f"in flight {', '.join(low)}" if low else ""


def usage_summary(built: Built) -> dict[str, Any]:
    """Token, cost and retry accounting per endpoint (runner/accounting.py: `cost_usd` and `saved_usd` are
    null when a price is unknown), with the served model ids."""
    out: dict[str, Any] = {}
    for role, endpoint in ([("model", built.model)] if built.model else []) + \
            [("judge", j) for j in built.panel.judges]:
        out[endpoint.name] = {"role": role, "model": endpoint.model, **endpoint.usage(),
                              "served_models": sorted(endpoint.served_models)}
    return out


def timestamp() -> str:
    """Local time as ISO 8601 with offset."""
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")
