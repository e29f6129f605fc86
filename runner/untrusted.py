"""Untrusted text (a model's or a judge's reply) as the readers see it: without what a terminal or a renderer
would hide. A zero-width space, a right-to-left override, a NUL or an ANSI colour code inside "The answer is
A." kept a clear reply from being read. Only what is read is normalised; records keep the reply as received.
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
