"""Reducers: how a sample's epochs combine before its metrics (issue 31, point 4); self-consistency as YAML."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import compose, fake_model_overrides, read_jsonl, run_in_process
from fake_llm import FakeLLM

from runner.config import instantiate
from runner.errors import ConfigError
from runner.metrics.samples import check_reducer, mode_answer, mode_index, pass_at, per_sample
from runner.run.rescore import rescore

ROWS = [{"Question": f"Question {i}?", "Choices": ["a", "b", "c", "d"], "Answer": "B"} for i in range(6)]


def test_mode_is_the_majority_ties_to_the_first_reached_and_no_answer_does_not_vote() -> None:
    assert mode_answer(["C", "B", "B"]) == "B"
    assert mode_answer(["C", "B"]) == "C"  # a tie: the answer reached first
    assert mode_answer([None, None, "D", "A", "A"]) == "A"  # two no-answers outnumber nothing
    assert mode_answer([None, "D", None]) == "D"
    assert mode_answer([None, None]) is None and mode_index([]) is None
    assert mode_answer([["A", "C"], ["C"], ["A", "C"]]) == ["A", "C"]  # a set of letters is one answer
    assert mode_index(["C", "B", "B", "C"]) == 0


def test_pass_at_k_is_the_unbiased_estimate() -> None:
    assert pass_at([0.0, 0.0, 1.0], None) == 1.0 and pass_at([0.0, 0.0], None) == 0.0
    # n = 5 epochs, c = 2 passed, k = 2: 1 - C(3, 2) / C(5, 2) = 1 - 3/10.
    assert pass_at([1.0, 0.0, 1.0, 0.0, 0.0], 2) == pytest.approx(0.7)
    assert pass_at([1.0, 0.0, 0.0], 1) == pytest.approx(1 / 3)  # pass@1 is the mean


def test_a_reducer_is_one_of_the_named_and_fits_the_tasks_metrics() -> None:
    assert check_reducer("pass_at_3", "w") == "pass_at_3" and check_reducer(None, "w") is None
    with pytest.raises(ConfigError, match=r"w: reducer 'majority' is not one of mean, mode, max"):
        check_reducer("majority", "w")

    def build(task: str, reducer: str) -> None:
        cfg = compose(["benchmark=eve", f"benchmark.tasks=[{task}]", f"benchmark.specs.{task}.reducer={reducer}"])
        instantiate(cfg.benchmark, "benchmark").build_tasks()[0].prepare([])

    build("hallucination_detection", "mode")
    with pytest.raises(ConfigError, match=r"reducer: max combines scores, but BinaryPRF counts answers"):
        build("hallucination_detection", "max")
    with pytest.raises(ConfigError, match=r"reducer: mode votes on the answers a scorer reads"):
        build("open_ended", "mode")


def by_seed(body: dict) -> str:
    """Run seed 5: epochs ask with seeds 5, 6, 7. Questions 0-2 are wrong in epoch 1 only (the vote is right);
    question 3 is wrong in epochs 1 and 2 (the vote is wrong); question 4 names no option in epochs 0 and 1
    (they do not vote: its one answer, epoch 2's, is right)."""
    question, seed = body["messages"][-1]["content"], body.get("seed")
    if any(f"Question {i}?" in question for i in range(3)) and seed == 6:
        return "Answer: C"
    if "Question 3?" in question and seed in (6, 7):
        return "Answer: D"
    if "Question 4?" in question and seed in (5, 6):
        return "I do not know."
    return "Answer: B"


def run(srv: FakeLLM, tmp_path: Path, *extra: str) -> tuple[dict, Path]:
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    (data / "mcqa_single_answer.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    run_dir = tmp_path / "run"
    results = run_in_process(fake_model_overrides(srv.base_url) + [
        "benchmark=eve_self_consistency", f"benchmark.data_dir={data}", "benchmark.tasks=[mcqa_single_answer]",
        "benchmark.specs.mcqa_single_answer.num_fewshot=0", "tracker=none", "progress=false",
        f"cache.dir={tmp_path / 'cache'}", f"hydra.run.dir={run_dir}", "seed=5", *extra], run_dir)
    return results, run_dir


def test_eve_self_consistency_scores_the_majority_answer_and_keeps_every_epoch(tmp_path: Path) -> None:
    with FakeLLM(default=by_seed) as srv:
        results, run_dir = run(srv, tmp_path, "epochs=3")
        assert len(srv.requests) == 18
    task = results["tasks"]["mcqa_single_answer"]
    # Votes: questions 0-2, 4 and 5 B (right), question 3 D (wrong): 5 of 6.
    assert task["reducer"] == "mode" and task["epochs"] == 3
    assert task["metrics"]["accuracy"] == pytest.approx(5 / 6)
    # Each epoch alone: epoch 0 misses question 4 (no option), epoch 1 misses 0-4, epoch 2 misses 3.
    assert task["by_epoch"]["accuracy"] == pytest.approx([5 / 6, 1 / 6, 5 / 6])
    from scipy.stats import binomtest

    wilson = binomtest(5, 6).proportion_ci(method="wilson")  # one voted 0/1 value per sample: n = 6
    assert task["ci"]["accuracy"] == pytest.approx([wilson.low, wilson.high])
    records = read_jsonl(run_dir / "samples" / "mcqa_single_answer.jsonl")
    assert len(records) == 18 and {r["epoch"] for r in records} == {0, 1, 2}
    # Rescore reads the same numbers back from the epochs on disk.
    again = rescore(run_dir)["mcqa_single_answer"]
    for key in ("metrics", "ci", "by_epoch", "reducer", "stderr"):
        assert again[key] == task[key], key


def test_the_same_records_under_each_reducer(tmp_path: Path) -> None:
    """One set of three epochs, read by each reducer: the per-sample values by hand."""
    cfg = compose(["benchmark=eve", "benchmark.tasks=[mcqa_single_answer]"])
    task = instantiate(cfg.benchmark, "benchmark").build_tasks()[0]
    task.prepare([])
    answers = {0: ["B", "C", "B"], 1: ["C", "C", "B"], 2: ["C", None, None]}
    records = [{"id": i, "epoch": e, "status": "ok", "reference": "B", "answer": a,
                "scores": {"accuracy": float(a == "B")}} for i, epochs in answers.items() for e, a in enumerate(epochs)]
    expected = {"mean": [2 / 3, 1 / 3, 0.0], "mode": [1.0, 0.0, 0.0], "max": [1.0, 1.0, 0.0],
                "min": [0.0, 0.0, 0.0], "median": [1.0, 0.0, 0.0], "pass_at_k": [1.0, 1.0, 0.0],
                "pass_at_2": [1.0, 2 / 3, 0.0]}
    for reducer, values in expected.items():
        samples = per_sample(task, records, reducer=reducer)
        assert samples.values["accuracy"] == pytest.approx(values), reducer
        assert samples.metrics["accuracy"] == pytest.approx(sum(values) / 3), reducer


def test_mugens_self_consistency_is_the_mode_reducer() -> None:
    from runner.benchmarks.mugen.task import MugenTask

    assert MugenTask("Keyword_Spotting", self_consistency=3).reducer == "mode"
    assert MugenTask("Keyword_Spotting").reducer is None
