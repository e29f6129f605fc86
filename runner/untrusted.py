"""Untrusted text (a reply, a provider's error body, a sample id, a task or model name) where it is read, shown
or exported: for reading, without what a screen hides (a zero-width space, a right-to-left override, a NUL or an
ANSI colour code inside "The answer is A." kept a clear reply from being read); on a terminal, with its escape
sequences shown, not obeyed (a screen clear, a window title, a hyperlink); in a spreadsheet cell, never a
formula; in a Markdown table cell, never a column or markup. Records keep the text as received.
"""

from __future__ import annotations

import re
import unicodedata

_ESCAPES = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
"""ANSI/VT escape sequences: CSI (colours, cursor moves), OSC (titles, hyperlinks), and two-byte escapes."""
_KEPT = {"\n", "\t", "\r"}
_ASCII_HIDDEN = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def for_reading(text: str) -> str:
    """`text` without escape sequences, format characters (zero-width spaces and joiners, bidirectional
    controls, a byte-order mark) and control characters other than newline, tab and carriage return."""
    if text.isascii() and not _ASCII_HIDDEN.search(text):  # most replies: nothing hidden, nothing copied
        return text
    text = _ESCAPES.sub("", text)
    return "".join(c for c in text if c in _KEPT or unicodedata.category(c) not in ("Cf", "Cc"))


_TERMINAL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


def for_terminal(text: str) -> str:
    """`text` safe to print: escape, control and bidirectional characters shown as `\\xNN`/`\\uNNNN` (a log
    line or an error line that quotes a provider's body, a sample id or a task name)."""
    return _TERMINAL.sub(lambda m: m[0].encode("unicode_escape").decode("ascii"), text)


_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: object) -> object:
    """A value for a CSV cell a spreadsheet opens: text that starts like a formula (`=HYPERLINK(...)`, `+`, `-`,
    `@`) gets a leading apostrophe, so it is shown, never evaluated; numbers stay numbers."""
    if isinstance(value, str) and value.startswith(_FORMULA):
        return "'" + value
    return value


def md_cell(value: object) -> str:
    """Text for one Markdown table cell: `|` escaped, HTML markup and line breaks neutralised."""
    text = "" if value is None else str(value)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return " ".join(for_terminal(text).split()).replace("|", "\\|")
