"""Prompt files: Jinja templates next to their task, rendered in the runner's sandbox (runner/tasks/templates.py)
with StrictUndefined, so a typo fails loudly and a hostile template runs no code."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.errors import ConfigError
from runner.tasks.templates import sandboxed_environment, unsafe

if TYPE_CHECKING:
    import jinja2


@cache
def _environment(directory: str) -> jinja2.Environment:
    import jinja2

    return sandboxed_environment(jinja2.FileSystemLoader(directory))


def render(directory: Path, name: str, **variables: Any) -> str:
    """Render `directory/name` with `variables`; surrounding whitespace is stripped. A template the sandbox
    refuses (when compiled or while rendering) is a ConfigError naming its file."""
    from jinja2.exceptions import SecurityError

    try:
        return _environment(str(directory)).get_template(name).render(**variables).strip()
    except SecurityError as exc:
        raise unsafe("", str(Path(directory) / name), exc) from None


def check(directory: Path, name: str, where: str) -> None:
    """Compile `directory/name` now (at build time), so a missing, misspelt or unsafe template stops the run
    before any request: a ConfigError naming `where` and the file."""
    import jinja2
    from jinja2.exceptions import SecurityError

    try:
        _environment(str(directory)).get_template(name)
    except jinja2.TemplateNotFound:
        raise ConfigError(f"{where}: template {Path(directory) / name} not found") from None
    except jinja2.TemplateSyntaxError as exc:
        raise ConfigError(f"{where}: template {Path(directory) / name} line {exc.lineno}: {exc.message}") from None
    except SecurityError as exc:
        raise unsafe(where, str(Path(directory) / name), exc) from None
