"""`python -m runner.view DIR [OTHER] [--open]`: write the viewer page and print its path."""

from __future__ import annotations

import argparse
import sys
import webbrowser
from pathlib import Path

from runner.errors import RunnerError
from runner.view.pages import write_diff, write_view


def main(argv: list[str] | None = None, prog: str = "python -m runner.view") -> int:
    """Write the page (a run's, a sweep's, or two runs compared), print its path; exit 2 on a bad folder."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Write a self-contained HTML page to read a run's samples, a sweep's comparison, or the "
                    "samples whose score differs between two runs.")
    parser.add_argument("dir", type=Path, help="a run dir (results.json, samples/) or a sweep dir")
    parser.add_argument("other", type=Path, nargs="?",
                        help="a second run dir: compare DIR with it (writes DIR/view/diff-<OTHER>.html)")
    parser.add_argument("--open", action="store_true", help="open the page in the default browser")
    args = parser.parse_args(argv)
    try:
        path = write_diff(args.dir, args.other) if args.other is not None else write_view(args.dir)
    except RunnerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    print(path)
    if args.open:
        webbrowser.open(path.resolve().as_uri())
    return 0


if __name__ == "__main__":
    sys.exit(main())
