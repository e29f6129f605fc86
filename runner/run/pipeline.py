"""One run: load -> ask -> score -> record -> aggregate, resumable from the samples files.

The run keeps compact records (runner/run/compact.py) for the metrics and reads full ones back from the samples
files only where they are needed, so its memory does not grow with the records; with `workers=N` the asking
is split across processes (runner/run/workers.py) and this process writes every record.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from runner.config.redact import entry_secrets, env_secrets, first_secret, is_secret_key, remember
from runner.errors import ConfigError, DataError, RunnerError
from runner.models.litellm_model import Endpoint
from runner.outputs.display import Display
from runner.run.build import Built
from runner.run.compact import PreviousRecords, TaskRecords, compact
from runner.run.fingerprint import PARTS, changed, describe_changes, fingerprint, names, split
from runner.run.invocations import by_name
from runner.run.jobs import Job, error_record, run_jobs
from runner.run.store import SampleStore, key_of, read_at, record_key
from runner.run.workers import Pool
from runner.tasks.base import BaseTask, Context, Loaded
from runner.tasks.templates import UndefinedVariable
from runner.types import TaskResult

log = logging.getLogger("runner")



@dataclass
class Plan:
    """What a run will do, decided before anything is written: the data, and the samples to ask."""

    loaded: dict[str, Loaded]
    jobs: list[Job]
    kept: dict[str, int]
    records: dict[str, TaskRecords] = field(default_factory=dict)
    """Each task's records on disk for this run's samples (compact), which its new records replace."""
    bad: dict[str, list[tuple[Any, str]]] = field(default_factory=dict)
    """Rows that could not become samples and have no error record yet (recorded when the run starts)."""
    usage: dict[str, Any] | None = None
    """With worker processes: their usage per endpoint, added up (`usage_summary`)."""


def plan(built: Built, store: SampleStore, ctx: Context, *, resume: str = "auto") -> Plan:
    """Load every task and decide what to ask: samples without a finished record whose fingerprint
    matches this configuration. Writes nothing: a refused resume leaves the run dir as it was.

    A finished record made with another configuration stops the run (ConfigError, naming what changed),
    unless `resume="refresh"`: then exactly those samples are asked again. The samples files are read
    once, a line at a time; what is kept of each record is its compact form and its offset.
    """
    if ctx.epochs < 1:
        raise ConfigError(f"epochs={ctx.epochs}: must be a whole number of at least 1 (the times each sample is "
                          "asked)")
    planned = Plan(loaded={}, jobs=[], kept={})
    jobs = planned.jobs
    problems: list[str] = []
    secrets = prompt_secrets(built)
    for task in built.tasks:
        refuse_secret_templates(task, secrets)
        checked: set[str] = set()
        data = built.benchmark.load(task)
        planned.loaded[task.name] = data
        if not data.samples and not data.bad and data.skipped is None:
            raise DataError(_nothing_to_ask(task, data))
        check_prompts(task, data, ctx)
        scorable = getattr(task, "check_sample", None)  # a scorer may refuse a row it cannot score (task.py)
        # key -> (offset, finished, fingerprint, compact record) of the latest line of each sample and epoch
        existing = {key_of(rec): (offset, task.finished(rec), rec.get("fingerprint"), compact(rec))
                    for offset, rec in store.scan(task.name)}
        records = planned.records[task.name] = TaskRecords(store.path(task.name))
        again: dict[str, int] = {}  # samples asked again that have a record: what ctx.previous offers
        counts: dict[str, int] = {}
        stale: list[int] = []
        edited: list[str] = []  # finished records whose fingerprint no runner wrote
        unbuildable: list[tuple[Any, str]] = []
        kept = 0
        for index, sample in enumerate(data.samples):
            try:
                if scorable is not None:
                    scorable(sample)
            except ValueError as exc:  # never sent: no reply to it could be scored
                unbuildable.append((sample.id, f"cannot be scored: {exc}"))
                continue
            try:
                parts = task.fingerprint_parts(sample, data.shots, ctx)
            except RunnerError:
                raise  # the template's fault (the sandbox refused it, a key in the prompt), not the row's
            except Exception as exc:  # noqa: BLE001 - e.g. a template variable this row lacks
                unbuildable.append((sample.id, f"cannot build the prompt: {type(exc).__name__}: {exc}"))
                continue
            if secrets and "prompt" in parts:
                refuse_secret_prompt(task, sample.id, parts["prompt"], secrets, checked)
            for epoch in range(ctx.epochs):
                # Epoch 0's fingerprint is the one-epoch run's: adding epochs keeps its records.
                fp = fingerprint({**parts, "epoch": epoch} if epoch else parts)
                key = record_key(sample.id, epoch)
                found = existing.get(key)
                if found is not None:
                    offset, finished, was, small = found
                    records.add(small, offset)
                    if finished:
                        if was == fp:
                            kept += 1
                            continue
                        if was is not None and (not isinstance(was, str) or not split(was).keys() <= PARTS.keys()):
                            edited.append(f"sample {sample.id}: {repr(was)[:40]}")
                        else:
                            stale.append(offset)
                            for part in changed(was, fp):
                                counts[part] = counts.get(part, 0) + 1
                    again[key] = offset
                jobs.append(Job(task, data, data.held(sample), fp, epoch, index))
        data.rebuild_from_rows()
        planned.kept[task.name] = kept
        if unbuildable and len(unbuildable) == len(data.samples):
            raise ConfigError(f"benchmark.specs.{task.name}: none of its {len(unbuildable)} sample(s) can be asked "
                              f"(sample {unbuildable[0][0]}: {unbuildable[0][1]}); check the task's templates, "
                              "scorers and data")
        if unbuildable:  # recorded as errors, like rows that could not become samples
            data.dropped = len(unbuildable)
            data.bad.extend(unbuildable)
        planned.bad[task.name] = []
        for bad_id, reason in data.bad:
            found = existing.get(record_key(bad_id))
            if found is not None:
                records.add(found[3], found[0])
            if found is None or not found[1]:
                planned.bad[task.name].append((bad_id, reason))
        ctx.previous[task.name] = PreviousRecords(store.path(task.name), again)
        if edited and resume != "refresh":
            problems.append(f"{task.name}: {len(edited)} finished record(s) with a fingerprint no runner writes "
                            f"({edited[0]}; edited by hand?)")
        if counts and resume != "refresh":
            who = [_who(r) for r in read_at(store.path(task.name), stale)]
            problems.append(describe_changes(f"{task.name} ({len(stale)} finished sample(s))", counts,
                                             _change_detail(who, ctx)))
    if problems:
        raise ConfigError(f"{store.dir.parent} holds samples made with another configuration: "
                          + "; ".join(problems) + "; re-run with resume=refresh to ask exactly those samples "
                          "again (unchanged calls come from the cache), or choose a new hydra.run.dir")
    return planned


def check_prompts(task: BaseTask, data: Loaded, ctx: Context) -> None:
    """Every prompt one sample sends (the model's with its few-shot turns, each judge's rubric, an extractor's),
    rendered for the task's first sample before any request: a variable no sample can have stops the run
    (ConfigError naming the template) instead of failing each sample after the model was paid for it."""
    if not data.samples:
        return
    sample = data.samples[0]
    judges = (ctx.panel.names or ["judge"]) if task.needs_judges and ctx.panel is not None else []
    try:
        task.planned_calls(sample, data.shots, judges, None, ctx.seed)
    except UndefinedVariable as exc:
        seen = " (question, choices, letters, context, target, reference, row.<column>, meta.<key>; a rubric also " \
            "response)" if hasattr(task, "solver") else ""
        raise ConfigError(f"{exc.where or f'benchmark.specs.{task.name}'}: template {exc.source}: {exc.detail} when "
                          f"rendered for sample {sample.id}, the task's first; use the variables a template "
                          f"sees{seen}, or give the data that column; nothing was sent") from None


def _nothing_to_ask(task: BaseTask, data: Loaded) -> str:
    """Why a task's data gives no sample (an empty file, or every row taken as a few-shot example)."""
    source = (data.data or {}).get("source") or "its data"
    if data.shots:
        return (f"task {task.name}: all {len(data.shots)} row(s) of {source} are few-shot examples, which are never "
                "asked; lower benchmark.num_fewshot or give the task more rows")
    return f"task {task.name}: {source} has no rows; give the task its data (benchmark.data_dir, or its dataset)"


def prompt_secrets(built: Built) -> dict[str, str]:
    """{value: what it is} of every key a prompt must not carry: the credential-named environment variables'
    values and the keys the run's entries send (api_key, api_base's password, secret-named params)."""
    found: dict[str, str] = {}
    for e in built.endpoints():
        found.update(entry_secrets(e.name, e.api_key, e.api_base, {**e.params, **e.run_params}))
    for value, name in env_secrets().items():  # the variable is what a template's ${oc.env:...} names
        found[value] = f"the value of ${name}" + (f" ({found[value]})" if value in found else "")
    remember(*found)  # and from now on masked in this process's texts (a provider may echo one in an error)
    return found


_ROLE_TEMPLATE = {"system": "system", "user": "user", "assistant": "shot"}


def refuse_secret_prompt(task: BaseTask, sample_id: Any, messages: Any, secrets: dict[str, str],
                         checked: set[str]) -> None:
    """A rendered prompt carrying a key is never sent (a prompt is stored and shown as it is, never masked):
    ConfigError naming the task and the template that rendered it. Rubrics are rendered only when a judge
    is asked, with the reply; their template text is checked by `refuse_secret_templates`. `checked` holds
    the texts found clean (the system prompt and few-shot turns repeat in every sample: 5 us a sample
    instead of 14 for EVE's 12 messages)."""
    for message in messages if isinstance(messages, list) else [messages]:
        content = message.get("content") if isinstance(message, dict) else message
        parts = [p.get("text") for p in content if isinstance(p, dict)] if isinstance(content, list) else [content]
        texts: list[str] = [t for t in parts if isinstance(t, str) and t not in checked]
        found = first_secret(texts, secrets)
        if found is None:
            if len(checked) < 1000:
                checked.update(texts)
            continue
        role = message.get("role") if isinstance(message, dict) else None
        key = _ROLE_TEMPLATE.get(str(role), "")
        spec = getattr(getattr(task, "solver", None), "specs", {}).get(key)
        where = f"benchmark.specs.{task.name}.solver.{key}" if key and spec else f"benchmark.specs.{task.name}"
        named = f" ({spec})" if isinstance(spec, str) and spec.endswith(".j2") and "\n" not in spec else ""
        raise ConfigError(f"{where}{named}: the {role or 'prompt'} message of sample {sample_id} would send "
                          f"{found} to the model; a prompt is stored and shown as sent, so keep keys out of "
                          "templates, their variables and the data (no ${oc.env:...} of a key); nothing was sent")


def refuse_secret_templates(task: BaseTask, secrets: dict[str, str]) -> None:
    """The task's own YAML (inline templates, `${oc.env:...}` in it) and its judges' rubric texts: none may
    hold a key. Request `params` (headers may carry one by design) and secret-named keys are left out."""
    if not secrets:
        return

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                if k != "params" and not is_secret_key(k):
                    walk(v, f"{path}.{k}")
        elif isinstance(node, (list, tuple)):
            for i, v in enumerate(node):
                walk(v, f"{path}.{i}")
        elif isinstance(node, str):
            found = first_secret([node], secrets)
            if found is not None:
                raise ConfigError(f"{path}: holds {found}, and it would be sent in every prompt of the task; "
                                  "keep keys out of templates (no ${oc.env:...} of a key); nothing was sent")

    walk(dict(task.spec), f"benchmark.specs.{task.name}")
    scorers = getattr(task, "scorers", None)
    rubrics = {f"benchmark.specs.{task.name}.scorers.{k}.rubric": s.rubric_text() for k, s in scorers.items()
               if hasattr(s, "rubric_text")} if isinstance(scorers, dict) else {}
    if not rubrics and task.needs_judges:
        rubrics = {f"benchmark.specs.{task.name} (its judge prompt)": text for text in task.rubric_texts()}
    for where, text in rubrics.items():
        found = first_secret([text], secrets)
        if found is not None:
            raise ConfigError(f"{where}: the rubric holds {found}, and every judge would be sent it; keep keys "
                              "out of rubrics; nothing was sent")


def _who(record: dict[str, Any]) -> dict[str, Any]:
    """Who made a record: its model and its judges' names (what `_change_detail` reads)."""
    return {"model": record.get("model"),
            "judgements": [{"judge": j.get("judge")} for j in record.get("judgements") or [] if isinstance(j, dict)]}


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
                  n_boot: int = 1000, pool: Pool | None = None
                  ) -> tuple[dict[str, TaskResult], dict[str, list[dict[str, Any]]]]:
    """Ask and score every planned sample, append each record as it finishes, and aggregate.

    With a `pool` of more than one process the samples are asked there; this process writes the records.
    Returns each task's results block and its records (as on disk, read from the samples files on access).
    """
    loaded, model = planned.loaded, (built.model.name if built.model else None)
    for task in built.tasks:
        planned.records.setdefault(task.name, TaskRecords(store.path(task.name)))
    try:
        display = Display(enabled=show_progress,
                          retries=pool.retries if pool else lambda: sum(e.stats.retries for e in built.endpoints()),
                          level=pool.level if pool else lambda: in_flight_levels(built.endpoints()))
        with display:
            for task in built.tasks:
                data = loaded[task.name]
                for bad_id, reason in planned.bad.get(task.name, ()):
                    record = error_record(task, bad_id, None, None, reason, model)
                    planned.records[task.name].add(record, store.append(record))
                display.add_task(task.name, total=(len(data.samples) - data.dropped) * ctx.epochs + len(data.bad),
                                 done=planned.kept[task.name] + len(data.bad))
            # From here the samples live in their jobs only (or are built again from their rows when asked),
            # so each one's data can go once it is asked.
            pending = deque(planned.jobs)
            planned.jobs.clear()
            for data in loaded.values():
                data.release()
            await _run_jobs(pending, planned.records, ctx, store, display, pool)
    finally:
        if pool is not None:
            planned.usage = pool.usage_summary(built)
        store.close()
        await _close_tasks(built.tasks)
    # numpy (the intervals) is imported once the requests are done, not before the first one.
    from runner.metrics.uncertainty import scored_result

    results: dict[str, TaskResult] = {}
    records: dict[str, list[dict[str, Any]]] = {}
    for task in built.tasks:
        scored, records[task.name] = planned.records[task.name].finish()
        result = scored_result(task, scored, n_boot=n_boot, seed=ctx.seed, epochs=ctx.epochs)
        results[task.name] = replace(result, data=loaded[task.name].data, params=task.model_params(built.model),
                                     params_dropped=task.dropped_params(built.model))
    return results, records


