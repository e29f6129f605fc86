"""`python -m runner.report` (also `runner report`): a sweep's comparison and paired tests,
written again (for a sweep dir or any folder of run dirs).

The command line of runner/outputs/sweep_report.py, kept here so that `python -m runner.report` works.
"""

import sys

from runner.outputs.sweep_report import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
