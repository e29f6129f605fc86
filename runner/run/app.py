"""A whole run from a composed config: build, execute, write results.json, track, print the table."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
from collections.abc import Callable, Coroutine
from importlib import metadata
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from runner.benchmarks.base import summarize
from runner.config.redact import redact
from runner.errors import ConfigError, RunnerError
from runner.models.batch_setup import open_batches
from runner.models.prices import restore as restore_prices
from runner.outputs.display import Display
from runner.outputs.table import truncated_share
from runner.run.build import build
from runner.run.invocations import Invocation, closing_line
from runner.run.lock import RunDirLock
from runner.run.pipeline import Plan, execute, plan, usage_summary
from runner.run.store import SampleStore, check_run_dir, write_json
from runner.run.workers import Pool, check_workers, plain_config, workers_for
from runner.tasks.base import Context

log = logging.getLogger("runner")

PACKAGES = ("runner", "litellm", "hydra-core", "omegaconf", "datasets", "wandb", "mcp", "xllamacpp")


def resolved_config(cfg: DictConfig) -> dict[str, Any]:
    """The resolved config with every secret masked (what results.json and the tracker get)."""
    plain = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=False)
    assert isinstance(plain, dict)
    masked: dict[str, Any] = redact(plain)
    return masked


def provenance(run_dir: Path) -> dict[str, Any]:
    """Git commit and dirty flag of the runner checkout, and package versions."""
    root = Path(__file__).resolve().parents[2]  # the clone, this file being runner/run/app.py
    git: dict[str, Any] = {}
    # Only a clone has its own .git beside the package: an installed runner's parent is a site-packages
    # folder, and `git -C` there would report whatever repository happens to hold the venv.
    if (root / ".git").exists():
        try:
            commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                                    text=True, timeout=5)
            if commit.returncode == 0:
                dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                                       capture_output=True, text=True, timeout=5)
                git = {"commit": commit.stdout.strip(), "dirty": bool(dirty.stdout.strip())}
        except (OSError, subprocess.SubprocessError):
            pass
    return {"git": git, "versions": _versions(), "python": sys.version.split()[0], "run_dir": str(run_dir)}


def _versions() -> dict[str, str]:
    versions = {}
    for pkg in PACKAGES:
        try:
            versions[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            continue
    return versions


def run(cfg: DictConfig, run_dir: Path, *, group: str | None = None, label: str | None = None,
        accepted: Callable[[], None] | None = None) -> dict[str, Any]:
    """Run the configured evaluation into `run_dir` and return the results.json content, holding the run dir
    meanwhile: another live runner process on it stops this one at once (runner/run/lock.py, exit 2)."""
    check_run_dir(run_dir)  # a folder it can write, with room: also where the lock is written
    with RunDirLock(run_dir):
        return _run(cfg, run_dir, group=group, label=label, accepted=accepted)


def _run(cfg: DictConfig, run_dir: Path, *, group: str | None = None, label: str | None = None,
         accepted: Callable[[], None] | None = None) -> dict[str, Any]:
    """Run the configured evaluation into `run_dir` and return the results.json content.

    Everything that can refuse the run (config, keys, a resume with other fingerprints) is checked before
    the first file is written or request sent; then `accepted()` runs (the CLI saves the config there).
    `label` names the tracker run after what a sweep varied (`<benchmark>-<label>`).
    """
    if cfg.resume not in ("auto", "refresh"):
        raise ConfigError(f"resume: '{cfg.resume}' is not a resume mode; use resume=auto (the default) or "
                          "resume=refresh")
    if not 0.0 <= float(cfg.fail_on_error) <= 1.0:
        raise ConfigError(f"fail_on_error: {cfg.fail_on_error} is not a share in [0, 1]")
    check_workers(cfg.get("workers"))
    check_run_dir(run_dir)  # a folder it can write, with room: else every reply would be lost
    config = resolved_config(cfg)
    built = build(cfg, run_dir)
    tracker = built.tracker
    tracking = failed = False
    invocation: Invocation | None = None
    planned: Plan | None = None
    tracked: dict[str, Any] = {}  # what the tracker's run summary gets: the summary, tokens and cost
    try:
        built.check_keys()  # every missing key in one line (exit 3)
        built.check_budget(cfg.budget.max_usd)  # a price and a max_tokens for every endpoint (exit 2)
        built.start_budget(run_dir)  # what earlier invocations of this run dir spent counts
        if cfg.audit.labels:  # a bad labels file is found now, not after every request
            from runner.outputs.audit import read_labels  # numpy and friends: only when an audit is asked for

            read_labels(cfg.audit.labels, models=[name for t in built.tasks for name in t.label_names])
        store = SampleStore(run_dir)
        ctx = Context(model=built.model, panel=built.panel, seed=int(cfg.seed), run_dir=run_dir,
                      epochs=int(cfg.epochs))
        say = log.debug if cfg.dry_run else log.info  # a dry run writes plan.json only, and prints only the plan
        say("loading and planning %d task(s) of %s: %s", len(built.tasks), built.benchmark.name,
            ", ".join(t.name for t in built.tasks))
        planned = plan(built, store, ctx, resume=str(cfg.resume))
        say("planned: %d sample(s) to ask (epochs counted apart)%s", len(planned.jobs),
                 f", {sum(planned.kept.values())} kept from an earlier run" if any(planned.kept.values()) else "")
        # One tiny request per endpoint first, where a refused judge key would otherwise show only after the
        # model was paid for every sample.
        preflight = built.preflight_targets({job.task.name for job in planned.jobs}) \
            if cfg.get("preflight", True) else []
        if cfg.dry_run:  # count and price what would be sent, send nothing, write only plan.json
            from runner.run.dry_run import dry_run

            return {"plan": dry_run(built, planned, run_dir, cfg, preflight=preflight)}
        # Which endpoints send in provider batches: one without a batch API stops the run here, before any
        # request (exit 2 or 3); their probe proved their key, so the preflight leaves them out.
        batching = {id(e) for e in open_batches([e for _, e in built.entry_keys()], run_dir)}
        preflight = [e for e in preflight if id(e) not in batching]
        pool = None if batching else _pool(cfg, built, planned, run_dir)  # one process polls the batches
        if accepted is not None:
            accepted()
        invocation = Invocation(run_dir)  # from here on this invocation counts in the run's usage
        built.start_servers(run_dir)
        failed = True
        model_name = built.model.name if built.model else None
        tags = [f"benchmark:{built.benchmark.name}"] + ([f"model:{model_name}"] if model_name else []) + \
               [f"judge:{n}" for n in built.panel.names] + (["demo"] if built.demo else [])
        # Judge-only benchmarks (win rate, judging prediction folders) have no model under test.
        subject = model_name or "+".join(t.name for t in built.tasks[:2]) or "run"
        tracker.start(run_dir=run_dir, name=f"{built.benchmark.name}-{label or subject}", config=config,
                      group=group, tags=tags)
        tracking = True
        task_results, records = asyncio.run(_ask(built, preflight, execute(
            built, planned, store, ctx, show_progress=bool(cfg.progress), n_boot=int(cfg.stats.n_boot), pool=pool)))
        summary = summarize(built.benchmark, built.tasks, task_results)
        blocks = {name: r.to_dict() for name, r in task_results.items()}
        usage, run_info = invocation.record(usage_summary(built, planned), "ok")
        results: dict[str, Any] = {
            "benchmark": built.benchmark.name,
            "model": model_name,
            "judges": built.panel.names,
            "demo": bool(built.demo),
            "demo_endpoints": built.demo,
            "tasks": blocks,
            "summary": summary,
            "usage": usage,
            "totals": _totals(usage),
            "run": {**run_info, "seed": int(cfg.seed), **provenance(run_dir)},
            "config": config,
        }
        if built.budget is not None and built.budget.stopped:
            results["stopped"] = "budget"
        # The rate limits each endpoint met, beside the totals: a slow run explains itself in W&B.
        tracked = {**summary, "totals": results["totals"],
                   "usage": {name: {"rate_limited": u.get("rate_limited"), "concurrency": u.get("concurrency")}
                             for name, u in (results.get("usage") or {}).items()}}
        write_json(run_dir / "results.json", results)
        for task in built.tasks:
            tracker.log_task(task.name, records[task.name], blocks[task.name])
        if cfg.audit.labels:
            from runner.outputs.audit import audit_run

            written, _ = audit_run(records, cfg.audit.labels, run_dir, n_boot=int(cfg.stats.n_boot),
                                   seed=int(cfg.seed))
            tracker.log_extra(tables=_audit_tables(json.loads(written.read_text(encoding="utf-8"))))
        unwritten = []
        for reporter in built.benchmark.reporters:  # each benchmark's own files; one failing loses no other
            try:
                extras = reporter.report(built.tasks, records, task_results, run_dir)
            except RunnerError:
                raise
            except Exception as exc:  # noqa: BLE001 - named in results.json and the closing line (exit 1)
                unwritten.append(f"{type(reporter).__name__}: {type(exc).__name__}: {exc}")
                log.error("%s could not write its files: %s: %s", type(reporter).__name__, type(exc).__name__, exc)
                continue
            if extras:
                tracker.log_extra(**extras)
        if unwritten:
            results["outputs_failed"] = unwritten
            write_json(run_dir / "results.json", results)
        failed = False
    except BaseException as exc:
        if invocation is not None and not invocation.recorded:  # a failed or interrupted invocation spent too
            try:
                invocation.record(usage_summary(built, planned), "interrupted"
                                  if isinstance(exc, KeyboardInterrupt) else "failed")
            except OSError as lost:  # not even the room it held: say so, and keep what stopped the run
                log.warning("this invocation's usage could not be written to %s: %s", invocation.path, lost)
        raise
    finally:
        try:
            if tracking:
                try:
                    tracker.finish(tracked, failed=failed)
                except Exception as exc:  # noqa: BLE001 - a failed run's own error comes first (a full disk)
                    if not failed:
                        raise
                    log.warning("the tracker could not finish this failed run: %s: %s", type(exc).__name__, exc)
        finally:
            if built.cache is not None:
                built.cache.close()
            built.stack.close()
            restore_prices()  # the next job of a sweep in this process gets only its own pricing_file
    Display(enabled=False).table(results)
    _report_problems(results, built.benchmark)
    print(closing_line(results), flush=True)
    return results


async def _ask(built: Any, preflight: list[Any], asking: Coroutine[Any, Any, Any]) -> Any:
    """The preflight, then the samples, in one event loop (the endpoints' limiters and connections are the
    loop's own)."""
    try:
        if preflight:
            await built.preflight(preflight)
    except BaseException:
        asking.close()  # never started
        raise
    return await asking


def _pool(cfg: DictConfig, built: Any, planned: Plan, run_dir: Path) -> Pool | None:
    """The worker processes that ask the planned samples (runner/run/workers.py); None: this process asks them."""
    requested = cfg.get("workers")
    n = workers_for(requested, len(planned.jobs), built)
    if n <= 1:
        return None
    log.info("asking %d sample(s) in %d worker processes (%s)", len(planned.jobs), n,
             "chosen from the cores and the work" if requested is None else f"workers={requested}")
    return Pool(n, plain_config(cfg), run_dir, built)


def incomplete(results: dict[str, Any], fail_on_error: float, run_dir: Path) -> str | None:
    """Why a run that wrote its results still exits 1, and what to do: a task's metrics, the summary or a
    benchmark's own files could not be computed, samples ended as errors beyond `fail_on_error` (a share of
    all samples), or a task has no scored sample. None when every sample was asked and scored."""
    where = f"results are in {run_dir / 'results.json'}"
    rerun = f"re-run with hydra.run.dir={run_dir} to ask the failed samples again"
    fix = (f"every record is kept: RUNNER_DEBUG=1 runner rescore {run_dir} shows the traceback, and "
           "`--write` fills in results.json once the cause is fixed")
    tasks = results.get("tasks") or {}
    failed = [f"{name} ({block['failed']})" for name, block in tasks.items() if block.get("failed")]
    if failed:
        return f"the metrics of task(s) {'; '.join(failed)} could not be computed; the other tasks' {where}; {fix}"
    summary = results.get("summary") or {}
    if summary.get("failed"):
        return f"the run's summary could not be computed ({summary['failed']}); the tasks' {where}; {fix}"
    if results.get("outputs_failed"):
        return (f"some of the benchmark's own files could not be written ({'; '.join(results['outputs_failed'])}); "
                f"{where}")
    reason = _unscored(results, fail_on_error)
    return None if reason is None else f"{reason}; {where}; {rerun}"


def _unscored(results: dict[str, Any], fail_on_error: float) -> str | None:
    tasks = results.get("tasks") or {}
    empty = [name for name, block in tasks.items() if block.get("n", 0) - block.get("n_errors", 0) <= 0]
    total = sum(block.get("n", 0) for block in tasks.values())
    errors = sum(block.get("n_errors", 0) for block in tasks.values())
    if empty:
        return f"task(s) {', '.join(empty)} have no scored sample (their metrics are null)"
    if errors and errors / total > fail_on_error:
        return (f"{errors} of {total} sample(s) ended as errors (error_ids in results.json; allowed share "
                f"fail_on_error={fail_on_error:g})")
    return None


def _audit_tables(result: dict[str, Any]) -> dict[str, tuple[list[str], list[list[Any]]]]:
    """The audit as two tracker tables: each rater's figures, and every disagreement."""
    summary: list[list[Any]] = []
    disagreements: list[list[Any]] = []
    for task, block in result["tasks"].items():
        for rater, stats in [*block["judges"].items(), ("panel", block["panel"])]:
            low, high = stats["cohen_kappa_ci"] or [None, None]
            summary.append([task, rater, stats["n"], stats["agreement"], stats["cohen_kappa"], low, high,
                            stats["n_invalid"]])
            disagreements += [[task, rater, d["id"], d["label"], d["verdict"], d["explanation"]]
                              for d in stats["disagreements"]]
    return {"audit/summary": (["task", "rater", "n", "agreement", "cohen_kappa", "ci_low", "ci_high",
                               "n_invalid"], summary),
            "audit/disagreements": (["task", "rater", "id", "label", "verdict", "explanation"], disagreements)}


def _totals(usage: dict[str, Any]) -> dict[str, Any]:
    """Every count summed over the endpoints; `cost_usd` (and `saved_usd`) null when any endpoint's is."""
    from runner.run.invocations import totals

    return totals(usage)


TRUNCATED_WARN = 0.05
"""A task with more than this share of its replies cut at the token limit gets a warning after the table."""


def _report_problems(results: dict[str, Any], benchmark: Any) -> None:
    for line in benchmark.warnings(results["summary"]):
        log.warning("%s", line)
    for task, block in (results.get("tasks") or {}).items():
        share = truncated_share(block) if isinstance(block, dict) else None
        if share is not None and share > TRUNCATED_WARN:
            cap = (block.get("params") or {}).get("max_tokens")
            raise_to = f"params.max_tokens={int(cap) * 4}" if isinstance(cap, int) and cap > 0 else \
                "params.max_tokens=N"
            log.warning("%s: %d of %d replies (%.0f %%) were cut at the token limit%s: each is read only from an "
                        "answer it stated before the cut, so its score is no measure of the model; raise "
                        "max_tokens: %s (n_truncated in results.json)", task, block["n_truncated"],
                        block["n"] - (block.get("n_errors") or 0), 100 * share,
                        f" (max_tokens {cap})" if cap else "", raise_to)
