"""`python -m runner [overrides]`: compose the config with Hydra, run, and turn errors into one clear line."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import warnings
from pathlib import Path
from typing import Any

# Read before main() sets HYDRA_FULL_ERROR for its own use: did the *user* ask for tracebacks?
_DEBUG = bool(os.environ.get("RUNNER_DEBUG") or os.environ.get("HYDRA_FULL_ERROR"))


def _debug() -> bool:
    return _DEBUG


def _one_line(exc: BaseException) -> str:
    """Hydra and OmegaConf errors span several lines (and a cause); fold them into one."""
    parts: list[str] = []
    seen: BaseException | None = exc
    while seen is not None:
        for line in str(seen).splitlines():
            line = line.strip()
            if line and "HYDRA_FULL_ERROR" not in line and not line.startswith(("reference_type", "object_type")) \
                    and line not in parts:
                parts.append(line)
        seen = seen.__cause__
    return "; ".join(parts) or type(exc).__name__


def reader_gone() -> None:
    """Exit as a command a closed pipe ended (`... | head`), quietly: 141, what a shell reports (128 + SIGPIPE)."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # else the exit flush fails again
    sys.exit(141)


def _fail(message: str, code: int) -> None:
    from runner.config.redact import redact_text
    from runner.untrusted import for_terminal

    # Hydra's errors quote overrides as typed; a provider's body or a sample id may carry escape sequences.
    print(f"error: {for_terminal(redact_text(message))}", file=sys.stderr)
    sys.exit(code)


def _save_config(cfg: Any, hc: Any, run_dir: Path) -> None:
    """What Hydra would save in `.hydra/` (it is told not to), with every secret masked before it is
    written, and only once the run is accepted: a refused resume leaves the run dir as it was."""
    from omegaconf import OmegaConf

    from runner.config.redact import write_redacted_yaml

    folder = run_dir / ".hydra"
    folder.mkdir(parents=True, exist_ok=True)
    write_redacted_yaml(OmegaConf.to_container(cfg, resolve=False), folder / "config.yaml")
    write_redacted_yaml({"hydra": OmegaConf.to_container(hc, resolve=False, enum_to_str=True)}, folder / "hydra.yaml")
    write_redacted_yaml(list(hc.overrides.task), folder / "overrides.yaml")


class _RedactingFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        from runner.config.redact import redact_text
        from runner.untrusted import for_terminal

        record.msg = for_terminal(redact_text(record.getMessage()))  # what it quotes is shown, never obeyed
        record.args = None
        return True


_STOPPED_BY: list[signal.Signals] = []
"""The signal that stopped this process (SIGTERM, SIGHUP), once one has."""


def _stop_like_ctrl_c(signum: int, frame: Any) -> None:
    """SIGTERM (docker stop, a scheduler's time limit) and SIGHUP (the terminal closed) stop a run as Ctrl-C does:
    no new request is sent, this invocation's usage and what is done are kept, and the exit status is 128 + the
    signal's number. The first one does it (through SIGINT's handler: asyncio's cancels the run's task); a repeat
    changes nothing, so the books are not cut short while they are written."""
    if _STOPPED_BY:
        return
    _STOPPED_BY.append(signal.Signals(signum))
    handler = signal.getsignal(signal.SIGINT)
    if callable(handler):
        handler(signal.SIGINT, frame)
    else:  # SIGINT ignored for a moment (worker processes starting): stop as Python's own handler would
        raise KeyboardInterrupt


def _stopped(run_dir: Path | None) -> None:
    """Exit after an interruption: 130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP (as a shell reports them)."""
    by = _STOPPED_BY[0] if _STOPPED_BY else None
    what, code = (f"stopped by {by.name}", 128 + by.value) if by else ("interrupted", 130)
    if run_dir is None:
        _fail(f"{what} outside a run (composing the config, or between a sweep's jobs); what finished is kept; "
              "run the same command again to go on", code)
    _fail(f"{what}; no request was sent after it; finished samples and this invocation's usage are saved; re-run "
          f"with hydra.run.dir={run_dir} to resume", code)


def _quiet_log_file(handler: logging.Handler) -> None:
    """A log file the disk refuses (full, read-only) loses its lines, not the run: no traceback on stderr (the
    console keeps every line, and the run's own one line names the disk's error)."""
    fallback = handler.handleError

    def handle(record: logging.LogRecord) -> None:
        if not isinstance(sys.exc_info()[1], OSError):
            fallback(record)

    handler.handleError = handle  # type: ignore[method-assign]


