"""The run aggregates compact records (runner/run/compact.py): the same metrics, intervals and judge statistics as
the full records give, and the full records still there, read from the samples file, for whoever needs them."""

from __future__ import annotations

from conftest import EVE_SAMPLE, fake_model_overrides, read_jsonl, run_in_process
from test_pipeline import scripted_reply

from runner.metrics.intervals import wilson
from runner.metrics.uncertainty import wilson95, with_uncertainty
from runner.run.compact import PreviousRecords, TaskRecords, compact
from runner.run.rescore import load_run
from runner.run.store import SampleStore, key_of, latest


def test_compact_records_give_the_metrics_of_the_full_ones(fake_llm, tmp_path):
    fake_llm.default = scripted_reply
    run_dir = tmp_path / "run"
    run_in_process(fake_model_overrides(fake_llm.base_url, judges=3) + [
        "benchmark=eve", f"benchmark.data_dir={EVE_SAMPLE}", "tracker=none", "progress=false",
        "cache.enabled=false", f"hydra.run.dir={run_dir}", "epochs=2", "stats.n_boot=200"], run_dir)
    _, tasks, full = load_run(run_dir)
    store = SampleStore(run_dir)
    assert len(tasks) == 6
    for task in tasks:
        kept = TaskRecords(store.path(task.name))
        for offset, record in store.scan(task.name):
            kept.add(record, offset)
        small, stored = kept.finish()
        whole = full[task.name]
        assert [key_of(r) for r in small] == [key_of(r) for r in whole]
        expected = with_uncertainty(task, whole, task.aggregate(whole), n_boot=200, seed=0, epochs=2)
        got = with_uncertainty(task, small, task.aggregate(small), n_boot=200, seed=0, epochs=2)
        assert got.to_dict() == expected.to_dict(), task.name
        # The full records are still there, in the same order, read from the file when asked for.
        assert len(stored) == len(whole) and list(stored) == whole
        assert stored[0] == whole[0] and stored[-1] == whole[-1] and stored[1:3] == whole[1:3]


def test_compact_keeps_what_aggregations_read_and_drops_the_bulk():
    record = {"id": 7, "task": "t", "prompt": [{"role": "user", "content": "q" * 500}], "reference": "B",
              "response": "Answer: B", "answer": "B", "scores": {"accuracy": 1.0}, "status": "ok",
              "error": None, "model": "m", "usage": {"model": {"prompt_tokens": 9}}, "epoch": 1,
              "fingerprint": "data=abc", "extra": {"missing_prediction": False, "trajectory": [1, 2],
                                                   "note": "x" * 500},
              "judgements": [{"judge": "j", "status": "ok", "verdict": "correct", "score": 1.0, "raw": "r" * 500,
                              "explanation": "e", "calls": [{"shown_first": "a", "verdict": "a", "raw": "r"}]}]}
    small = compact(record)
    assert small == {"id": 7, "reference": "B", "response": "Answer: B", "answer": "B",
                     "scores": {"accuracy": 1.0}, "status": "ok", "epoch": 1, "extra": {"missing_prediction": False},
                     "judgements": [{"judge": "j", "status": "ok", "verdict": "correct", "score": 1.0,
                                     "calls": [{"shown_first": "a", "verdict": "a"}]}]}


def test_equal_small_values_are_shared_but_a_bool_is_not_a_float(tmp_path):
    kept = TaskRecords(tmp_path / "t.jsonl")
    for i, value in enumerate([1.0, 1.0, True, 1]):
        kept.add({"id": i, "status": "ok", "scores": {"accuracy": value}}, i)
    small, _ = kept.finish()
    assert small[0]["scores"] is small[1]["scores"]
    assert [type(r["scores"]["accuracy"]) for r in small] == [float, float, bool, int]
    assert small[0]["status"] is small[3]["status"]


def test_previous_records_are_read_from_the_file_when_looked_up(tmp_path):
    store = SampleStore(tmp_path)
    offsets = {str(i): store.append({"id": i, "task": "t", "status": "invalid", "response": f"r{i}"})
               for i in range(3)}
    store.close()
    previous = PreviousRecords(store.path("t"), {k: offsets[k] for k in ("0", "2")})
    assert previous.get("2") == read_jsonl(store.path("t"))[2] and previous.get("1") is None
    assert sorted(previous) == ["0", "2"] and len(previous) == 2
    assert latest(read_jsonl(store.path("t")))[0]["response"] == "r0"


def test_the_runs_wilson_interval_is_scipys_to_the_last_bit():
    for n in (1, 2, 3, 7, 10, 13, 100, 999, 1000, 12345, 100_000):
        for k in sorted({0, 1, n // 3, n // 2, n - 1, n} - {-1}):
            assert wilson95(k, n) == wilson(k, n), (k, n)
