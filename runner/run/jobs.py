"""Asking the planned samples: one coroutine pool per process (the run's own, or each worker's), handing every
finished record to a sink (the samples file, or the parent process)."""

from __future__ import annotations

import asyncio
import gc
import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from runner.config.redact import redact_text
from runner.errors import CallError, RunnerError, repeating_fault
from runner.models.budget import BudgetStop
from runner.run.store import record_key
from runner.tasks.base import BaseTask, Context, Loaded
from runner.types import CURRENT_EPOCH, CURRENT_NOTES, CURRENT_SAMPLE, Sample, SampleRecord

log = logging.getLogger("runner")

GC_GEN0 = 10_000
"""Allocations between young-generation collections while samples are asked (Python's default: 700).

Every call leaves thousands of short-lived containers (litellm's request and response objects); with the
default each sample saw about one young collection, which also walks the calls still in flight and
promotes them, so old collections follow. Over 30,000 samples at L=0 (docs/scaling.md): 2.62 s of
collection by default, 0.82 s at 10,000, 1.04 s at 50,000 (bigger young generations cost more per walk
than they save); freezing what planning left (`gc.freeze()`) changed nothing measurable on top."""


@dataclass(slots=True)
class Job:
    """One sample (and epoch) to ask; `index` is its place in the task's loaded samples, by which the job
    finds it when it starts (and a worker process, in the data it loads itself)."""

    task: BaseTask
    loaded: Loaded
    held: Sample | None
    """The sample itself, where the loaded samples cannot build it again from its row (`Loaded.later`)."""
    fingerprint: str
    epoch: int = 0
    index: int = -1

    @property
    def sample(self) -> Sample:
        return self.held if self.held is not None else self.loaded.samples[self.index]


Sink = Callable[[Job, dict[str, Any]], None]


def error_record(task: BaseTask, sample_id: Any, prompt: Any, reference: Any, error: str,
                 model: str | None) -> dict[str, Any]:
    """The record of a sample that could not be asked or scored."""
    return SampleRecord(id=sample_id, task=task.name, prompt=prompt, reference=reference, status="error",
                        error=redact_text(error), model=model).to_dict()


async def evaluate(job: Job, ctx: Context) -> dict[str, Any]:
    """Ask and score one sample; a failure of this sample alone is its error record. What was done to its
    untrusted input on the way (runner.types.note) is the record's `notes`."""
    sample = job.sample
    CURRENT_SAMPLE.set((job.task.name, record_key(sample.id, job.epoch)))
    CURRENT_EPOCH.set((job.epoch, ctx.seed + job.epoch) if ctx.epochs > 1 else None)
    notes: list[str] = []
    CURRENT_NOTES.set(notes)
    try:
        done = await job.task.evaluate(sample, job.loaded.shots, ctx)
        return {**done.to_dict(), "epoch": job.epoch, "fingerprint": job.fingerprint, **_notes(notes)}
    except (RunnerError, asyncio.CancelledError, BudgetStop):
        raise
    except CallError as exc:
        error = f"call failed after {exc.attempts} attempt(s): {exc}"
    except Exception as exc:  # noqa: BLE001 - one bad sample must not stop the run; it is recorded
        log.debug("sample %s/%s failed", job.task.name, sample.id, exc_info=True)
        fault = repeating_fault(exc)
        if fault is not None:  # every sample and every re-run would fail alike: say so once, stop
            raise fault from exc
        error = f"{type(exc).__name__}: {exc}"
    model = ctx.model.name if ctx.model else None
    failed = error_record(job.task, sample.id, sample.input, sample.target, error, model)
    return {**failed, "epoch": job.epoch, "fingerprint": job.fingerprint, **_notes(notes)}


def _notes(notes: list[str]) -> dict[str, Any]:
    return {"notes": list(notes)} if notes else {}  # the key only where there is a note: records stay as they were


async def run_jobs(pending: deque[Job], ctx: Context, sink: Sink) -> None:
    """Ask every job of `pending` (consumed as they start, so a finished sample's data can go) and hand each
    record to `sink`. A budget stop leaves the remaining jobs unasked; a RunnerError stops them all."""
    if not pending:
        return
    endpoints = ([ctx.model] if ctx.model else []) + (ctx.panel.judges if ctx.panel else [])
    # Enough samples in flight to keep every endpoint's own limit busy, without one coroutine per sample; an
    # endpoint sending in provider batches keeps a batch's worth waiting.
    width = min(len(pending), 2 * max((e.batch_size if e.batching else e.concurrency for e in endpoints), default=8))

    async def worker() -> None:
        while pending:
            job = pending.popleft()
            try:
                record = await evaluate(job, ctx)
            except BudgetStop:  # this sample stays unasked (asked on resume); no new one starts
                pending.clear()
                return
            sink(job, record)

    threshold = gc.get_threshold()
    gc.set_threshold(GC_GEN0, *threshold[1:])
    workers = [asyncio.create_task(worker()) for _ in range(width)]
    try:
        await asyncio.gather(*workers)
    except BaseException:
        for w in workers:
            w.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        raise
    finally:
        gc.set_threshold(*threshold)  # the process may go on (tests, a sweep's next job): as it was
