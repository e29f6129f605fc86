"""`epochs=N`: every sample asked N times as independent requests; records carry `epoch`; metrics over all
epochs with intervals clustered by sample; per-epoch values and their spread; resume per (sample, epoch)."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
from conftest import fake_model_overrides, read_jsonl, run_in_process
from fake_llm import FakeLLM

from runner.errors import ConfigError

ROWS = [{"Question": f"Question {i}?", "Choices": ["a", "b", "c", "d"], "Answer": "B"} for i in range(6)]


def by_seed(body: dict) -> str:
    """Right in epochs 0 and 2, wrong in epoch 1 for questions 0-2: seed = run seed (5) + epoch."""
    question = body["messages"][-1]["content"]
    wrong = body.get("seed") == 6 and any(f"Question {i}?" in question for i in range(3))
    return "Answer: C" if wrong else "Answer: B"


def run(srv: FakeLLM, tmp_path: Path, *extra: str) -> tuple[dict, Path]:
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    (data / "mcqa_single_answer.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    run_dir = tmp_path / "run"
    results = run_in_process(fake_model_overrides(srv.base_url) + [
        "benchmark=eve", f"benchmark.data_dir={data}", "benchmark.tasks=[mcqa_single_answer]",
        "benchmark.num_fewshot=0", "tracker=none", "progress=false", f"cache.dir={tmp_path / 'cache'}",
        f"hydra.run.dir={run_dir}", "seed=5", *extra], run_dir)
    return results, run_dir


def test_each_epoch_is_its_own_request_and_record(tmp_path: Path) -> None:
    with FakeLLM(default=by_seed) as srv:
        results, run_dir = run(srv, tmp_path, "epochs=3")
        seeds = sorted(b["seed"] for b in srv.requests)
    assert seeds == [5] * 6 + [6] * 6 + [7] * 6  # 6 samples x 3 epochs, none answered from the cache
    records = read_jsonl(run_dir / "samples" / "mcqa_single_answer.jsonl")
    expected = sorted((str(i), e) for i in range(6) for e in range(3))
    assert sorted((str(r["id"]), r["epoch"]) for r in records) == expected
    task = results["tasks"]["mcqa_single_answer"]
    # 18 records, 3 wrong (questions 0-2 in epoch 1): accuracy 15/18; by epoch 1, 0.5, 1.
    assert task["epochs"] == 3 and task["n"] == 18
    assert task["metrics"]["accuracy"] == pytest.approx(15 / 18)
    assert task["by_epoch"]["accuracy"] == [1.0, 0.5, 1.0]
    assert task["epoch_sd"]["accuracy"] == pytest.approx(statistics.stdev([1.0, 0.5, 1.0]))
    # Clustered by sample: resampling the 6 samples, m of them perfect (m ~ Binomial(6, 1/2)), gives a mean of
    # (12 + m) / 18; its 2.5 % and 97.5 % points are m = 1 and m = 5 (P(m <= 0) = 1.6 %, P(m <= 5) = 98.4 %).
    assert task["ci"]["accuracy"] == pytest.approx([13 / 18, 17 / 18])
    # The standard error of the six per-sample means (2/3, 2/3, 2/3, 1, 1, 1), not of 18 independent records.
    assert task["stderr"]["accuracy"] == pytest.approx(statistics.stdev([2 / 3] * 3 + [1.0] * 3) / 6 ** 0.5)


def test_a_resume_asks_only_the_missing_epochs(tmp_path: Path) -> None:
    with FakeLLM(default=by_seed) as srv:
        one, run_dir = run(srv, tmp_path)
        assert all(r["epoch"] == 0 for r in read_jsonl(run_dir / "samples" / "mcqa_single_answer.jsonl"))
        assert "seed" not in srv.requests[0]  # one epoch: requests as before
        srv.reset()
        two, _ = run(srv, tmp_path, "epochs=2", "cache.enabled=false")
        assert sorted(b["seed"] for b in srv.requests) == [6] * 6  # epoch 0 kept, epoch 1 asked
    assert one["tasks"]["mcqa_single_answer"]["epochs"] == 1
    assert two["tasks"]["mcqa_single_answer"]["by_epoch"]["accuracy"] == [1.0, 0.5]


def test_epochs_below_one_are_refused(tmp_path: Path) -> None:
    with FakeLLM(default="Answer: B") as srv, pytest.raises(ConfigError, match="epochs=0: must be"):
        run(srv, tmp_path, "epochs=0")