_LAUNCHER_PID = 0
"""The process that composed the config and launched the run (or the sweep); a sweep's job in another process
(joblib, Ray, Slurm) runs as a remote job (runner/launchers/in_job.py)."""


def _outcome(hc: Any, run_dir: Path, status: int, error: str | None = None) -> dict[str, Any]:
    """A sweep job's end for the launching process (runner/launchers/outcomes.py): kept here when this is that
    process (the basic launcher), returned to it by the others."""
    from runner.launchers.outcomes import Outcome, job_overrides, record

    done = Outcome(num=int(hc.job.num), run_dir=str(run_dir), status=status, error=error,
                   overrides=job_overrides(hc.overrides))
    record(done)
    return done.as_dict()


def _remote_job(hc: Any) -> Any:
    """A job in a worker process: the submitter's folder, and stop signals that keep the books."""
    from runner.launchers.in_job import RemoteJob

    _STOPPED_BY.clear()  # a joblib worker runs job after job
    return RemoteJob(str(hc.runtime.cwd), _stop_like_ctrl_c).__enter__()


def _remote_stopped(remote: Any, hc: Any, run_dir: Path) -> dict[str, Any]:
    """A job in a worker process was stopped by a signal: its books are written; say so in its error.txt, let
    submitit requeue it when the signal was its own, and go back to the launcher (the others go on)."""
    by = _STOPPED_BY[0] if _STOPPED_BY else None
    text = (f"stopped by {by.name if by else 'an interrupt'}; no request was sent after it; finished samples and "
            "this invocation's usage are saved; re-run the sweep (same hydra.sweep.dir) to resume it")
    logging.getLogger("runner").error("job %s %s", hc.job.num, text)
    with contextlib.suppress(OSError):
        (run_dir / "error.txt").write_text(f"{text}\n", encoding="utf-8")
    why_not = remote.hand_back(by)  # submitit's own signal: it requeues the job (and exits) ...
    if why_not:  # ... or says why not
        text += f"; not requeued: {why_not}"
        with contextlib.suppress(OSError):
            (run_dir / "error.txt").write_text(f"{text}\n", encoding="utf-8")
    return _outcome(hc, run_dir, 128 + by.value if by else 130, text)


def _job(cfg: Any) -> dict[str, Any] | None:
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    from runner.config import register, swept
    from runner.errors import RunnerError
    from runner.run.store import disk_error

    register()  # a launcher's worker process (joblib, ray, slurm) imports this module afresh
    hc = HydraConfig.get()
    run_dir = Path(hc.runtime.output_dir)
    for handler in logging.getLogger().handlers:
        handler.addFilter(_RedactingFilter())
        if isinstance(handler, logging.FileHandler):
            _quiet_log_file(handler)
    multirun = hc.mode == RunMode.MULTIRUN
    started: list[bool] = []  # accepted: from here on records may be written
    remote = _remote_job(hc) if multirun and os.getpid() != _LAUNCHER_PID else None

    def accepted() -> None:
        started.append(True)
        (run_dir / "error.txt").unlink(missing_ok=True)  # a resumed job starts with a clean slate
        _save_config(cfg, hc, run_dir)

    try:
        from runner.errors import BudgetReached, IncompleteRun
        from runner.outputs.sweep_report import sweep_group
        from runner.run.app import incomplete, run

        label = swept(hc.sweep.dir, list(hc.overrides.task)) if multirun else None
        results = run(cfg, run_dir, group=sweep_group(hc.sweep.dir) if multirun else None, label=label or None,
                      accepted=accepted)
        if results.get("stopped") == "budget":
            raise BudgetReached(f"budget.max_usd={cfg.budget.max_usd:g} reached: no new request was sent; the "
                                f"results of what was scored are in {run_dir / 'results.json'}; re-run with a "
                                f"higher budget.max_usd (or none) and hydra.run.dir={run_dir} to go on")
        reason = incomplete(results, float(cfg.fail_on_error), run_dir)
        if reason:
            raise IncompleteRun(reason)
    except KeyboardInterrupt:
        if remote is None:  # Ctrl-C (or a signal) to the process that runs the sweep stops it all
            _stopped(run_dir)
        return _remote_stopped(remote, hc, run_dir)
    except Exception as exc:  # noqa: BLE001 - sorted below: one line, and a sweep goes on
        if _debug():
            raise
        from runner.config.redact import redact_text
        from runner.run.lock import RunDirBusy

        exc = disk_error(exc, run_dir, started=bool(started)) or exc  # the filesystem's answer: no bug
        text = str(exc) if isinstance(exc, RunnerError) else f"internal error: {type(exc).__name__}: {exc}"
        if multirun:  # one failed job must not stop the sweep; it says why, and the report lists it
            logging.getLogger("runner").error("job %s failed: %s", hc.job.num, text)
            if not isinstance(exc, RunDirBusy):  # a run dir another process holds: its error.txt is not ours
                with contextlib.suppress(OSError):  # a job dir the disk refuses keeps its reason in the log only
                    (run_dir / "error.txt").write_text(f"{redact_text(text)}\n", encoding="utf-8")
            return _outcome(hc, run_dir, exc.exit_code if isinstance(exc, RunnerError) else 1, redact_text(text))
        if isinstance(exc, RunnerError):
            _fail(text, exc.exit_code)
        raise
    finally:
        if remote is not None:
            remote.__exit__(None, None, None)
    return _outcome(hc, run_dir, 0) if multirun else None


