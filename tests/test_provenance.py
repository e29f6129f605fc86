"""Data provenance: the digest over the rows used, checked against hashlib by hand, and a benchmark's load
reporting where its rows came from and changing its digest when one row changes."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from conftest import EVE_SAMPLE, compose

from runner.config import instantiate
from runner.run.provenance import data_block, rows_sha256


def test_the_digest_is_sha256_over_canonical_json_lines() -> None:
    rows = [{"b": 1, "a": "é"}, {"x": [1, 2]}]
    expected = hashlib.sha256('{"a":"é","b":1}\n{"x":[1,2]}\n'.encode()).hexdigest()
    assert rows_sha256(rows) == (2, expected)
    assert data_block("f.jsonl", None, rows) == {"source": "f.jsonl", "revision": None, "rows": 2,
                                                 "sha256": expected}
    assert rows_sha256([])[1] == hashlib.sha256(b"").hexdigest()
    # bytes (an audio column) count by their content
    assert rows_sha256([{"audio": b"\x00\x01"}]) != rows_sha256([{"audio": b"\x00\x02"}])


def _loaded_data(data_dir: Path, limit: int) -> dict:
    cfg = compose(["benchmark=eve", f"benchmark.data_dir={data_dir}", "benchmark.tasks=[mcqa_single_answer]",
                   f"benchmark.limit={limit}", "benchmark.num_fewshot=1"])
    benchmark = instantiate(cfg.benchmark, "benchmark")
    (task,) = benchmark.build_tasks()
    data = benchmark.load(task).data
    assert data is not None
    return data


def test_a_load_names_its_file_and_digests_exactly_the_rows_used(tmp_path: Path) -> None:
    lines = (EVE_SAMPLE / "mcqa_single_answer.jsonl").read_text(encoding="utf-8").splitlines()
    (tmp_path / "mcqa_single_answer.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    data = _loaded_data(tmp_path, limit=3)
    used = [json.loads(line) for line in lines[:4]]  # one shot, then three samples
    assert data == {"source": str(tmp_path / "mcqa_single_answer.jsonl"), "revision": None, "rows": 4,
                    "sha256": rows_sha256(used)[1]}
    # A row past the limit changes nothing; a row used changes the digest.
    changed_late = lines[:4] + [lines[4].replace("?", "??", 1)] + lines[5:]
    (tmp_path / "mcqa_single_answer.jsonl").write_text("\n".join(changed_late) + "\n", encoding="utf-8")
    assert _loaded_data(tmp_path, limit=3) == data
    changed = [lines[0], lines[1].replace("?", "??", 1), *lines[2:]]
    (tmp_path / "mcqa_single_answer.jsonl").write_text("\n".join(changed) + "\n", encoding="utf-8")
    assert _loaded_data(tmp_path, limit=3)["sha256"] != data["sha256"]


def test_results_name_the_data_and_a_changed_row_is_a_changed_fingerprint(fake_llm, tmp_path: Path) -> None:
    import pytest
    from conftest import fake_model_overrides, run_in_process

    from runner.errors import ConfigError

    fake_llm.default = "Answer: B"
    lines = (EVE_SAMPLE / "mcqa_single_answer.jsonl").read_text(encoding="utf-8").splitlines()
    data_file = tmp_path / "data" / "mcqa_single_answer.jsonl"
    data_file.parent.mkdir()
    data_file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    args = fake_model_overrides(fake_llm.base_url) + [
        "benchmark=eve", f"benchmark.data_dir={data_file.parent}", "benchmark.tasks=[mcqa_single_answer]",
        "benchmark.limit=3", "benchmark.num_fewshot=0", "tracker=none", "progress=false", "cache.enabled=false",
        f"hydra.run.dir={tmp_path / 'run'}"]
    results = run_in_process(args, tmp_path / "run")
    used = [json.loads(line) for line in lines[:3]]
    assert results["tasks"]["mcqa_single_answer"]["data"] == {
        "source": str(data_file), "revision": None, "rows": 3, "sha256": rows_sha256(used)[1]}
    data_file.write_text("\n".join([lines[0].replace("?", "??", 1), *lines[1:]]) + "\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"\(1 finished sample\(s\)\): 1 differ in the data"):
        run_in_process(args, tmp_path / "run")
