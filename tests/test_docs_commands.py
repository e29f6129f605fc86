"""Every command README.md and docs/*.md show that runs the runner is run here as written (issue 35, point 5),
from the fenced bash blocks, in a subprocess, as a reader would paste it.

What changes, and only that: the providers answer from the fake OpenAI-compatible server (OPENAI_API_BASE
and the providers' key variables in the environment; an entry of another provider, or the embedded model, is
re-pointed at the server by overrides appended after the doc's own, its name kept), the doc's placeholder
paths become real ones (a run dir and a sweep made here, the fixtures' own benchmark for
/home/me/evals), and `benchmark.limit=2 tracker=none` with a temporary run dir, cache and, for EVE without a
data_dir, the bundled sample are appended so each command takes a few seconds. Each must exit 0 and leave the
files its doc says it writes. SKIPPED lists the commands that need what a test machine has not, with why.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import EVE_SAMPLE, JUDGE_CORRECT, ROOT, TESTS, compose, read_jsonl
from fake_llm import FakeLLM

from runner.__main__ import SUBCOMMANDS

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BENCH = TESTS / "fixtures" / "yaml_bench"

SKIPPED = {
    "launcher=ray launcher.address=ray://head:10001": "a Ray cluster at ray://head:10001 (tests/test_launcher_ray.py "
                                                      "runs sweeps on a real local one)",
    "launcher=slurm hydra.launcher.partition=gpu": "a Slurm cluster with a gpu partition",
    "model=claude-haiku-4-5 'params.thinking=": "Anthropic's API for its `thinking` param: an entry re-pointed at "
                                                "the fake server goes as openai/, which takes none (tests/"
                                                "test_reasoning.py runs Anthropic thinking against the fake server's "
                                                "Messages endpoint)",
    "judges=one,three": "the panel is swept, and `three`'s claude-haiku-4-5 speaks Anthropic's API (the internet): "
                        "the fake server speaks only OpenAI's, and an entry can be re-pointed only in a panel every "
                        "job of the sweep shares",
}
"""Commands (by a part of their text) that are not run, and what they need."""


@dataclass(frozen=True)
class Command:
    """One command of a doc: where it is and its text (continuation lines joined, comment dropped)."""

    doc: str
    line: int
    text: str

    def __str__(self) -> str:
        return f"{self.doc}:{self.line}: {self.text}"


def _blocks(path: Path) -> Iterator[tuple[int, list[tuple[int, str]]]]:
    """The fenced bash blocks of a Markdown file: (line of the fence, [(line, text)])."""
    lang: str | None = None
    start, lines = 0, []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip().startswith("```"):
            if lang is None:
                lang, start, lines = line.strip()[3:].strip(), number, []
            else:
                if lang in ("bash", "sh", "shell", "console"):
                    yield start, lines
                lang = None
        elif lang is not None:
            lines.append((number, line))


def runs_the_runner(argv: list[str]) -> bool:
    """`runner ...`, `.venv/bin/runner ...`, `python -m runner[.x] ...`, after any VAR=value."""
    words = [w for w in argv if not re.match(r"^[A-Z_]+=", w)]
    if not words:
        return False
    if Path(words[0]).name == "runner":
        return True
    return Path(words[0]).name.startswith("python") and words[1:2] == ["-m"] and \
        re.fullmatch(r"runner(\.[\w.]+)?", words[2] if len(words) > 2 else "") is not None


def doc_commands() -> list[Command]:
    """Every command of the docs' bash blocks that runs the runner (a line joined with `&&` counts by each
    part: `bash scripts/install.sh && .venv/bin/python -m runner` is the runner's default run)."""
    found = []
    for path in DOCS:
        for _, lines in _blocks(path):
            joined: list[tuple[int, str]] = []
            for number, text in lines:
                if joined and joined[-1][1].endswith("\\"):
                    joined[-1] = (joined[-1][0], joined[-1][1][:-1] + " " + text.strip())
                else:
                    joined.append((number, text.strip()))
            for number, text in joined:
                words = shlex.split(text, comments=True)
                if not words:
                    continue
                # A part after && that runs the runner is a command; `cd DIR && runner ...` keeps its cd.
                parts = " ".join(shlex.quote(w) for w in words).split(" '&&' ") if "&&" in words else [text]
                keep = [p for p in parts if runs_the_runner(shlex.split(p, comments=True))]
                if any(p.startswith("cd ") for p in parts) and keep:
                    keep = [" && ".join(parts)]
                found += [Command(str(path.relative_to(ROOT)), number, p) for p in keep]
    return found