def _exit_if_jobs_failed() -> None:
    """A sweep exits with the worst of its jobs' statuses (runner/launchers/outcomes.py); each lost job gets a
    line saying how to resume it, then the one error line."""
    from runner.launchers.outcomes import outcomes, resume_line, sweep_status
    from runner.outputs.sweep_report import SweepReport

    found = outcomes()
    status = sweep_status(found) if found else int(bool(SweepReport.failed))
    if not status:
        return
    root = SweepReport.root or Path(".")
    for job in found:
        if job.lost or job.status >= 128:  # no result, or stopped by a signal half-way: how to finish it
            print(resume_line(job, root), file=sys.stderr)
    failed = [job for job in found if job.status]
    count = f"{len(failed)} of {len(found)}" if found else str(len(SweepReport.failed))
    lost = sum(job.lost for job in failed)
    first = SweepReport.failed[0] if SweepReport.failed else failed[0].line(root)
    _fail(f"{count} job(s) of the sweep failed{f', {lost} of them lost (no result came back)' if lost else ''} "
          f"({first}); the others' results and the report ({root / 'report'}) are saved; re-run the same sweep "
          "(same hydra.sweep.dir) to resume", status)


def _launcher_address(args: list[str]) -> list[str]:
    """`launcher.address=ray://HOST:PORT` (or `auto`) is short for hydra.launcher.ray.init.address: the Ray
    cluster a `launcher=ray` sweep runs on (conf/launcher/ray.yaml)."""
    return [f"hydra.launcher.ray.init.address={arg.partition('=')[2]}"
            if arg.partition("=")[0].lstrip("+") == "launcher.address" else arg for arg in args]


_CONFIG_DIR_FLAGS = ("-cd", "--config-dir", "-cp", "--config-path", "-cn", "--config-name")


def _skip_mode_probe(conf: Path) -> None:
    """Hydra 1.3 composes the whole config once only to read `hydra.mode`, then composes it again to run:
    a fifth of a cached re-run's time (bench/bench_mcq.py). The runner's own tree sets no mode
    (tests/test_configs.py), so where nothing else can set one (an override of hydra.mode, another
    config dir, a searchpath, a local/ file) the probe's answer is known: None, as Hydra's probe would say."""
    from hydra._internal.hydra import Hydra

    args = sys.argv[1:]
    if any(a.lstrip("+~").startswith(("hydra.mode", "hydra.searchpath")) for a in args) \
            or any(a.split("=", 1)[0] in _CONFIG_DIR_FLAGS for a in args) or any((conf / "local").glob("*.yaml")):
        return
    Hydra.get_mode = lambda self, config_name, overrides: None  # type: ignore[method-assign]


SUBCOMMANDS = {
    "view": ("runner.view.__main__", "DIR [OTHER] [--open]", "a run's or a sweep's samples as one HTML page"),
    "rescore": ("runner.rescore", "DIR [--write]", "recompute a run's metrics from its samples files"),
    "rejudge": ("runner.rejudge", "DIR judges=...", "judge a run's recorded replies again with another panel"),
    "audit": ("runner.audit", "DIR --labels FILE", "the judges and the panel vote against human labels"),
    "report": ("runner.report", "DIR", "a sweep's (or a folder's) comparison and paired tests"),
    "status": ("runner.models.batch_journal", "DIR", "a batch run's provider batches as last polled; sends nothing"),
}
"""`runner NAME ...` runs the module's own command line (also `python -m MODULE ...`): what a tool install
(pipx, uv tool) puts on PATH is this one command."""


