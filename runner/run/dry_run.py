"""`dry_run=true`: know the bill before paying it. After the run is composed, its data loaded and resume
decided (runner/run/pipeline.py `plan`), every prompt the run would send is rendered, its input tokens counted
with litellm's tokenizer for the endpoint's model, and the plan is printed and written to `plan.json` in
the run dir (the CONTRACT's Cost section). Nothing is sent, no server is started, nothing else is written.

Per endpoint: `requests` are the calls the run would send for the samples not yet finished (model calls,
plus one call per judge per judged sample, per order for pairwise tasks, plus one call per sample to each
choice scorer's extractor: an upper bound, the extractor being asked only for the replies the rules cannot
read); `input_tokens` their prompts;
`output_tokens_max` the most they may write (the effective `max_tokens`: the entry's, under the task's, under
the run's `params`; plan.json `tasks.<task>.params` shows each task's effective params); and
`cost_usd` the most they may cost: each request's input tokens and most output tokens at the entry's
prices (its `pricing`, else litellm's; `Endpoint.price`), null when a price or a `max_tokens` is unknown
(0 for an endpoint sent nothing). The printed range is [input cost, input cost + most output cost].

A judge's prompt holds the model's reply, which does not exist yet: its input tokens are estimated as the
rubric rendered with the question and reference, plus the model's `max_tokens` for the reply.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from runner.models.batch_costs import batch_prices
from runner.models.budget import request_cap
from runner.models.litellm_model import Endpoint, count_tokens
from runner.models.replay import ReplayEndpoint
from runner.run.build import PREFLIGHT, Built
from runner.run.pipeline import Plan
from runner.run.store import record_key, write_json
from runner.tasks.base import BaseTask
from runner.types import Sample

PLAN_FILE = "plan.json"
ALL = "all tasks"
"""The task column of the per-endpoint total rows."""
PREFLIGHT_ROW = "(preflight)"
"""The task column of the preflight's requests (`preflight=true`: one per endpoint, before the samples)."""


Price = Callable[[int, int], float | None]
"""USD of one call with (input tokens, output tokens) at the entry's prices (`Endpoint.price`)."""


