"""A wheel of the runner works outside the clone (CONTRACT "Packaging"): conf/ ships as runner/conf.

The wheel is built from a copy of the project (an in-place build would write build/ and *.egg-info into
this checkout) with this venv's setuptools and no index, then installed without its dependencies into a
fresh venv that sees this venv's packages through a .pth line: the locked dependencies, nothing
downloaded. Every command runs from a folder that is not the clone, with the new venv's `runner`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
import yaml

import runner

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("pyproject.toml", "setup.py", "README.md", "runner", "conf")
BASE_PYTHON = getattr(sys, "_base_executable", None) or sys.executable
# The installed command must find everything by itself: no path or venv of this session leaks in.
ENV = {k: v for k, v in os.environ.items() if k not in {"VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME"}}

pytestmark = pytest.mark.slow


def run(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=cwd, env=ENV, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("wheel")
    src = work / "src"
    src.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(ROOT / name, src / name)
    # A machine's own settings (git-ignored conf/local/) must never ship, even when they are there.
    (src / "conf" / "local").mkdir(exist_ok=True)
    (src / "conf" / "local" / "default.yaml").write_text("# @package _global_\ncache:\n  dir: /mine\n")
    built = run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                 "-w", str(work / "dist"), str(src)], work)
    assert built.returncode == 0, built.stdout + built.stderr
    (found,) = (work / "dist").glob("runner-*.whl")
    return found


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel installed; its bin/ folder."""
    home = tmp_path_factory.mktemp("venv") / "venv"
    made = run([BASE_PYTHON, "-m", "venv", "--without-pip", str(home)], home.parent)
    assert made.returncode == 0, made.stderr
    site = Path(run([str(home / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                    home.parent).stdout.strip())
    # A plain path line, not `import site; site.addsitedir(...)`: this venv's own .pth files (the
    # editable install's finder among them) must not run there, or the clone's runner could answer.
    (site / "locked_dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    installed = run([sys.executable, "-m", "pip", "--python", str(home / "bin" / "python"), "install",
                     "--no-deps", "--no-index", "--no-compile", str(wheel)], home.parent)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return home / "bin"


def test_the_wheel_holds_the_config_tree_but_no_machine_settings(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {n.removeprefix("runner/") for n in names if n.startswith("runner/conf/")}
    expected = {f"conf/{p.relative_to(ROOT / 'conf')}" for p in (ROOT / "conf").rglob("*.yaml")
                if "local" not in p.relative_to(ROOT / "conf").parts}
    assert expected <= shipped
    assert "conf/config.yaml" in shipped and "conf/hydra/help/runner.yaml" in shipped
    assert not [n for n in shipped if n.startswith("conf/local")]
    assert not [n for n in names if n.startswith("conf/")], "conf/ must install inside the package"
    assert "runner/benchmarks/eve/sample/open_ended.jsonl" in names


def test_the_installed_runner_is_the_wheel_not_the_clone(venv, tmp_path):
    proc = run([str(venv / "python"), "-c",
                "import runner, runner.config.paths; print(runner.__file__); "
                "print(runner.config.paths.conf_dir())"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    module, conf = (Path(line) for line in proc.stdout.split())
    assert module.is_relative_to(venv.parent) and conf == module.parent / "conf"


def test_version_from_another_directory(venv, tmp_path):
    proc = run([str(venv / "runner"), "--version"], tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, f"runner {runner.__version__}\n", "")


def test_cfg_job_composes_from_the_installed_conf(venv, tmp_path):
    proc = run([str(venv / "runner"), "--cfg", "job", "--resolve"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    cfg = yaml.safe_load(proc.stdout)
    assert cfg["model"]["name"] == "smollm2-135m" and cfg["benchmark"]["name"] == "eve"
    assert [e["name"] for e in cfg["judges"]["panel"]] == ["smollm2-judge"]
    # ${runner.package_dir:...} points into the installed package, where the bundled sample is.
    data_dir = Path(cfg["benchmark"]["data_dir"])
    assert data_dir.is_relative_to(venv.parent) and (data_dir / "open_ended.jsonl").is_file()
    assert list(tmp_path.iterdir()) == [], "--cfg writes nothing"


def test_help_from_another_directory(venv, tmp_path):
    proc = run([str(venv / "runner"), "--help"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("runner evaluates LLMs")
    assert "judges: local, mugen, none, one, three" in proc.stdout.splitlines()


def test_a_dry_run_of_the_default_benchmark_from_another_directory(venv, tmp_path):
    run_dir = tmp_path / "run"
    proc = run([str(venv / "runner"), "dry_run=true", "tracker=none", f"hydra.run.dir={run_dir}"], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"Dry run: nothing was sent; plan written to {run_dir / 'plan.json'}" in proc.stdout.splitlines()
    plan = json.loads((run_dir / "plan.json").read_text())
    samples = sum(task["samples"] for task in plan["tasks"].values())
    # The bundled sample's six tasks, read from the installed package; one model call per sample.
    assert len(plan["tasks"]) == 6 and samples > 0
    assert plan["endpoints"]["smollm2-135m"]["requests"] == samples
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"] and os.listdir(run_dir) == ["plan.json"]


def test_an_installed_runner_names_no_git_commit_even_when_its_venv_sits_in_a_repository(venv, tmp_path):
    # A venv inside some project's git repository: `git -C site-packages/..` would answer with that
    # project's commit, which says nothing about the runner that made the run.
    repo = str(venv.parent.parent)
    subprocess.run(["git", "init", "-q", repo], check=True, capture_output=True)
    subprocess.run(["git", "-C", repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty",
                    "-m", "some project"], check=True, capture_output=True)
    try:
        proc = run([str(venv / "python"), "-c",
                    "import json, pathlib; from runner.run.app import provenance; "
                    "print(json.dumps(provenance(pathlib.Path('.'))))"], tmp_path)
    finally:
        shutil.rmtree(venv.parent.parent / ".git")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["git"] == {}
    from runner.run.app import provenance  # from the clone: the clone's commit

    assert provenance(tmp_path)["git"]["commit"]
