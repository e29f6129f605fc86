"""What the commands say about themselves: `runner --help` (conf/hydra/help/runner.yaml), Hydra's own
`--hydra-help`, and the program names of the `python -m runner.*` tools."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CONF, compose

GROUPS = ("benchmark", "judges", "launcher", "model", "tracker")


def runner(args: list[str], cwd: Path, module: str = "runner", stdout: int = subprocess.PIPE
           ) -> subprocess.CompletedProcess[str]:
    """`python -m MODULE ARGS` from a folder that is not the clone, as a user in their own project runs it."""
    return subprocess.run([sys.executable, "-m", module, *args], cwd=cwd, stdout=stdout, stderr=subprocess.PIPE,
                          text=True, timeout=120)


@pytest.fixture(scope="module")
def help_text(tmp_path_factory: pytest.TempPathFactory) -> str:
    proc = runner(["--help"], tmp_path_factory.mktemp("elsewhere"))
    assert (proc.returncode, proc.stderr) == (0, ""), proc.stderr
    return proc.stdout


def section(text: str, title: str) -> list[str]:
    """The lines after the line `title`, up to the next blank line."""
    lines = text.splitlines()
    start = lines.index(title) + 1
    return lines[start:lines.index("", start)]


def jobs(command: str) -> list[list[str]]:
    """The overrides of each job a command runs: a sweep's `key=a,b` gives one job per value."""
    args = [a for a in shlex.split(command)[1:] if a != "-m"]
    fixed = [a for a in args if "," not in a]
    swept = [a.partition("=") for a in args if "," in a]
    return [fixed + [f"{key}={value}"] for key, _, values in swept for value in values.split(",")] or [fixed]


def test_help_starts_with_what_the_runner_is(help_text):
    assert help_text.startswith("runner evaluates LLMs on EVE, MUGEN, VAKRA and pairwise win-rate benchmarks.")
    assert "powered by Hydra" not in help_text


def test_help_shows_the_four_commands_users_need_most(help_text):
    commands = [line.strip().split("  ")[0] for line in section(help_text, "Commands:") if line.startswith("  ") and
                not line.startswith("   ")]
    assert commands == ["runner", "runner model=gpt-4o-mini judges=three",
                        "runner -m model=gpt-4o-mini,mistral-large judges=one"]
    # The examples name options that exist: each job they run composes.
    for command in commands[1:3]:
        for overrides in jobs(command):
            cfg = compose(overrides)
            assert cfg.model.name and cfg.judges.panel


def test_help_lists_every_subcommand_with_its_arguments(help_text):
    from runner.__main__ import SUBCOMMANDS

    listed = section(help_text, "Commands on earlier runs (each has --help; sends nothing, except rejudge, to the "
                                "judges only):")
    assert [line.split()[1] for line in listed] == list(SUBCOMMANDS)
    for line, (name, (_, usage, _)) in zip(listed, SUBCOMMANDS.items(), strict=True):
        assert line.strip().startswith(f"runner {name} {usage}")


def test_help_lists_the_config_groups_with_their_options_not_the_config(help_text):
    groups = section(help_text, "== Config groups (GROUP=OPTION) ==")
    for group in GROUPS:
        options = sorted(p.stem for p in (CONF / group).glob("*.yaml"))
        assert f"{group}: {', '.join(options)}" in groups
    assert not [line for line in groups if line.startswith("hydra")]
    # Hydra's default help dumps the composed config (140 lines): `--cfg job` is there for that.
    assert "_target_" not in help_text and "== Config ==" not in help_text
    assert len(help_text.splitlines()) < 45
    assert 'eval "$(runner -sc install=bash)"' in help_text and "runner --cfg job" in help_text


def test_hydra_help_still_shows_hydra_s_flags(tmp_path):
    proc = runner(["--hydra-help"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("Hydra (")
    assert "--cfg,-c : Show config instead of running [job|hydra|all]" in proc.stdout
    assert "hydra/help: default, runner" in proc.stdout


@pytest.mark.parametrize("module", ["runner", "runner.rejudge"])
def test_help_into_a_closed_pipe_stops_quietly(tmp_path, module):
    """`python -m MODULE --help | head -1`: the reader is gone before the help is written."""
    read, write = os.pipe()
    os.close(read)
    try:
        proc = runner(["--help"], tmp_path, module=module, stdout=write)
    finally:
        os.close(write)
    assert (proc.returncode, proc.stderr) == (141, "")


def test_a_misused_flag_is_a_command_line_error(tmp_path):
    proc = runner(["-m", "model=gpt-4o-mini,mistral-large", "--cfg", "job"], tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == ("error: command line: Only one of --run, --multirun, --cfg, --info and "
                           "--shell_completion can be specified\n")


@pytest.mark.parametrize("module", ["runner.report", "runner.rescore", "runner.view", "runner.audit"])
def test_tools_name_themselves_as_they_are_run(module, tmp_path):
    helped = runner(["--help"], tmp_path, module=module)
    assert helped.returncode == 0, helped.stderr
    assert helped.stdout.startswith(f"usage: python -m {module} [-h]")
    wrong = runner([], tmp_path, module=module)  # no folder given: argparse's own error, under the same name
    assert wrong.returncode == 2
    assert f"python -m {module}: error: the following arguments are required" in wrong.stderr


def test_rejudge_help_names_the_command(tmp_path):
    proc = runner(["--help"], tmp_path, module="runner.rejudge")
    assert proc.returncode == 0
    assert proc.stdout.startswith("`python -m runner.rejudge SRC_RUN_DIR [overrides]`")


@pytest.mark.parametrize("name", ["report", "rescore", "view", "audit", "status"])
def test_each_subcommand_has_its_own_help_under_the_one_command(name, tmp_path):
    helped = runner([name, "--help"], tmp_path)
    assert helped.returncode == 0, helped.stderr
    assert helped.stdout.startswith(f"usage: runner {name} [-h]")
    wrong = runner([name], tmp_path)
    assert wrong.returncode == 2 and f"runner {name}: error: the following arguments are required" in wrong.stderr


def test_rejudge_under_the_one_command(tmp_path):
    proc = runner(["rejudge", "--help"], tmp_path)
    assert proc.returncode == 0 and proc.stdout.startswith("`runner rejudge SRC_RUN_DIR [overrides]`")
    missing = runner(["rejudge", str(tmp_path / "nowhere")], tmp_path)
    assert missing.returncode == 2 and "is not a run dir" in missing.stderr
