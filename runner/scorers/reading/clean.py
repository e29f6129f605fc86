"""Cleaning a reply before it is read: reasoning blocks, LaTeX and quotes hide letters from the readers."""

from __future__ import annotations

import re

_THINK = re.compile(r"<think(?:ing)?>.*?(?:</think(?:ing)?>|\Z)", re.S | re.I)
_THINK_END = re.compile(r"</think(?:ing)?>", re.I)
_LATEX_TEXT = re.compile(r"\\(?:text|textbf|textit|mathrm|mathbf|mathit)\s*\{([^{}]*)\}")
_BOXED = re.compile(r"\\(?:boxed|fbox)\s*\{((?:[^{}]|\{[^{}]*\})*)\}")
_DOLLARS = re.compile(r"\$+([^$\n]{1,40}?)\$+")
_LETTERISH = re.compile(r"\s*(?:answer:\s*)?[(\[]?[A-Za-z][)\]]?(?:\s*[,&]\s*[(\[]?[A-Za-z][)\]]?)*\s*")
_QUOTED = re.compile(r"[\"'“‘`]([A-Za-z])[\"'”’`]")
_SPACES = re.compile(r"[^\S\n]+")
_BLANK_LINES = re.compile(r"\s*\n\s*")


def unthink(text: str) -> str:
    """The reply without reasoning blocks: anything inside ``<think>...</think>`` or after an unclosed
    ``<think>``, and anything before a dangling ``</think>``."""
    return _THINK_END.split(_THINK.sub(" ", text))[-1]


def clean(text: str) -> str:
    """The reply without reasoning blocks, ``\\boxed{B}`` as "answer: B", ``$B$``, ``"B"`` and ``'B'`` as B,
    whitespace collapsed."""
    s = unthink(text)
    s = _BOXED.sub(lambda m: f" answer: {m[1]} ", _LATEX_TEXT.sub(r"\1", s))
    s = _DOLLARS.sub(lambda m: m[1] if _LETTERISH.fullmatch(m[1]) else m[0], s)
    s = _QUOTED.sub(r"\1", s)
    # One whitespace character per run, so the optional spaces inside a token cannot backtrack
    # polynomially on long runs of padding. Blank lines carry no meaning for the readers.
    return _BLANK_LINES.sub("\n", _SPACES.sub(" ", s))
