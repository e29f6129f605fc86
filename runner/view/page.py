"""One self-contained HTML file: the template with the stylesheet, the script and the page's data inline.

Everything the page shows comes from the data, which sits in a `<script type="application/json">` block
as plain JSON with every `<` written `\\u003c`: no text of a record can close that block or open a tag.
The script builds the page with DOM calls and text nodes only (never innerHTML), and a Content Security
Policy allows nothing but this script and stylesheet (by hash) and data: images, so the page loads
nothing from any address, even if some text did slip through as markup.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import math
import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

ASSETS = Path(__file__).resolve().parent / "assets"
_PLACEHOLDER = re.compile(r"@@([A-Z]+)@@")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _finite(value: Any) -> Any:
    """The value with NaN and infinities as null (JSON has no such numbers, and JSON.parse rejects them)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def script_json(data: Any) -> str:
    """`data` as JSON that is safe inside a script element and still readable: UTF-8 text as is, and every
    `<` as `\\u003c` (so neither `</script>` nor `<!--` can occur)."""
    try:
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=str)
    except ValueError:
        text = json.dumps(_finite(data), ensure_ascii=False, separators=(",", ":"), default=str)
    # A lone surrogate (from a "\ud800" escape in a record) cannot be written as UTF-8: keep it escaped.
    text = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return text.replace("<", "\\u003c")


def _asset(name: str) -> str:
    return (ASSETS / name).read_text(encoding="utf-8")


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def render(data: dict[str, Any], title: str) -> str:
    """The page: `data` (a dict with `kind`: run, sweep or diff) shown by the viewer's script."""
    css, js = _asset("view.css"), _asset("view.js")
    csp = (f"default-src 'none'; script-src {_sha256(js)}; style-src {_sha256(css)}; img-src data:; "
           "base-uri 'none'; form-action 'none'")
    parts = {"CSP": csp, "TITLE": html.escape(title), "CSS": css, "JS": js, "DATA": script_json(data)}
    # One pass over the template: what is put in is never searched for placeholders again.
    return _PLACEHOLDER.sub(lambda m: parts[m.group(1)], _asset("template.html"))


def write_page(path: Path, data: dict[str, Any], title: str) -> Path:
    """Write the page (creating its folder) and return its path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(render(data, title), encoding="utf-8")
    tmp.replace(path)
    return path


def relative_href(target: Path, from_dir: Path) -> str:
    """A link from a page in `from_dir` to `target` that works from file:// (relative, percent-encoded)."""
    return quote(Path(os.path.relpath(target, from_dir)).as_posix())
