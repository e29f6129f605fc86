"""The multiple-choice reader's public functions, kept where other modules import them from.

The reader itself is the runner.scorers.reading package; its rules are in docs/reading-replies.md.
"""

from __future__ import annotations

from runner.scorers.reading import extract_choice, extract_choices

__all__ = ["extract_choice", "extract_choices"]
