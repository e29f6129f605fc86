"""Data sources: `datasets` loading real files in the hub layout, local JSONL, and their errors."""

from __future__ import annotations

import json

import pytest
from conftest import EVE_SAMPLE, fake_model_overrides, read_jsonl, run_in_process, write_jsonl
from test_pipeline import scripted_reply
from test_wandb_tracker import read_offline_run

from runner.errors import DataError
from runner.tasks.sources import load_dataset_rows, load_rows


def _hub_layout(tmp_path, task: str):
    """A dataset folder as a hub repo holds it (data/train-*.jsonl), loaded by `datasets` itself."""
    rows = [json.loads(line) for line in (EVE_SAMPLE / f"{task}.jsonl").read_text().splitlines()]
    write_jsonl(tmp_path / "hub" / task / "data" / "train-00000-of-00001.jsonl", rows)
    return tmp_path / "hub" / task, rows


def test_datasets_loads_a_dataset_folder_in_the_hub_layout(tmp_path):
    folder, rows = _hub_layout(tmp_path, "mcqa_multiple_answers")
    loaded = load_dataset_rows(str(folder), "train")
    assert loaded == rows  # nested Choices {label, text} and Answers lists survive the Arrow round trip


def test_a_task_spec_pointing_at_a_dataset_runs_through_datasets(fake_llm, tmp_path):
    folder, rows = _hub_layout(tmp_path, "mcqa_single_answer")
    fake_llm.default = scripted_reply
    results = run_in_process(fake_model_overrides(fake_llm.base_url) + [
        "benchmark=eve", "benchmark.tasks=[mcqa_single_answer]", f"benchmark.specs.mcqa_single_answer.dataset={folder}",
        "tracker=none", "cache.enabled=false", "progress=false", f"hydra.run.dir={tmp_path / 'run'}"],
        tmp_path / "run")
    scored = rows[2:]
    assert results["tasks"]["mcqa_single_answer"]["n"] == len(scored)
    assert results["tasks"]["mcqa_single_answer"]["metrics"]["accuracy"] == pytest.approx(
        sum(r["Answer"] == "B" for r in scored) / len(scored))


def test_an_unreachable_hub_dataset_is_one_clear_error():
    with pytest.raises(DataError, match=r"could not load dataset 'eve-esa/no-such-dataset'.*benchmark.data_dir"):
        load_dataset_rows("eve-esa/no-such-dataset", "train")


def test_local_jsonl_keeps_going_past_a_broken_line(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"a": 1}\n[1, 2]\n{broken\n\n{"a": 2}\n')
    rows = list(load_rows("t", None, "train", str(tmp_path)))
    assert rows[0] == {"a": 1} and rows[-1] == {"a": 2}
    assert "expected a JSON object" in rows[1]["__bad_row__"] and ":3: not valid JSON" in rows[2]["__bad_row__"]


def test_wandb_run_of_a_real_pipeline_has_metrics_and_per_judge_rationales(fake_llm, tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    fake_llm.default = scripted_reply
    run_dir = tmp_path / "run"
    run_in_process(fake_model_overrides(fake_llm.base_url, judges=2) + [
        "benchmark=eve", f"benchmark.data_dir={EVE_SAMPLE}", "benchmark.tasks=[open_ended]", "benchmark.limit=3",
        "tracker=wandb", "cache.enabled=false", "progress=false", f"hydra.run.dir={run_dir}"], run_dir)
    (sync_dir,) = run_dir.glob("wandb/offline-run-*")
    run = read_offline_run(sync_dir)
    results = json.loads((run_dir / "results.json").read_text())
    assert run["summary"]["open_ended/judge_voting"] == results["tasks"]["open_ended"]["metrics"]["judge_voting"]
    table = run["tables"]["samples/open_ended"]
    assert {"judge1/verdict", "judge1/explanation", "judge2/verdict", "response"} <= set(table["columns"])
    assert len(table["data"]) == 3
    explanations = table["data"][0][table["columns"].index("judge1/explanation")]
    assert explanations == read_jsonl(run_dir / "samples" / "open_ended.jsonl")[0]["judgements"][0]["explanation"]
    assert run["config"]["model"]["api_key"] == "***REDACTED***"
