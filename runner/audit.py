"""`python -m runner.audit RUN_DIR --labels FILE` (also `runner audit`): each judge, and the panel vote, against
human labels.

Reads a finished run's samples files (no request is sent) and a labels file, and writes `audit.json` and
`audit.md` into the run dir (runner/outputs/audit.py does the audit).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from runner.errors import ConfigError, RunnerError
from runner.outputs.audit import audit_run

__all__ = ["main"]


def main(argv: list[str] | None = None, prog: str = "python -m runner.audit") -> int:
    """CLI entry point: audit a finished run dir and print the two files' paths."""
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--labels", type=Path, required=True, help="JSONL or CSV with columns id, task, label")
    parser.add_argument("--n-boot", type=int, default=None,
                        help="bootstrap resamples for kappa's interval (default: the run's stats.n_boot)")
    args = parser.parse_args(argv)
    try:
        if args.n_boot is not None and args.n_boot < 0:
            raise ConfigError(f"--n-boot is {args.n_boot}; give 0 (no interval) or more resamples")
        from omegaconf import OmegaConf

        from runner.run.rescore import load_run

        cfg, _, records = load_run(args.run_dir)
        seed = int(OmegaConf.select(cfg, "seed", default=0) or 0)
        n_boot = args.n_boot if args.n_boot is not None else int(OmegaConf.select(cfg, "stats.n_boot",
                                                                                   default=1000))
        paths = audit_run(records, args.labels, args.run_dir, n_boot=n_boot, seed=seed)
    except (RunnerError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for path in paths:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
