"""Prompt files: Jinja templates next to their task, rendered with StrictUndefined so a typo fails loudly."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import jinja2


@cache
def _environment(directory: str) -> jinja2.Environment:
    import jinja2

    return jinja2.Environment(loader=jinja2.FileSystemLoader(directory), undefined=jinja2.StrictUndefined,
                              keep_trailing_newline=False, autoescape=False)


def render(directory: Path, name: str, **variables: Any) -> str:
    """Render `directory/name` with `variables`; surrounding whitespace is stripped."""
    return _environment(str(directory)).get_template(name).render(**variables).strip()