async def _run_jobs(pending: deque[Job], records: dict[str, TaskRecords], ctx: Context, store: SampleStore,
                    display: Display, pool: Pool | None) -> None:
    """Ask the pending samples here, or in the pool's processes; either way this process appends each record
    and keeps its compact form. (bench/_probe.py times this function by its name.)"""
    if pool is not None:
        await pool.run(pending, records, store, display, ctx.previous)
        return

    def sink(job: Job, record: dict[str, Any]) -> None:
        records[job.task.name].add(record, store.append(record))
        display.advance(job.task.name, error=record["status"] == "error")

    await run_jobs(pending, ctx, sink)


async def _close_tasks(tasks: Sequence[BaseTask]) -> None:
    for task in tasks:
        try:
            await task.close()
        except Exception as exc:  # noqa: BLE001 - a failed clean-up must not hide the run's results
            log.warning("closing task %s failed: %s", task.name, exc)


def in_flight_levels(endpoints: Sequence[Endpoint]) -> str:
    """`in flight name n/ceiling` for the endpoints whose level is below their ceiling (rate-limited)."""
    low = [f"{e.name} {e.limiter().current}/{e.concurrency}" for e in endpoints
           if e.limiter().current < int(e.concurrency)]
    return f"in flight {', '.join(low)}" if low else ""


def usage_summary(built: Built, planned: Plan | None = None) -> dict[str, Any]:
    """Token, cost and retry accounting per endpoint (runner/models/accounting.py: `cost_usd` and `saved_usd` are
    null when a price is unknown), with the served model ids; with worker processes, theirs added up."""
    if planned is not None and planned.usage is not None:
        return planned.usage
    return by_name([(role, e.name, {"role": role, "model": e.model, **e.usage(),
                                    "served_models": sorted(e.served_models)}) for role, e in built.roles()])


def timestamp() -> str:
    """Local time as ISO 8601 with offset."""
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")