def _subcommand(name: str, argv: list[str]) -> None:
    """Run `runner NAME ARGV` and exit with its status."""
    import importlib

    try:
        status = importlib.import_module(SUBCOMMANDS[name][0]).main(argv, prog=f"runner {name}")
    except BrokenPipeError:
        reader_gone()
    sys.exit(status or 0)


def main() -> None:
    """Console entry point: a subcommand (`runner view DIR`, ...), else a run composed by Hydra."""
    args = sys.argv[1:]
    if args and args[0] in SUBCOMMANDS:  # before Hydra: these are no overrides
        _subcommand(args[0], args[1:])
    if "--version" in args:  # Hydra's own --version would name Hydra's version, not the runner's
        from runner import __version__

        print(f"runner {__version__}")
        return
    # litellm (seconds to import) is imported on the first request that misses the cache, in a thread:
    # starting it here competes with config composition for the GIL (bench/bench_mcq.py measured it).
    import hydra
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from runner.config import (
        group_option_problem,
        hydra_callback_problem,
        register,
        schema_key_problem,
        unknown_key_problem,
    )
    from runner.config.paths import conf_dir

    global _LAUNCHER_PID
    _LAUNCHER_PID = os.getpid()
    sys.argv[1:] = _launcher_address(sys.argv[1:])
    register()
    # When an endpoint stops the run (dead, refused), the calls still in flight are cancelled; litellm may
    # have made its HTTP coroutine without awaiting it yet, and Python's 3-line warning about that would
    # come before the one line that says what happened.
    warnings.filterwarnings("ignore", message=r"coroutine '[\w.]*(Handler|completion)[\w.]*' was never awaited",
                            category=RuntimeWarning)
    for arg in sys.argv[1:]:
        problem = schema_key_problem(arg)
        if problem:
            _fail(f"config: {problem}", 2)
    problem = hydra_callback_problem(sys.argv[1:])  # Hydra builds callbacks before any code of ours runs
    if problem:
        _fail(f"config: {problem}", 2)
    _skip_mode_probe(conf_dir())
    app = hydra.main(version_base="1.3", config_path=str(conf_dir()), config_name="config")(_job)
    # Make Hydra raise instead of printing its multi-line report, so we can print one line.
    os.environ["HYDRA_FULL_ERROR"] = "1"
    # From here on these stop as Ctrl-C does (before: nothing is done): SIGTERM (docker stop, a scheduler),
    # SIGHUP (the terminal closed), SIGUSR1/SIGUSR2 (what `sbatch --signal` sends before a time limit).
    for stop in (signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(stop, _stop_like_ctrl_c)
    try:
        app()
        _exit_if_jobs_failed()
    except (HydraException, OmegaConfBaseException) as exc:
        if _debug():
            raise
        if "hydra.launcher.ray.init.address" in str(exc) and "launcher.address" in " ".join(sys.argv):
            _fail("config: launcher.address is a key of launcher=ray (the Ray cluster to run on); add launcher=ray", 2)
        _fail(f"config: {unknown_key_problem(exc) or group_option_problem(exc) or _one_line(exc)}", 2)
    except BrokenPipeError:  # `runner --help | head`: the reader has gone, so stop as quietly as other tools
        reader_gone()
    except KeyboardInterrupt:  # before a run started (composing the config), or between a sweep's jobs
        _stopped(None)
    except Exception as exc:  # noqa: BLE001 - a bug: say so in one line; RUNNER_DEBUG=1 shows the traceback
        if _debug():
            raise
        from runner.run.store import disk_error

        refused = disk_error(exc, None, started=False)  # Hydra makes the run dir before any code of ours runs
        if refused is not None:
            _fail(str(refused), refused.exit_code)
        from runner.errors import RunnerError

        if isinstance(exc, RunnerError):  # a launcher's (a cluster it cannot reach)
            _fail(str(exc), exc.exit_code)
        if isinstance(exc, ValueError) and str(exc).startswith("Only one of --run"):  # Hydra's flags, misused
            _fail(f"command line: {exc}", 2)
        _fail(f"internal error: {type(exc).__name__}: {_one_line(exc)} (run with RUNNER_DEBUG=1 for the "
              "traceback, and please report it)", 1)


if __name__ == "__main__":
    main()
