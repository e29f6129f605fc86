"""`python -m runner.audit` (also `runner audit`): each judge, and the panel vote, against human labels.

The command line of runner/outputs/audit.py, kept here so that `python -m runner.audit` works.
"""

import sys

from runner.outputs.audit import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
