"""A local viewer for runs and sweeps: one self-contained HTML page per run dir, sweep dir or pair of runs.

`python -m runner.view DIR` writes `DIR/view/index.html` (a sweep's jobs get their own pages too);
`python -m runner.view A B` writes `A/view/diff-<B>.html`. See docs/viewer.md.
"""

from __future__ import annotations

from runner.view.pages import write_diff, write_run, write_sweep, write_view

__all__ = ["write_diff", "write_run", "write_sweep", "write_view"]