def _plus(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a + b


@dataclass
class Tally:
    """What one endpoint would be sent for one task."""

    requests: int = 0
    input_tokens: int = 0
    output_tokens_max: int | None = 0
    """None once a call has no `max_tokens`: its output has no bound."""
    cost_min: float | None = 0.0
    """What the input tokens cost; None when the price is unknown."""
    cost_max: float | None = 0.0
    """What the calls cost at most (input and most output); None when the price or the bound is unknown."""
    estimated: int = 0
    """Requests whose input tokens are an estimate (a judge of a reply not written yet)."""

    def add(self, input_tokens: int, cap: int | None, price: Price | None, *, calls: int = 1,
            estimated: bool = False) -> None:
        """`calls` requests of `input_tokens` each, each writing at most `cap` tokens, priced one by one
        (a provider's price tiers apply per request)."""
        self.requests += calls
        self.input_tokens += calls * input_tokens
        self.output_tokens_max = _plus_int(self.output_tokens_max, None if cap is None else calls * cap)
        low = None if price is None else price(input_tokens, 0)
        high = None if price is None or cap is None else price(input_tokens, cap)
        self.cost_min = _plus(self.cost_min, None if low is None else calls * low)
        self.cost_max = _plus(self.cost_max, None if high is None else calls * high)
        self.estimated += calls if estimated else 0

    def merge(self, other: Tally) -> None:
        """Add another tally's counts."""
        self.requests += other.requests
        self.input_tokens += other.input_tokens
        self.output_tokens_max = _plus_int(self.output_tokens_max, other.output_tokens_max)
        self.cost_min = _plus(self.cost_min, other.cost_min)
        self.cost_max = _plus(self.cost_max, other.cost_max)
        self.estimated += other.estimated


def _plus_int(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a + b


def output_cap(endpoint: Endpoint, params: Mapping[str, Any] | None) -> int | None:
    """The most tokens one reply may have: `max_tokens` of the request the endpoint would send (the entry's
    params under the task's, under the run's for the model under test), None when none sets it."""
    return request_cap(endpoint.request([], params=params))


class _Estimator:
    """Counts what each job of the plan would send, per task and endpoint."""

    def __init__(self, built: Built, seed: int) -> None:
        self.built, self.seed = built, seed
        self.tallies: dict[tuple[str, str], Tally] = {}
        self.approximate: set[str] = set()
        """Tasks whose prompts the dry run cannot render exactly (their counts are approximate)."""
        self.reply_caps: set[int] = set()
        self.prices: dict[str, Price | None] = {e.name: e.price if e.price_known() else None
                                                 for e in built.endpoints()}
        # An entry with `batch` is planned at both prices: the one it will pay (batch: true at batch prices) and
        # the other (docs/batch.md).
        self.other: dict[str, tuple[Price | None, Tally]] = {
            e.name: (partial(e.price, batch=not e.batching) if e.price_known() else None, Tally())
            for e in built.endpoints() if e.batch}

    def tally(self, task: BaseTask, endpoint: Endpoint) -> Tally:
        return self.tallies.setdefault((task.name, endpoint.name), Tally())

    def job(self, task: BaseTask, sample: Sample, shots: Sequence[Sample]) -> None:
        """Count what the task says one sample would send (`BaseTask.planned_calls`)."""
        model = self.built.model
        reply: str | None = None
        reply_cap: int | None = None
        if task.needs_model and model is not None:
            if isinstance(model, ReplayEndpoint):  # rejudge: the replies are on disk, nothing is asked
                self.tally(task, model)
                recorded = model.replies.get((task.name, record_key(sample.id)))
                if recorded is None:  # no recorded reply: the sample is an error, no judge is asked
                    return
                reply = recorded.text
            else:
                reply_cap = output_cap(model, task.params)
        judges = {j.name: j for j in self.built.panel.judges} if task.needs_judges else {}
        for call in task.planned_calls(sample, shots, list(judges), reply, self.seed):
            endpoint = model if call.role == "model" else judges.get(call.judge or "") if call.role == "judge" \
                else call.endpoint
            if endpoint is None or (call.role == "model" and reply is not None):
                continue
            tokens = count_tokens(endpoint.model, call.messages)
            if call.holds_reply and reply_cap is not None:
                tokens += reply_cap
                self.reply_caps.add(reply_cap)
            # The model gets the task's params over its entry's; judges and extractors their entry's only.
            cap = output_cap(endpoint, task.params if call.role == "model" else None)
            self.tally(task, endpoint).add(tokens, cap, self.prices[endpoint.name], calls=call.calls,
                                           estimated=call.holds_reply)
            if endpoint.name in self.other:
                price, other = self.other[endpoint.name]
                other.add(tokens, cap, price, calls=call.calls, estimated=call.holds_reply)
            if not call.exact:
                self.approximate.add(task.name)


def _endpoint_block(tally: Tally) -> dict[str, Any]:
    return {"requests": tally.requests, "input_tokens": tally.input_tokens,
            "output_tokens_max": tally.output_tokens_max, "cost_usd": tally.cost_max}


def total_cost(endpoints: Mapping[str, Mapping[str, Any]]) -> float | None:
    """The sum of the endpoints' costs; None when any is unknown."""
    costs = [e.get("cost_usd") for e in endpoints.values()]
    return None if any(c is None for c in costs) else sum(float(c or 0.0) for c in costs)


def dry_run(built: Built, planned: Plan, run_dir: Path, cfg: Any, preflight: Sequence[Endpoint] = ()) -> dict[str, Any]:
    """Count what the planned jobs would send (and the `preflight` requests before them: one `max_tokens: 1`
    request to each of those endpoints, runner/run/build.py), write `run_dir/plan.json`, print the plan, return
    it."""
    estimator = _Estimator(built, int(cfg.seed))
    for job in planned.jobs:
        estimator.job(job.task, job.sample, job.loaded.shots)
    for endpoint in preflight:
        estimator.tallies.setdefault((PREFLIGHT_ROW, endpoint.name), Tally()).add(
            count_tokens(endpoint.model, list(PREFLIGHT)), 1, estimator.prices[endpoint.name])
    endpoints: dict[str, Endpoint] = {}
    for endpoint in built.endpoints():
        endpoints.setdefault(endpoint.name, endpoint)
    totals = {name: Tally() for name in endpoints}
    rows: list[dict[str, Any]] = []
    for task in [t.name for t in built.tasks] + [PREFLIGHT_ROW]:
        for name in endpoints:
            tally = estimator.tallies.get((task, name))
            if tally is None:
                continue
            totals[name].merge(tally)
            rows.append(_row(task, name, tally))
    rows += [_row(ALL, name, tally) for name, tally in totals.items()]
    blocks = {name: _endpoint_block(tally) for name, tally in totals.items()}
    for name, (_, other) in estimator.other.items():  # preflight requests are left out: batches skip them
        mine, theirs = blocks[name]["cost_usd"], other.cost_max
        batching = endpoints[name].batching
        blocks[name]["batch"] = {"mode": str(endpoints[name].batch).lower(),
                                 "cost_usd_batch": mine if batching else theirs,
                                 "cost_usd_direct": theirs if batching else mine}
    todo = {task.name: 0 for task in built.tasks}
    for job in planned.jobs:
        todo[job.task.name] += 1
    params = {task.name: {"params": task.model_params(built.model)} | (
        {"params_dropped": dropped} if (dropped := task.dropped_params(built.model)) else {}) for task in built.tasks}
    plan = {"tasks": {name: {"samples": n, **params[name]} for name, n in todo.items()}, "endpoints": blocks,
            "total_cost_usd": total_cost(blocks)}
    write_json(run_dir / PLAN_FILE, plan)
    samples = run_dir / "samples"  # made by the store before the plan; a dry run leaves no trace of it
    if samples.is_dir() and not any(samples.iterdir()):
        samples.rmdir()
    print_plan(plan, rows=rows, notes=_notes(estimator, planned, totals, endpoints), where=run_dir)
    return plan


def _row(task: str, endpoint: str, tally: Tally) -> dict[str, Any]:
    return {"task": task, "endpoint": endpoint, "requests": tally.requests, "input_tokens": tally.input_tokens,
            "output_tokens_max": tally.output_tokens_max, "estimated": tally.estimated,
            "cost_min": tally.cost_min, "cost_max": tally.cost_max}


def _notes(estimator: _Estimator, planned: Plan, totals: Mapping[str, Tally],
           endpoints: Mapping[str, Endpoint]) -> list[str]:
    notes = []
    kept = {t: n for t, n in planned.kept.items() if n}
    if kept:
        notes.append("kept from an earlier run into this run dir (not asked again): "
                     + ", ".join(f"{t} {n}" for t, n in kept.items()))
    if any(t.estimated for t in totals.values()):
        caps = ", ".join(str(c) for c in sorted(estimator.reply_caps)) or "unknown"
        notes.append("judge and extractor input tokens (marked ~) are estimates: the rubric (or the extractor's "
                     "prompt) rendered with the question and reference, and the model's reply counted as its "
                     "max_tokens (" + caps + " tokens); an extractor is counted once per sample, an upper bound")
    if estimator.approximate:
        notes.append("approximate counts for " + ", ".join(sorted(estimator.approximate))
                     + ": the dry run does not render these tasks' own prompts (the question stands for them; "
                     "no audio is counted), and counts every rubric a judge may be asked (an upper bound)")
    for name, (_, other) in estimator.other.items():
        e = endpoints[name]
        notes.append(f"{name} has batch: {str(e.batch).lower()}: "
                     + (f"priced at batch prices ({batch_prices(e)[1]}); directly it would cost at most "
                        f"{_usd(other.cost_max)}" if e.batching else
                        f"priced at direct prices; where its provider has a batch API it costs at most "
                        f"{_usd(other.cost_max)} ({batch_prices(e)[1]})"))
    unpriced = [f"{n} ({endpoints[n].model})" for n, t in totals.items() if t.requests and estimator.prices[n] is None]
    if unpriced:
        notes.append("no known price for " + ", ".join(unpriced) + ": set pricing: {input_per_mtok: X, "
                     "output_per_mtok: Y} in its entry (USD per million tokens)")
    unbounded = [n for n, t in totals.items() if t.requests and t.output_tokens_max is None]
    if unbounded:
        notes.append("no max_tokens for " + ", ".join(unbounded) + ": their output, and so their cost, has "
                     "no upper bound; set params.max_tokens in the entry")
    return notes


def _usd(value: float | None) -> str:
    if value is None:
        return "?"
    return f"${value:,.2f}" if value >= 1 or value == 0 else f"${value:.3g}"


def _cost_text(low: float | None, high: float | None) -> str:
    if low is None:
        return "unknown"
    return f"{_usd(low)} - {_usd(high)}" if high is not None else f"at least {_usd(low)}"


def print_plan(plan: Mapping[str, Any], rows: Sequence[Mapping[str, Any]] | None = None,
               notes: Sequence[str] = (), where: Path | None = None) -> None:
    """The plan as plain text: samples to ask per task, then per task and endpoint the requests, input
    tokens, most output tokens and cost range (without `rows`: per endpoint from the plan itself)."""
    print(f"Dry run: nothing was sent{f'; plan written to {where / PLAN_FILE}' if where else ''}")
    tasks = plan.get("tasks") or {}
    print("samples to ask: " + (", ".join(f"{t} {b.get('samples', 0)}" for t, b in tasks.items()) or "none"))
    if rows is None:
        rows = [{"task": ALL, "endpoint": name, **block, "estimated": 0, "cost_min": None,
                 "cost_max": block.get("cost_usd")} for name, block in (plan.get("endpoints") or {}).items()]
    header = ("task", "endpoint", "requests", "input tokens", "output tokens (max)", "cost (USD)")
    table = [header] + [
        (str(r["task"]), str(r["endpoint"]), f"{r['requests']:,}",
         ("~" if r.get("estimated") else "") + f"{r['input_tokens']:,}",
         "unbounded" if r["output_tokens_max"] is None else f"{r['output_tokens_max']:,}",
         _cost_text(r["cost_min"], r["cost_max"]) if r.get("cost_min") is not None or r["cost_max"] is None
         else f"at most {_usd(r['cost_max'])}") for r in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    for n, line in enumerate(table):
        print("  ".join(cell.ljust(w) if i < 2 else cell.rjust(w) for i, (cell, w) in enumerate(zip(line, widths,
                                                                                                    strict=True))))
        if n == 0:
            print("  ".join("-" * w for w in widths))
    total = plan.get("total_cost_usd")
    lows = [r.get("cost_min") for r in rows if r["task"] == ALL]
    low = None if any(v is None for v in lows) else sum(float(v) for v in lows if v is not None)
    print("total cost: " + ("unknown (an endpoint's price or output bound is unknown)" if total is None
                            else _cost_text(low, float(total)) if low is not None else f"at most {_usd(total)}"))
    for note in notes:
        print(f"note: {note}")
