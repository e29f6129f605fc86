"""`python -m runner ARGS` without a new interpreter: a fork of the test's process runs the real console entry
point (runner.__main__.main: Hydra's parsing, the run, the exit status and the one error line) with Python,
Hydra and litellm already imported, the seconds each new interpreter spends importing them (issue 30, point 6).

The fork is a process of its own: what a run changes (the environment, the folder, signal handlers, logging,
Hydra's global state, the keys redaction learned, the embedded model server it starts) ends with it, and the test
process's own output streams are never touched. Its stdout and stderr (what Python code writes; a process the
run starts writes to the descriptors it inherited) come back with its exit status. A call that needs a new
interpreter (a `-m` sweep's launchers, Hydra's own flags, variables read at import) gets one: `needs_process`;
so do the tests of the process itself, through `cli(..., fresh=True)`."""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

_PROCESS_ONLY_ARGS = ("-m", "--multirun", "--help", "-h", "--hydra-help", "--info", "--cfg", "-c", "--shell-completion",
                      "--version", "--run", "-r")
_PROCESS_ONLY_ENV = ("RUNNER_DEBUG", "HYDRA_FULL_ERROR", "COLUMNS", "LINES", "TERM", "NO_COLOR", "FORCE_COLOR", "HOME",
                     "PATH", "PYTHON", "HF_", "LITELLM_")
"""Variables (and prefixes) read at import, by the interpreter or by a terminal library: a call that sets one is
run by a new interpreter."""


def needs_process(args: list[str], env: dict[str, str] | None) -> str | None:
    """Why this call needs a new interpreter, or None: a sweep (its launchers start processes of their own),
    Hydra's own flags (they print and exit through paths tests check as a user sees them), and variables read
    once at import or by a terminal library (the debug switch, PYTHONPATH, the terminal)."""
    for arg in args:
        if arg in _PROCESS_ONLY_ARGS or arg.startswith(("hydra/launcher=", "launcher=", "hydra.launcher")):
            return f"argument {arg}"
    for name in env or {}:
        if name.startswith(_PROCESS_ONLY_ENV):
            return f"variable {name}"
    return None


def _entry(module: str, args: list[str]) -> Any:
    """What `python -m MODULE ARGS` runs: runner's console entry point, or a command module's main(ARGS)."""
    if module == "runner":
        sys.argv = ["runner", *args]
        return importlib.import_module("runner.__main__").main()
    name = "runner.view.__main__" if module == "runner.view" else module
    sys.argv = [module, *args]
    return importlib.import_module(name).main(args, prog=f"python -m {module}")


def _child(module: str, args: list[str], env: dict[str, str] | None, root: Path, write: int) -> None:
    """In the fork: run, then hand back (status, stdout, stderr) and end without the parent's exit handlers."""
    out, err = io.StringIO(), io.StringIO()
    status: Any = 0
    try:
        os.setpgid(0, 0)  # a timeout ends this run and what it started, not the test process
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.environ.update(env or {})
        os.chdir(root)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = _entry(module, args)
            except SystemExit as exc:
                status = exc.code
            except BaseException as exc:  # noqa: BLE001 - as the interpreter would: a traceback, exit 1
                import traceback

                traceback.print_exc()
                status = 1 if not isinstance(exc, KeyboardInterrupt) else 130
        if isinstance(status, str):  # sys.exit("message"): Python prints it and exits 1
            err.write(f"{status}\n")
        code = status if isinstance(status, int) else (0 if status is None else 1)
        payload = json.dumps([code, out.getvalue(), err.getvalue()]).encode()
        with os.fdopen(write, "wb") as pipe:
            pipe.write(payload)
    finally:
        os._exit(0)


def run_forked(args: list[str], env: dict[str, str] | None, timeout: float, root: Path,
               module: str = "runner") -> subprocess.CompletedProcess[str]:
    """Run `python -m MODULE ARGS` in a fork of this process; its output and status as subprocess.run returns
    them (TimeoutExpired after `timeout` seconds, its process group killed)."""
    from runner.models.litellm_import import import_litellm

    import_litellm()  # once per test process: every fork starts with it imported, as a run's own import left it
    read, write = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        _child(module, args, env, root, write)
    os.close(write)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    os.set_blocking(read, False)
    with os.fdopen(read, "rb") as pipe:
        while True:
            try:
                chunk = pipe.read()
            except BlockingIOError:
                chunk = None
            if chunk:
                chunks.append(chunk)
            elif chunk == b"":
                break
            if time.monotonic() > deadline:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                raise subprocess.TimeoutExpired([module, *args], timeout)
            time.sleep(0.01)
    _, wait_status = os.waitpid(pid, 0)
    if not chunks:  # the fork died before it could answer (a signal, os._exit by the run)
        code = os.waitstatus_to_exitcode(wait_status)
        return subprocess.CompletedProcess([sys.executable, "-m", module, *args], 128 - code if code < 0 else code,
                                           "", f"the forked run ended with status {code} and no answer\n")
    code, out, err = json.loads(b"".join(chunks))
    return subprocess.CompletedProcess([sys.executable, "-m", module, *args], code, out, err)
