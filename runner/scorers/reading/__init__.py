"""Reading multiple-choice replies the way a careful human grader would (docs/reading-replies.md).

Options are labelled A, B, C, ... in dataset order. Only the first ``n_choices`` letters are valid, and
only valid letters are ever returned (never raw text).
"""

from __future__ import annotations

from runner.scorers.reading.reader import Reply, extract_choice, extract_choices, read_reply

__all__ = ["Reply", "extract_choice", "extract_choices", "read_reply"]