COMMANDS = doc_commands()


# --- what a command needs: a server, a run dir, a sweep, files ---------------------------------------------

def _reply(body: dict[str, Any]) -> str:
    text = json.dumps(body.get("messages"))
    return JUDGE_CORRECT if "judgement" in text else "B"


@pytest.fixture(scope="module")
def server() -> Iterator[FakeLLM]:
    with FakeLLM(default=_reply) as srv:
        yield srv


@pytest.fixture(scope="module")
def env(server: FakeLLM, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Every provider's key set to a test value and OpenAI's base at the fake server; W&B, the cache and HOME
    inside a temporary folder."""
    home = tmp_path_factory.mktemp("home")
    out = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_API_BASE", "_BASE_URL"))}
    out.update({"OPENAI_API_BASE": str(server.base_url), "OPENAI_API_KEY": "test-key",
                "ANTHROPIC_API_KEY": "test-key", "MISTRAL_API_KEY": "test-key", "GEMINI_API_KEY": "test-key",
                "HOME": str(home), "RUNNER_CACHE_DIR": str(home / "cache"), "WANDB_MODE": "offline",
                "BROWSER": "true", "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"})
    return out


def _cli(argv: list[str], env: dict[str, str], cwd: Path = ROOT,
         timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def places(server: FakeLLM, env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The real paths of the docs' placeholders: a finished EVE run, a finished sweep of two models, the
    fixtures' own benchmark (for /home/me/evals), a prices file, a rubric and audit labels."""
    root = tmp_path_factory.mktemp("places")
    run_dir, sweep = root / "run", root / "sweep"
    base = ["benchmark=eve", f"benchmark.data_dir={EVE_SAMPLE}", "benchmark.limit=2", "tracker=none",
            "judges=one", "model.model=openai/fake-model", f"model.api_base={server.base_url}", "model.server=null"]
    made = _cli([sys.executable, "-m", "runner", *base, f"hydra.run.dir={run_dir}"], env)
    assert made.returncode == 0, made.stderr[-2000:]
    made = _cli([sys.executable, "-m", "runner", "-m", *base, "model=gpt-4o-mini,mistral-large",
                 f"hydra.sweep.dir={sweep}"], env)
    assert made.returncode == 0, made.stderr[-2000:]
    evals = root / "evals"
    shutil.copytree(BENCH, evals)
    shutil.copytree(TESTS / "fixtures" / "user_pkg", evals / "py")
    prices = root / "prices.json"
    prices.write_text(json.dumps({"new-model": {"input_cost_per_token": 2e-06, "output_cost_per_token": 8e-06,
                                                "litellm_provider": "openai", "mode": "chat"}}))
    rubric = root / "mine.j2"
    shutil.copy(ROOT / "runner" / "benchmarks" / "eve" / "prompts" / "judge_fact_check.j2", rubric)
    labels = root / "labels.jsonl"
    labels.write_text("".join(json.dumps({"id": r["id"], "task": "open_ended", "label": "correct"}) + "\n"
                              for r in read_jsonl(run_dir / "samples" / "open_ended.jsonl")))
    jobs = sorted(p for p in sweep.iterdir() if (p / "results.json").exists())
    return {"run": run_dir, "sweep": sweep, "job0": jobs[0], "job1": jobs[1], "evals": evals, "prices": prices,
            "rubric": rubric, "labels": labels, "anywhere": root / "anywhere"}


def _placed(word: str, places: dict[str, Path], url: str, fresh: Path) -> str:
    """A word of the doc's command with its placeholders made real."""
    key, _, value = word.partition("=")
    if key in ("hydra.run.dir", "hydra.sweep.dir"):  # where the command writes: a folder of its own
        return f"{key}={fresh}"
    swaps = [("multirun/eve-compare/0_m1", places["job0"]), ("multirun/eve-compare/1_m2", places["job1"]),
             ("multirun/eve-compare", places["sweep"]), ("outputs/2026-07-01/10-00-00", places["run"]),
             ("outputs/2026-01-05/10-00-00", places["run"]), ("/home/me/evals", places["evals"]),
             ("/data/eve", EVE_SAMPLE), ("/path/prices.json", places["prices"]), ("/abs/mine.j2", places["rubric"]),
             ("http://10.0.0.5:8000/v1", url)]
    for doc, real in swaps:
        word = word.replace(doc, str(real))
    exact = {"DIR": places["run"], "SRC_RUN_DIR": places["run"], "SWEEP_DIR": places["sweep"],
             "F": places["labels"], "~/anywhere": places["anywhere"]}
    return str(exact.get(word, word))


def _jobs(overrides: list[str]) -> list[list[str]]:
    """The overrides of each job of a sweep (one job without -m)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parsed = OverridesParser.create().parse_overrides(overrides)
    choices = [[f"{o.get_key_element()}={v}" for v in o.sweep_string_iterator()] if o.is_sweep_override()
               else [o.input_line] for o in parsed]
    return [list(job) for job in itertools.product(*choices)]


def _repoint(job: list[str], url: str) -> dict[str, str]:
    """Overrides that send a job's endpoints to the fake server: an embedded one loses its server, one of a
    provider other than OpenAI's becomes openai/<model> at the server's address (its name kept); OpenAI's follow
    OPENAI_API_BASE."""
    cfg = compose(job)
    entries = [("model", cfg.get("model"))] + [(f"judges.panel.{i}", e) for i, e in
                                                enumerate((cfg.get("judges") or {}).get("panel") or [])]
    out: dict[str, str] = {}
    for key, entry in entries:
        if not entry:
            continue
        if entry.get("server"):
            out.update({f"{key}.server": "null", f"{key}.api_base": url})
        elif not str(entry.get("model")).startswith("openai/") and not entry.get("api_base"):
            out.update({f"{key}.model": f"openai/{entry['name']}", f"{key}.api_base": url})
    if cfg.benchmark.get("name") == "eve" and "data_dir" in cfg.benchmark and not cfg.benchmark.data_dir:
        out["benchmark.data_dir"] = str(EVE_SAMPLE)  # EVE from the hub otherwise
    return out


def appended(overrides: list[str], url: str, sweep: bool) -> list[str]:
    """What goes after a run's own overrides: re-pointed endpoints (the same for every job of a sweep, else the
    command cannot run here) and a small, quiet run."""
    wanted = [_repoint(job, url) for job in _jobs(overrides)] if sweep else [_repoint(overrides, url)]
    keys = set().union(*wanted)
    for key in keys:  # a sweep over models: every job's model re-pointed alike, their names kept
        if len({w.get(key) for w in wanted}) > 1:
            for want in wanted:
                want[key] = "openai/fake-model" if key.endswith(".model") else url if key.endswith(
                    ".api_base") else "null"
    assert all(w == wanted[0] for w in wanted), f"the jobs need different endpoints re-pointed: {wanted}"
    return [f"{k}={v}" for k, v in sorted(wanted[0].items())] + ["benchmark.limit=2", "tracker=none"]


# --- the test ----------------------------------------------------------------------------------------------

def test_the_docs_show_runner_commands_and_every_skip_names_one():
    assert len(COMMANDS) >= 20, [str(c) for c in COMMANDS]
    for part in SKIPPED:
        assert any(part in c.text for c in COMMANDS), f"SKIPPED names no command any more: {part}"


@pytest.mark.parametrize("command", COMMANDS, ids=[f"{c.doc}:{c.line}" for c in COMMANDS])
def test_a_doc_command_runs_as_written(command: Command, server: FakeLLM, env: dict[str, str],
                                       places: dict[str, Path], tmp_path: Path):
    skip = next((why for part, why in SKIPPED.items() if part in command.text), None)
    if skip:
        pytest.skip(f"needs {skip}")
    text, cwd = command.text, ROOT
    if text.startswith("cd "):
        where, _, text = text.partition(" && ")
        cwd = Path(_placed(shlex.split(where)[1], places, str(server.base_url), tmp_path))
        cwd.mkdir(parents=True, exist_ok=True)
    words = shlex.split(text, comments=True)
    assert "|" not in words and ";" not in words, "one command per line: a reader pastes it as it is"
    variables = dict(w.split("=", 1) for w in itertools.takewhile(lambda w: re.match(r"^[A-Z_]+=", w), words))
    words = [_placed(w, places, str(server.base_url), tmp_path / "out") for w in words[len(variables):]]
    variables = {k: _placed(v, places, str(server.base_url), tmp_path) for k, v in variables.items()}
    exe = Path(sys.executable)
    argv = [str(exe.parent / "runner")] + words[1:] if Path(words[0]).name == "runner" else [str(exe)] + words[1:]
    module = argv[2] if argv[1:2] == ["-m"] else "runner"
    args = argv[3:] if argv[1:2] == ["-m"] else argv[1:]
    subcommand = module.split(".")[1] if module != "runner" else \
        args[0] if args and args[0] in SUBCOMMANDS else None
    rest = args[1:] if module == "runner" and subcommand else args  # what follows the subcommand
    flags = [a for a in args if a.startswith("-")]
    out = tmp_path / "out"
    if subcommand is None and not (set(flags) & {"--help", "-h", "--cfg", "--version"}):
        sweep = "-m" in args or "--multirun" in args
        overrides = [a for a in args if not a.startswith("-")]
        argv += appended(overrides, str(server.base_url), sweep)
        argv += [f"hydra.sweep.dir={out}" if sweep else f"hydra.run.dir={out}"] \
            if not any(a.startswith(("hydra.run.dir=", "hydra.sweep.dir=")) for a in overrides) else []
    elif subcommand == "rejudge":  # the source run's own overrides, then the doc's: its new panel re-pointed
        argv += [o for o in appended(rest[1:], str(server.base_url), False) if o.startswith("judges.")]
        argv += [f"hydra.run.dir={out}"]
    proc = _cli(argv, {**env, **variables}, cwd=cwd)
    assert proc.returncode == 0, f"{command}\n{' '.join(argv)}\n{proc.stderr[-3000:]}"
    assert "Traceback" not in proc.stderr
    _check_outputs(command, args, rest, subcommand, flags, out, proc.stdout)


def _check_outputs(command: Command, args: list[str], rest: list[str], subcommand: str | None, flags: list[str],
                   out: Path, stdout: str) -> None:
    """The files (or lines) the docs say the command leaves."""
    dirs = [Path(a) for a in rest if not a.startswith("-") and "=" not in a]
    if subcommand == "view":
        if len(dirs) == 2:
            assert (dirs[0] / "view" / f"diff-{dirs[1].name}.html").is_file()
        else:
            assert (dirs[0] / "view" / "index.html").is_file(), command
    elif subcommand in ("rescore", "status"):
        assert stdout.strip(), command
    elif subcommand == "audit":
        assert (dirs[0] / "audit.json").is_file()
    elif subcommand == "report":
        assert (dirs[0] / "report" / "comparison.csv").is_file()
    elif subcommand == "rejudge":
        assert (out / "results.json").is_file() and (out / "samples").is_dir()
    elif "--help" in flags or "-h" in flags:
        assert "usage" in stdout.lower() or "runner" in stdout, command
    elif "--cfg" in flags:
        assert "benchmark:" in stdout and "model:" in stdout, command
    elif "-m" in args:
        assert (out / "report" / "comparison.csv").is_file(), command
        assert len(list(out.glob("*/results.json"))) >= 2
    else:
        assert (out / "results.json").is_file() and (out / "samples").is_dir(), command
