"""Prompt templates found and compiled when the run is built, so a typo stops the run before any call.

A template is named by a file (one word ending in .j2, .jinja, .txt or .md, looked up in the task's
folders, first match wins) or written inline in YAML (anything else is the template text itself).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.errors import ConfigError


@dataclass(frozen=True)
class Template:
    """A compiled Jinja template (StrictUndefined: a missing variable fails the sample loudly)."""

    source: str
    """The file it came from, or `inline`."""
    text: str
    compiled: Any

    def render(self, **variables: Any) -> str:
        """The rendered text, surrounding whitespace stripped."""
        return str(self.compiled.render(**variables)).strip()


_FILE_NAME = re.compile(r"[\w./-]+\.(?:j2|jinja2?|txt|md)")


def _inline(spec: str) -> bool:
    return not _FILE_NAME.fullmatch(spec.strip())


def load_template(spec: str, folders: Sequence[Path], where: str) -> Template:
    """Compile `spec` (a file name looked up in `folders`, or inline text); ConfigError naming `where`."""
    import jinja2

    if _inline(spec):
        source, text = "inline", spec
    else:
        found = next((Path(f) / spec for f in folders if (Path(f) / spec).is_file()), None)
        if found is None:
            looked = ", ".join(str(f) for f in folders) or "no folder"
            raise ConfigError(f"{where}: template '{spec}' not found (looked in {looked}); check the file name, "
                              "or put it beside the task's data (benchmark.data_dir) or in its prompt_dir")
        source, text = str(found), found.read_text(encoding="utf-8")
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=False, autoescape=False)
    try:
        return Template(source=source, text=text, compiled=env.from_string(text))
    except jinja2.TemplateSyntaxError as exc:
        raise ConfigError(f"{where}: template {source} line {exc.lineno}: {exc.message}") from None
