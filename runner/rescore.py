"""`python -m runner.rescore` (also `runner rescore`): recompute every task's metrics from the samples files alone.

The command line of runner/run/rescore.py, kept here so that `python -m runner.rescore` works.
"""

import sys

from runner.run.rescore import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
