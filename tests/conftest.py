"""Shared fixtures: an offline environment, the deterministic fake LLM server, and config composition."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
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

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
CONF = ROOT / "conf"
EVE_SAMPLE = ROOT / "runner" / "benchmarks" / "eve" / "sample"
sys.path.insert(0, str(TESTS))

from fake_llm import FakeLLM  # noqa: E402

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


def fake_model_overrides(base_url: str, *, judges: int = 1, concurrency: int = 8) -> list[str]:
    """Point the model under test and a panel of `judges` judges at the fake server. The preflight is off: the
    tests built on this count each sample's requests by hand; tests/test_preflight.py runs it on, with judges,
    extractors, workers and budgets."""
    panel = ",".join(
        f"{{name:judge{i + 1},model:openai/judge{i + 1},api_base:'{base_url}',api_key:test-key,"
        f"concurrency:{concurrency},max_retries:3,timeout:5}}" for i in range(judges))
    return [
        "model=openai-compatible", "model.name=fake-model", "model.model=openai/fake-model",
        f"model.api_base={base_url}", "model.api_key=test-key", f"model.concurrency={concurrency}",
        "model.timeout=5", "model.max_retries=3",
        f"judges.panel=[{panel}]", "preflight=false",  # tests take the panel as [-2]
    ]


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
        module: str = "runner") -> subprocess.CompletedProcess[str]:
    """`python -m MODULE ARGS` from the repository root, as a user runs it."""
    return subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    """The error line; the contract wants exactly one, and no traceback."""
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1, proc.stderr
    return lines[0]
