"""Samples built again from their rows when asked: the same rows and records, no sample held while waiting,
and a data file changed under a running run stops it instead of scoring other rows than were planned."""

from __future__ import annotations

import gc
import json
from pathlib import Path

import pytest
from conftest import compose, read_jsonl, run_in_process, run_overrides, write_jsonl

from runner.errors import DataError
from runner.run.build import build
from runner.run.pipeline import plan
from runner.run.store import SampleStore
from runner.tasks.base import Context
from runner.tasks.lazy_samples import LazySamples
from runner.tasks.sources import BAD_ROW, JsonlRows
from runner.types import Sample


def _mcq_rows(n: int) -> list[dict[str, object]]:
    return [{"Question": f"Question {i}: which one?", "Choices": [f"c{i}-{k}" for k in range(4)],
             "Answer": "ABCD"[i % 4]} for i in range(n)]


def _overrides(base_url: str, data_dir: Path, run_dir: Path, *extra: str) -> list[str]:
    return run_overrides(base_url, run_dir, "benchmark.num_fewshot=0", *extra, data_dir=data_dir,
                         tasks=["mcqa_single_answer"])


def test_rows_read_again_by_place_are_the_rows_read_in_order(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"a": 1}\r\n\n[1, 2]\n{broken\n  \n{"a": "\xc3\xa9t\xc3\xa9"}\n\xff\xfe\n'
                     b'{"b": [1, {"c": null}]}')
    rows = JsonlRows(path)
    in_order = list(rows)
    assert [r.get("a", r.get("b")) for r in in_order if BAD_ROW not in r] == [1, "été", [1, {"c": None}]]
    assert "expected a JSON object" in in_order[1][BAD_ROW] and ":4: not valid JSON" in in_order[2][BAD_ROW]
    assert ":7: not valid JSON (not UTF-8" in in_order[4][BAD_ROW]  # one bad line, not a crash of the whole file
    assert len(in_order) == 6
    assert [rows.row(i) for i in range(len(in_order)) if BAD_ROW not in in_order[i]] == \
        [r for r in in_order if BAD_ROW not in r]


def test_a_file_removed_after_it_was_read_is_one_data_error(tmp_path):
    path = tmp_path / "t.jsonl"
    write_jsonl(path, [{"a": 1}])
    rows = JsonlRows(path)
    list(rows)
    path.unlink()
    with pytest.raises(DataError, match=r"t\.jsonl: cannot be read again for a sample after planning"):
        rows.row(0)


@pytest.mark.parametrize("change", ["edit", "replace"])
def test_a_file_changed_after_it_was_read_is_refused(tmp_path, change):
    path = tmp_path / "t.jsonl"
    write_jsonl(path, [{"a": 1}, {"a": 2}])
    rows = JsonlRows(path)
    list(rows)
    if change == "edit":  # same size, other content
        path.write_text(path.read_text().replace("2", "3"))
    else:
        other = tmp_path / "other.jsonl"
        write_jsonl(other, [{"a": 1}, {"a": 2}])
        other.replace(path)
    with pytest.raises(DataError, match=r"t\.jsonl: the file changed while the run was asking its samples"):
        rows.row(1)


def test_a_planned_run_holds_no_sample_and_its_jobs_build_the_planned_ones(fake_llm, tmp_path):
    rows = _mcq_rows(40)
    write_jsonl(tmp_path / "data" / "mcqa_single_answer.jsonl", rows)
    run_dir = tmp_path / "run"
    cfg = compose(_overrides(fake_llm.base_url, tmp_path / "data", run_dir))
    built = build(cfg, run_dir)
    (task,) = built.tasks
    eager = built.benchmark.load(task).samples
    assert isinstance(eager, list) and len(eager) == 40
    planned = plan(built, SampleStore(run_dir), Context(model=built.model, panel=built.panel, run_dir=run_dir))
    gc.collect()
    assert sum(isinstance(o, Sample) for o in gc.get_objects()) == len(eager)  # only the list loaded above
    assert isinstance(planned.loaded[task.name].samples, LazySamples)
    assert all(job.held is None for job in planned.jobs)
    assert [job.sample for job in planned.jobs] == eager


def test_a_run_built_from_rows_read_again_scores_what_the_file_says(fake_llm, tmp_path):
    rows = _mcq_rows(30)
    write_jsonl(tmp_path / "data" / "mcqa_single_answer.jsonl", rows)
    fake_llm.default = "B"
    results = run_in_process(_overrides(fake_llm.base_url, tmp_path / "data", tmp_path / "run"), tmp_path / "run")
    block = results["tasks"]["mcqa_single_answer"]
    assert block["n"] == 30
    assert block["metrics"]["accuracy"] == pytest.approx(sum(r["Answer"] == "B" for r in rows) / 30)
    records = read_jsonl(tmp_path / "run" / "samples" / "mcqa_single_answer.jsonl")
    assert sorted(r["id"] for r in records) == list(range(30))
    for r in records:  # each record is its own row's, read again when its job started
        assert r["reference"] == rows[r["id"]]["Answer"]
        assert f"Question {r['id']}: which one?" in json.dumps(r["prompt"])


def test_editing_the_data_file_while_the_run_asks_stops_it_and_keeps_what_was_done(fake_llm, tmp_path):
    rows = _mcq_rows(60)
    data = tmp_path / "data" / "mcqa_single_answer.jsonl"
    write_jsonl(data, rows)
    edited: list[bool] = []

    def reply(body: dict[str, object]) -> str:
        if not edited:  # the first request: someone rewrites the file the run planned
            edited.append(True)
            write_jsonl(data, [{**r, "Answer": "D"} for r in rows])
        return "A"

    fake_llm.default = reply
    run_dir = tmp_path / "run"
    with pytest.raises(DataError, match=r"mcqa_single_answer\.jsonl: the file changed while the run"):
        run_in_process(_overrides(fake_llm.base_url, tmp_path / "data", run_dir, "model.concurrency=1"), run_dir)
    done = read_jsonl(run_dir / "samples" / "mcqa_single_answer.jsonl")
    assert 1 <= len(done) < 60 and all(r["status"] == "ok" for r in done)
    assert not (run_dir / "results.json").exists()
