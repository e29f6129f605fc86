"""`epochs=N`: every sample asked N times as independent requests; records carry `epoch`; metrics over all
epochs with intervals clustered by sample; per-epoch values and their spread; resume per (sample, epoch)."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
from conftest import fake_model_overrides, read_jsonl, run_in_process
from fake_llm import FakeLLM
from scipy.stats import norm, t

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
    # The sample is the unit: its value is its mean over epochs (2/3 for questions 0-2, 1 for 3-5). Resampling
    # the 6 samples, m of them perfect (m ~ Binomial(6, 1/2)), gives (12 + m) / 18; the expanded percentile
    # interval at n = 6 takes the 0.3 % and 99.7 % points (scipy below), beyond P(m = 0) = P(m = 6) = 1.6 %:
    # m = 0 and m = 6. At n = 6 a bootstrap of a non-binary mean does not hold its coverage: reliable false.
    level = 1 - 2 * norm.cdf(-(6 / 5) ** 0.5 * t.ppf(0.975, 5))
    assert (1 - level) / 2 < 1 / 64
    assert task["ci"]["accuracy"] == pytest.approx([12 / 18, 18 / 18])
    assert task["reliable"] == {"accuracy": False} and task["reducer"] == "mean"
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


# --- the sample is the unit of every statistic (issue 31, point 1) ----------------------------------------------


def _judged(sid: int, epoch: int, verdicts: tuple[str, str]) -> dict:
    judgements = [{"judge": j, "status": "ok", "verdict": v, "score": float(v == "correct"), "explanation": "",
                   "raw": v} for j, v in zip(("a", "b"), verdicts, strict=True)]
    passes = [float(v == "correct") for v in verdicts]
    return {"id": sid, "epoch": epoch, "status": "ok", "answer": None, "reference": "r", "judgements": judgements,
            "scores": {"judge/a": passes[0], "judge/b": passes[1], "judge_avg": sum(passes) / 2,
                       "judge_unanimous": float(passes[0] == passes[1]),
                       "judge_vote": float(all(passes))}}


def _open_ended():
    from conftest import compose

    from runner.config import instantiate

    benchmark = instantiate(compose(["benchmark=eve", "benchmark.tasks=[open_ended]"]).benchmark, "benchmark")
    return benchmark.build_tasks()[0]


def test_identical_epochs_give_the_one_epoch_kappas_intervals_and_n() -> None:
    """Three identical epochs are one sample each: the same n, kappas and intervals as one epoch (the issue:
    n 86 -> 258 narrowed the Fleiss interval)."""
    from runner.metrics.samples import per_sample
    from runner.metrics.uncertainty import panel_stats, with_uncertainty

    rng = __import__("random").Random(3)
    verdicts = [tuple(rng.choice(["correct", "incorrect"]) for _ in range(2)) for _ in range(40)]
    one = [_judged(i, 0, v) for i, v in enumerate(verdicts)]
    three = [_judged(i, e, v) for i, v in enumerate(verdicts) for e in range(3)]
    task = _open_ended()
    single = panel_stats(one, n_boot=400, seed=1, samples=per_sample(task, one))
    triple = panel_stats(three, n_boot=400, seed=1, samples=per_sample(task, three))
    assert single is not None and triple is not None
    assert triple["n"] == single["n"] == 40
    for key in ("fleiss_kappa", "cohen_kappa"):
        assert triple[key] == pytest.approx(single[key])
    # Resampling 40 clusters of three identical items draws the same kappas as resampling the 40 items.
    assert triple["fleiss_kappa_ci"] == pytest.approx(single["fleiss_kappa_ci"])
    a = with_uncertainty(task, one, task.aggregate(one), n_boot=400, seed=1)
    b = with_uncertainty(task, three, task.aggregate(three), n_boot=400, seed=1, epochs=3)
    assert b.metrics == pytest.approx(a.metrics) and b.stderr == pytest.approx(a.stderr)
    # The interval's method follows the design, not the draw (issue 44, point 5): three epochs averaged make
    # fractions in general, so their mean gets the bootstrap of means even when these epochs happen to agree,
    # and is marked as that method is at n = 40; one epoch of 0/1 scores gets Wilson.
    from runner.metrics.intervals import bootstrap_means
    from runner.metrics.uncertainty import wilson95

    votes = [r["scores"]["judge_vote"] for r in one]
    assert a.ci["judge_voting"] == pytest.approx(list(wilson95(int(sum(votes)), len(votes))))
    (interval,) = bootstrap_means(votes, None, 400, 1, expand=True)
    assert interval is not None and b.ci["judge_voting"] == pytest.approx(list(interval))
    assert a.reliable["judge_voting"] is True and b.reliable["judge_voting"] is False


def test_pairs_use_each_samples_mean_over_its_epochs(tmp_path: Path) -> None:
    """The issue's wrong sign: pairs keyed by id kept the last epoch only. Each sample is its epochs' mean."""
    from conftest import compose

    from runner.config import instantiate
    from runner.metrics.samples import per_sample

    task = instantiate(compose(["benchmark=eve", "benchmark.tasks=[mcqa_single_answer]"]).benchmark,
                       "benchmark").build_tasks()[0]
    task.prepare([])
    records = [{"id": i, "epoch": e, "status": "ok", "answer": "A", "reference": "A",
                "scores": {"accuracy": float(e == 0 or i % 2 == 0)}} for i in range(4) for e in range(3)]
    samples = per_sample(task, records)
    assert samples.keys == ["0", "1", "2", "3"] and samples.n == 4
    assert samples.values["accuracy"] == pytest.approx([1.0, 1 / 3, 1.0, 1 / 3])
    assert samples.metrics["accuracy"] == pytest.approx(sum([1.0, 1 / 3, 1.0, 1 / 3]) / 4)
