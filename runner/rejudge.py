"""`python -m runner.rejudge SRC_RUN_DIR [overrides]`: judge the replies recorded in SRC_RUN_DIR again.

The run is composed from SRC's own overrides (`.hydra/overrides.yaml`) plus the ones given here (which
win), e.g. `judges=three` or `benchmark.specs.open_ended.scorers.judges.rubric=/path/mine.j2`. The model
under test is not asked: each sample's reply is the one its SRC record holds. The result is a complete run
dir, by default `SRC-rejudge-<date>-<time>` beside SRC (`hydra.run.dir=DIR` chooses it); resuming it works
as usual.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from runner.config.redact import MASK

# Overrides of SRC that must not carry over: where it was written, and what this command sets.
_DROPPED = ("hydra.run.dir", "hydra.sweep.dir", "hydra.sweep.subdir", "rejudge")


def _key(override: str) -> str:
    return override.partition("=")[0].lstrip("+~")


def default_run_dir(src: Path) -> Path:
    """Where a rejudge of SRC writes unless hydra.run.dir is given: beside SRC, named after it and the time."""
    return src.parent / (src.name + time.strftime("-rejudge-%Y%m%d-%H%M%S"))


def overrides_for(src: Path, given: list[str], run_dir: Path | None = None) -> list[str]:
    """SRC's overrides (minus its run dir and masked secrets, which are never needed to replay), its
    `hydra.searchpath` (a user's own config folders: Hydra keeps it apart from the others, in hydra.yaml), then
    the given ones; a key given here replaces SRC's."""
    from omegaconf import OmegaConf

    saved_file, hydra_file = src / ".hydra" / "overrides.yaml", src / ".hydra" / "hydra.yaml"
    saved = [str(o) for o in OmegaConf.load(saved_file)] if saved_file.exists() else []
    hydra = OmegaConf.select(OmegaConf.load(hydra_file), "hydra.overrides.hydra", default=None) \
        if hydra_file.exists() else None
    saved += [str(o) for o in hydra or [] if _key(str(o)) == "hydra.searchpath"]
    mine = {_key(o) for o in given}
    kept = [o for o in saved if _key(o) not in mine and _key(o) not in _DROPPED and MASK not in o]
    for secret in sorted({_key(o) for o in saved if MASK in o and _key(o) not in mine}):
        # Runs never save a key typed on the command line: what held one must be given again.
        print(f"note: {src}'s override of {secret} held a secret, which runs never save; it is left out: give "
              f"{secret}=... again if this rejudge needs it", file=sys.stderr)
    where = [] if "hydra.run.dir" in mine else [f"hydra.run.dir='{run_dir or default_run_dir(src)}'"]
    return kept + given + where + [f"rejudge='{src}'"]


def main(argv: list[str] | None = None, prog: str = "python -m runner.rejudge") -> None:
    """CLI entry point: check SRC, then run the runner with the combined overrides."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        from runner.__main__ import reader_gone

        try:
            print(__doc__.strip().replace("python -m runner.rejudge", prog, 1), flush=True)
        except BrokenPipeError:  # `--help | head`
            reader_gone()
        sys.exit(0 if args else 2)
    src = Path(args[0]).expanduser().resolve()
    if not (src / "samples").is_dir():
        print(f"error: {src} is not a run dir (it has no samples/ folder); give the hydra.run.dir of an "
              "earlier run", file=sys.stderr)
        sys.exit(2)
    if not (src / ".hydra" / "overrides.yaml").exists():
        print(f"warning: {src} has no .hydra/overrides.yaml; composing from the defaults and the overrides "
              "given here", file=sys.stderr)
    made = None if any(_key(o) == "hydra.run.dir" for o in args[1:]) else default_run_dir(src)
    if made is not None and made.exists():  # not of this rejudge's making: never removed
        made = None
    sys.argv = [sys.argv[0], *overrides_for(src, args[1:], made)]
    from runner.__main__ import main as runner_main

    try:
        runner_main()
    except SystemExit as exc:
        if exc.code not in (0, None) and made is not None:
            _forget(made)
        raise


def _forget(run_dir: Path) -> None:
    """A refused rejudge leaves no run dir of its own making behind: Hydra made it before the run was refused.
    One that asked samples keeps them (a re-run with its hydra.run.dir resumes)."""
    import shutil

    samples = run_dir / "samples"
    asked = (run_dir / "results.json").exists() or any(p.stat().st_size for p in samples.glob("*.jsonl"))
    if run_dir.is_dir() and not asked:
        shutil.rmtree(run_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
