"""Issue 29 (faults and hostile input change no number) and issue 31 item 6: repeated sample ids, MUGEN
records without ids, VAKRA MCP servers that crash or hang mid-replay, and `runner.rescore` reading exactly
what results.json describes. Real data files, the fake OpenAI-compatible server, real stdio MCP servers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import cli, fake_model_overrides, one_line_error, run_in_process, write_jsonl

from runner.errors import DataError

QUESTIONS = ["Which band does Sentinel-1's SAR use?", "How many MSI bands?", "Who operates Landsat 8?",
             "What does NDVI compare?", "Which satellite carries TROPOMI?"]


def mcq_rows(n: int, ids: list[Any] | None = None) -> list[dict[str, Any]]:
    """EVE mcqa_single_answer rows (the public dataset's columns), gold `A` on every row but each fifth."""
    rows = []
    for i in range(n):
        row: dict[str, Any] = {"Question": f"{QUESTIONS[i % 5]} (variant {i})", "Choices": ["one", "two", "three"],
                               "Answer": "B" if i % 5 == 4 else "A"}
        if ids is not None:
            row["id"] = ids[i]
        rows.append(row)
    return rows


def eve_args(fake_llm: Any, data: Path, run_dir: Path, *extra: str) -> list[str]:
    return fake_model_overrides(fake_llm.base_url) + [
        "benchmark=eve", f"benchmark.data_dir={data}", "benchmark.tasks=[mcqa_single_answer]",
        "benchmark.num_fewshot=0", "tracker=none", "progress=false", "cache.enabled=false",
        f"hydra.run.dir={run_dir}", *extra]


# ---------------------------------------------------------------- repeated ids


def test_twenty_rows_sharing_ten_ids_stop_the_run_before_any_request(fake_llm, tmp_path):
    data = tmp_path / "data"
    write_jsonl(data / "mcqa_single_answer.jsonl", mcq_rows(20, [f"q{i % 10}" for i in range(20)]))
    run_dir = tmp_path / "run"
    with pytest.raises(DataError) as info:
        run_in_process(eve_args(fake_llm, data, run_dir), run_dir)
    message = str(info.value)
    assert "\n" not in message and "mcqa_single_answer.jsonl" in message
    assert "10 sample id(s) repeated" in message
    assert "id q0 at rows 0, 10; id q1 at rows 1, 11; id q2 at rows 2, 12; and 7 more" in message
    assert fake_llm.count == 0 and not (run_dir / "samples" / "mcqa_single_answer.jsonl").exists()


def test_ids_compare_as_text_and_a_row_index_may_collide_with_an_explicit_id(fake_llm, tmp_path):
    data = tmp_path / "data"
    rows = mcq_rows(4, ["7", 7, None, "2"])  # "7" and 7 are one id; the third row has none: it is row 2
    for row in rows:
        if row["id"] is None:
            del row["id"]
    write_jsonl(data / "mcqa_single_answer.jsonl", rows)
    with pytest.raises(DataError, match=r"2 sample id\(s\) repeated \(id 7 at rows 0, 1; id 2 at rows 2, 3;"):
        run_in_process(eve_args(fake_llm, data, tmp_path / "run"), tmp_path / "run")
    assert fake_llm.count == 0


def test_unique_ids_run_and_n_is_the_rows_asked(fake_llm, tmp_path):
    data = tmp_path / "data"
    write_jsonl(data / "mcqa_single_answer.jsonl", mcq_rows(20, [f"q{i}" for i in range(20)]))
    fake_llm.default = "A"
    run_dir = tmp_path / "run"
    task = run_in_process(eve_args(fake_llm, data, run_dir), run_dir)["tasks"]["mcqa_single_answer"]
    # Gold is A on 16 of the 20 rows (every fifth is B): 16/20 = 0.8, over the 20 rows asked.
    assert (task["n"], task["metrics"]["accuracy"], fake_llm.count) == (20, 0.8, 20)


def test_a_repeated_id_past_the_limit_is_not_asked_and_not_an_error(fake_llm, tmp_path):
    data = tmp_path / "data"
    write_jsonl(data / "mcqa_single_answer.jsonl", mcq_rows(6, ["a", "b", "c", "d", "e", "a"]))
    fake_llm.default = "A"
    run_dir = tmp_path / "run"
    task = run_in_process(eve_args(fake_llm, data, run_dir, "benchmark.limit=5"), run_dir)["tasks"]
    # The first five rows: gold A, A, A, A, B; every reply A: 4/5.
    assert (task["mcqa_single_answer"]["n"], task["mcqa_single_answer"]["metrics"]["accuracy"]) == (5, 0.8)


def test_the_cli_says_so_in_one_line_with_exit_2(tmp_path):
    data = tmp_path / "data"
    write_jsonl(data / "mcqa_single_answer.jsonl", mcq_rows(4, [1, 2, 1, 3]))
    proc = cli(["benchmark=eve", f"benchmark.data_dir={data}", "benchmark.tasks=[mcqa_single_answer]",
                "benchmark.num_fewshot=0",
                "model=openai-compatible", "model.api_base=http://127.0.0.1:9/v1", "model.api_key=x",
                "judges=none", "tracker=none", "progress=false", f"hydra.run.dir={tmp_path / 'run'}"])
    assert proc.returncode == 2, proc.stderr
    line = one_line_error(proc)
    assert "mcqa_single_answer.jsonl" in line and "id 1 at rows 0, 2" in line
