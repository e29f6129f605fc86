"""Shared fixtures: an offline environment, the deterministic fake LLM server, and config composition."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

# Nothing may leave 127.0.0.1: litellm's cost map, W&B and the hub are kept offline for every test.
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
os.environ["WANDB_MODE"] = "offline"
os.environ["WANDB_SILENT"] = "true"
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ.pop("WANDB_API_KEY", None)

# The tests that press Ctrl-C (SIGINT to a runner they started) need a runner that hears it, as one started at
# a terminal does. A suite started in the background by a script (`cmd &`, nohup, some CI agents) inherits
# SIGINT ignored, passes that on to every process it starts, and a runner started so rightly ignores it: the run
# went on to its end and exited 0. Every test process (and so every runner it starts) hears SIGINT again.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
CONF = ROOT / "conf"
EVE_SAMPLE = ROOT / "runner" / "benchmarks" / "eve" / "sample"
sys.path.insert(0, str(TESTS))

from fake_llm import FakeLLM  # noqa: E402
from inprocess import needs_process, run_forked  # noqa: E402

JUDGE_CORRECT = '{"judgement": "correct", "explanation": "matches the reference"}'
JUDGE_INCORRECT = '{"judgement": "incorrect", "explanation": "contradicts the reference"}'


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The slow tests (installs, the embedded model, Ray) first, each module's own order kept: started last,
    one of them would leave the other workers idle at the end of a run on -n 4 (docs/development.md)."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture
def fake_llm() -> Iterator[FakeLLM]:
    """A started fake server; tests set `rules`, `default`, `faults` and `latency` on it."""
    srv = FakeLLM(default="A")
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


def compose(overrides: list[str], *, with_hydra: bool = False) -> Any:
    """The config `python -m runner OVERRIDES` would run with (with_hydra: the hydra.* keys too)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from runner.config import register

    register()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return hydra_compose(config_name="config", overrides=overrides, return_hydra_config=with_hydra)


def _value(value: Any) -> str:
    """A value as a Hydra override writes it: a dict as `{key:value,...}`, a bool as true/false."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def judge_entry(name: str, url: str, *, model: str | None = None, api_key: str = "test-key", **fields: Any) -> str:
    """One judge of a `judges.panel=[...]` override at the fake server: `{name:N,model:openai/N,api_base:'URL',
    api_key:test-key,FIELD:VALUE,...}` in the order given (a dict value, such as params or pricing, nested)."""
    extra = "".join(f",{k}:{_value(v)}" for k, v in fields.items() if v is not None)
    return f"{{name:{name},model:{model or f'openai/{name}'},api_base:'{url}',api_key:{api_key}{extra}}}"


def panel_override(url: str, judges: int | Sequence[str] = 1, **fields: Any) -> str:
    """`judges.panel=[...]`: `judges` judges named judge1..N (or these names) at the fake server, each with
    `fields` (judge_entry)."""
    names = [f"judge{i + 1}" for i in range(judges)] if isinstance(judges, int) else list(judges)
    return f"judges.panel=[{','.join(judge_entry(n, url, **fields) for n in names)}]"


def model_overrides(url: str, *, name: str = "fake-model", model: str = "openai/fake-model",
                    api_key: str = "test-key", **fields: Any) -> list[str]:
    """The model under test at the fake server: `model=openai-compatible`, its name, model, api_base and api_key,
    then `model.FIELD=VALUE` for each field in the order given (None leaves one out)."""
    return ["model=openai-compatible", f"model.name={name}", f"model.model={model}", f"model.api_base={url}",
            f"model.api_key={api_key}", *(f"model.{k}={_value(v)}" for k, v in fields.items() if v is not None)]


ENTRY_FIELDS: dict[str, Any] = {"concurrency": 8, "timeout": 5, "max_retries": 3}
"""The fields every fake-server entry gets (model and judges) unless a test says otherwise."""


def run_overrides(url: str, run_dir: Path | None = None, *extra: str, judges: int | Sequence[str] = 1,
                  model_fields: dict[str, Any] | None = None, judge_fields: dict[str, Any] | None = None,
                  benchmark: str | None = "eve", data_dir: Path | str | None = EVE_SAMPLE,
                  tasks: Sequence[str] | None = None, limit: int | None = None, cache: Path | None = None,
                  preflight: bool = False, tracker: str = "none") -> list[str]:
    """The one builder of a run against the fake server the tests share: the model under test (model_overrides)
    and a panel of `judges` (panel_override; 0: judges=none), each with ENTRY_FIELDS updated by `model_fields` /
    `judge_fields` (a None value leaves that field at the config's value), the benchmark (EVE's sample folder
    unless told) with its tasks and limit, `tracker` (none), no progress bar, the cache in `cache` (None: off),
    the preflight off unless `preflight` (tests count requests by hand; tests/test_preflight.py runs it), the run
    dir, then `extra`, last so that they win."""
    out = model_overrides(url, **{**ENTRY_FIELDS, **(model_fields or {})})
    out.append(panel_override(url, judges, **{**ENTRY_FIELDS, **(judge_fields or {})}) if judges else "judges=none")
    if benchmark is not None:
        out.append(f"benchmark={benchmark}")
    if data_dir is not None:
        out.append(f"benchmark.data_dir={data_dir}")
    if tasks is not None:
        out.append(f"benchmark.tasks=[{','.join(tasks)}]")
    if limit is not None:
        out.append(f"benchmark.limit={limit}")
    out += [f"tracker={tracker}", "progress=false", f"cache.dir={cache}" if cache else "cache.enabled=false"]
    if not preflight:
        out.append("preflight=false")
    if run_dir is not None:
        out.append(f"hydra.run.dir={run_dir}")
    return [*out, *extra]


def fake_model_overrides(base_url: str, *, judges: int = 1, concurrency: int = 8) -> list[str]:
    """The model under test and a panel of `judges` judges at the fake server (run_overrides' first two), and the
    preflight off: the tests built on this count each sample's requests by hand."""
    fields = {**ENTRY_FIELDS, "concurrency": concurrency}
    return [*model_overrides(base_url, **fields), panel_override(base_url, judges, **fields),
            "preflight=false"]  # tests take the panel as [-2]


def run_in_process(overrides: list[str], run_dir: Path) -> dict[str, Any]:
    """Compose and run like the CLI does, in this process (litellm is imported once per session)."""
    from runner.run.app import run

    cfg = compose(overrides)
    return run(cfg, run_dir)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Records of a samples file."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    """Write rows as JSONL (creating the folder)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def cli(args: list[str], env: dict[str, str] | None = None, timeout: float = 180,
        module: str = "runner", fresh: bool = False) -> subprocess.CompletedProcess[str]:
    """`python -m MODULE ARGS` from the repository root, as a user runs it: in a fork of this process, with the
    imports already done (tests/inprocess.py), unless `fresh` (a test of the process itself: its start-up,
    signals, descriptors, what its children print) or the call needs one (a sweep, Hydra's flags, a variable
    read at import)."""
    if not fresh and not needs_process(args, env):
        return run_forked(args, env, timeout, ROOT, module)
    return subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    """The error line; the contract wants exactly one, and no traceback."""
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1, proc.stderr
    return lines[0]
