"""Whole-run error types: each becomes one clear stderr line (what, where, what to do) and a non-zero exit."""

from __future__ import annotations

import re
import sys
import types


class RunnerError(Exception):
    """A problem that stops the whole run (bad config, missing data, unreachable endpoint).

    The message is one line: what went wrong, where, and what to do about it.
    """

    exit_code = 2


class ConfigError(RunnerError):
    """The composed configuration is invalid."""


class DataError(RunnerError):
    """A data source is missing or unreadable as a whole (a bad row is recorded, not raised)."""


class EndpointError(RunnerError):
    """A model or judge endpoint cannot be used at all (e.g. the embedded server failed to start)."""

    exit_code = 3


class CallError(Exception):
    """One model or judge call failed after its retries; the sample is recorded as an error."""

    def __init__(self, message: str, *, attempts: int, retryable: bool = True) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.retryable = retryable


class IncompleteRun(RunnerError):
    """Results were written, but samples ended as errors beyond `fail_on_error` or a task has none scored."""

    exit_code = 1


class BudgetReached(RunnerError):
    """The run stopped at `budget.max_usd`; results of what was scored are written; a re-run resumes."""

    exit_code = 4


class BrokenInstall(RunnerError):
    """A sample failed in a way that repeats on every sample and every re-run (a name missing from the
    runner or a dependency, a call with arguments a dependency no longer takes): the run stops at once."""

    exit_code = 1


_SIGNATURE = re.compile(r"unexpected keyword argument|required (?:positional|keyword-only) argument|"
                        r"takes \d+ positional arguments? but")


def repeating_fault(exc: BaseException) -> BrokenInstall | None:
    """The whole-run error for `exc` when it comes from the code installed rather than from this sample
    (its data, the provider's reply), else None. Names the packages whose code raised it and their versions."""
    if isinstance(exc, ImportError):
        pass
    elif isinstance(exc, AttributeError):
        # Data can make an attribute missing on an object; only a module missing a name is the install's.
        if not isinstance(getattr(exc, "obj", None), types.ModuleType) and "module '" not in str(exc):
            return None
    elif isinstance(exc, NameError):
        pass
    elif not (isinstance(exc, TypeError) and _SIGNATURE.search(str(exc))):
        return None
    involved = _packages(exc)
    text = " ".join(str(exc).split())[:300]
    missing = exc.name.split(".")[0] if isinstance(exc, ImportError) and exc.name else None
    if missing is not None and not any(entry.startswith(missing + " ") for entry in involved):
        todo = f"install the package that provides '{missing}' into this environment"
    else:
        todo = ("install the versions the runner is tested with (docs/install.md: pip install -r "
                "requirements/core.lock, or the ranges in pyproject.toml), or report it with this line")
    return BrokenInstall(
        f"this install cannot ask samples: {type(exc).__name__}: {text} (in {', '.join(involved)}); it would fail "
        f"the same way on every sample and every re-run, so the run stops (finished samples are kept); {todo}")


def _packages(exc: BaseException) -> list[str]:
    """`name version` of the distributions whose code is on `exc`'s traceback, innermost first; the runner
    always included."""
    from importlib import metadata

    modules: list[str] = []
    tb = exc.__traceback__
    while tb is not None:
        name = str(tb.tb_frame.f_globals.get("__name__") or "").split(".")[0]
        if name and name not in modules:
            modules.insert(0, name)
        tb = tb.tb_next
    found: list[str] = []
    owners = metadata.packages_distributions()
    if isinstance(exc, ImportError) and exc.name and exc.name.split(".")[0] in owners:
        modules.insert(0, exc.name.split(".")[0])  # an installed package that lacks the module asked for
    for module in [*modules, "runner"]:
        if module not in owners and module != "runner" and module not in sys.stdlib_module_names \
                and module not in ("__main__", "builtins") and module not in found:
            found.append(module)  # a user's own package, on the path but not installed
        for dist in owners.get(module, ["runner"] if module == "runner" else []):
            try:
                entry = f"{dist} {metadata.version(dist)}"
            except metadata.PackageNotFoundError:
                continue
            if entry not in found:
                found.append(entry)
    return found or [f"Python {sys.version.split()[0]}"]
