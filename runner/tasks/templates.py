"""Prompt templates found and compiled when the run is built, so a typo stops the run before any call.

A template is named by a file (one word ending in .j2, .jinja, .txt or .md, looked up in the task's
folders, first match wins) or written inline in YAML (anything else is the template text itself).

Templates come with benchmarks, which may come from anyone, so every one is rendered in Jinja's immutable
sandbox (`sandboxed_environment`): it may read its variables, call their ordinary methods and use filters,
but not reach Python internals (`cycler.__init__.__globals__.os`), mutate lists and dicts, or call anything
marked unsafe. What the sandbox would refuse on every sample is refused when the template is compiled
(`unsafe_names`); what it refuses only while rendering is a ConfigError naming the template, never code run.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.errors import ConfigError

if TYPE_CHECKING:
    import jinja2
    from jinja2 import nodes

SANDBOX_HINT = ("templates run in Jinja's sandbox: they may read their variables and call plain methods, not "
                "reach Python internals (names starting with '_') or change lists and dicts; fix the template "
                "(a data column whose name starts with '_' is read as row['_name'])")


class UndefinedVariable(Exception):  # noqa: N818 - named for what the template did
    """A template used a variable the values it was rendered with do not have (StrictUndefined). Rendering one
    sample it is that sample's error; rendered for a task's first sample before any request, it stops the run
    (runner/run/pipeline.py `check_prompts`)."""

    def __init__(self, where: str, source: str, detail: str) -> None:
        super().__init__(f"{where + ': ' if where else ''}template {source}: {detail}")
        self.where, self.source, self.detail = where, source, detail


@dataclass(frozen=True)
class Template:
    """A compiled Jinja template (StrictUndefined: a missing variable fails the sample loudly)."""

    source: str
    """The file it came from, or `inline`."""
    text: str
    compiled: Any
    where: str = ""
    """The config key it was named by, for error lines."""

    def render(self, **variables: Any) -> str:
        """The rendered text, surrounding whitespace stripped. An operation the sandbox refuses is the
        template's fault, not the sample's: a ConfigError naming the template; an undefined variable is
        UndefinedVariable, naming it too."""
        from jinja2.exceptions import SecurityError, UndefinedError

        try:
            return str(self.compiled.render(**variables)).strip()
        except SecurityError as exc:
            raise unsafe(self.where, self.source, exc) from None
        except UndefinedError as exc:
            raise UndefinedVariable(self.where, self.source, " ".join(str(exc).split())) from None


def unsafe(where: str, source: str, exc: BaseException) -> ConfigError:
    """The one line for a template that tried what the sandbox refuses."""
    return ConfigError(f"{where + ': ' if where else ''}template {source} tried an unsafe operation "
                       f"({' '.join(str(exc).split())}); {SANDBOX_HINT}")


def unsafe_names(tree: nodes.Template) -> list[tuple[int, str]]:
    """(line, name) of every attribute a template names that the sandbox refuses on any object: `x._y` and
    `x.__y__`, and dunder strings such as `x['__class__']` or `x|attr('__init__')`. A dict key `_y` is still
    readable as `x['_y']`."""
    from jinja2 import nodes

    found: list[tuple[int, str]] = []
    for node in tree.find_all((nodes.Getattr, nodes.NSRef, nodes.Const)):
        if isinstance(node, (nodes.Getattr, nodes.NSRef)) and node.attr.startswith("_"):
            found.append((node.lineno, node.attr))
        elif isinstance(node, nodes.Const) and isinstance(node.value, str) and re.fullmatch(r"__\w*__", node.value):
            found.append((node.lineno, node.value))
    return found


def sandboxed_environment(loader: jinja2.BaseLoader | None = None) -> jinja2.Environment:
    """The one Jinja environment every template of the runner is rendered in (templates.py and prompts.py):
    immutable sandbox, StrictUndefined, no autoescape, trailing newline dropped; a template naming an
    unsafe attribute fails to compile (jinja2.sandbox.SecurityError)."""
    import jinja2

    env: jinja2.Environment = _sandbox_class()(loader=loader, undefined=jinja2.StrictUndefined,
                                               keep_trailing_newline=False, autoescape=False)
    return env


@cache
def _sandbox_class() -> type[jinja2.Environment]:
    """Made on first use: jinja2 is imported only when a template is."""
    from jinja2.exceptions import SecurityError
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class Sandbox(ImmutableSandboxedEnvironment):
        def _parse(self, source: str, name: str | None, filename: str | None) -> nodes.Template:
            tree = super()._parse(source, name, filename)
            bad = unsafe_names(tree)
            if bad:
                line, attr = bad[0]
                raise SecurityError(f"line {line}: access to '{attr}' is not allowed")
            return tree

    return Sandbox


_FILE_NAME = re.compile(r"[\w./-]+\.(?:j2|jinja2?|txt|md)")


def _inline(spec: str) -> bool:
    return not _FILE_NAME.fullmatch(spec.strip())


def load_template(spec: str, folders: Sequence[Path], where: str) -> Template:
    """Compile `spec` (a file name looked up in `folders`, or inline text); ConfigError naming `where`."""
    if _inline(spec):
        source, text = "inline", spec
    else:
        found = next((Path(f) / spec for f in folders if (Path(f) / spec).is_file()), None)
        if found is None:
            looked = ", ".join(str(f) for f in folders) or "no folder"
            raise ConfigError(f"{where}: template '{spec}' not found (looked in {looked}); check the file name, "
                              "or put it beside the task's data (benchmark.data_dir) or in its prompt_dir")
        source, text = str(found), found.read_text(encoding="utf-8")
    return _compile(source, text, where)


def _compile(source: str, text: str, where: str) -> Template:
    import jinja2
    from jinja2.exceptions import SecurityError

    try:
        return Template(source=source, text=text, compiled=sandboxed_environment().from_string(text), where=where)
    except jinja2.TemplateSyntaxError as exc:
        raise ConfigError(f"{where + ': ' if where else ''}template {source} line {exc.lineno}: {exc.message}") \
            from None
    except SecurityError as exc:
        raise unsafe(where, source, exc) from None


def render(directory: Path, name: str, **variables: Any) -> str:
    """Render the prompt file `directory/name` (a task's own `prompts/` folder) with `variables`, surrounding
    whitespace stripped; compiled once per process. A template the sandbox refuses is a ConfigError naming
    its file."""
    return _prompt_file(str(directory), name).render(**variables)


def check(directory: Path, name: str, where: str) -> None:
    """Compile the prompt file `directory/name` now (at build time), so a missing, misspelt or unsafe template
    stops the run before any request: a ConfigError naming `where` and the file."""
    _prompt_file(str(directory), name, where)


@cache
def _prompt_file(directory: str, name: str, where: str = "") -> Template:
    path = Path(directory) / name
    if not path.is_file():
        raise ConfigError(f"{where + ': ' if where else ''}template {path} not found")
    return _compile(str(path), path.read_text(encoding="utf-8"), where)
