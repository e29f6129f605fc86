"""A resumed run never mixes configurations: records carry fingerprints, a differing re-run is refused
without touching the run dir, and `resume=refresh` asks exactly the changed samples again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import (
    EVE_SAMPLE,
    JUDGE_CORRECT,
    JUDGE_INCORRECT,
    cli,
    one_line_error,
    read_jsonl,
    run_in_process,
    run_overrides,
    write_jsonl,
)

from runner.errors import ConfigError
from runner.run.fingerprint import PARTS, changed, fingerprint, split


def args(url: str, run_dir: Path, cache: Path, *, judges: tuple[str, ...] = ("judge-a",), limit: int = 3,
         data: Path = EVE_SAMPLE) -> list[str]:
    return run_overrides(url, run_dir, judges=judges, data_dir=data, tasks=["open_ended"], limit=limit, cache=cache,
                         model_fields={"timeout": 5}, judge_fields={"concurrency": 4, "max_retries": 1, "timeout": 5})


def reply(body: dict) -> str:
    if "strict fact-checker" in body["messages"][-1]["content"]:
        return JUDGE_CORRECT if body["model"] == "judge-a" else JUDGE_INCORRECT
    return "An answer."


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_fingerprint_parts_are_named_and_compared_part_by_part():
    old = fingerprint({"data": [1], "model": {"name": "m"}, "judges": ["a"]})
    new = fingerprint({"data": [1], "model": {"name": "m"}, "judges": ["b"]})
    assert list(split(old)) == ["data", "model", "judges"] and set(split(old)) <= set(PARTS)
    assert changed(old, new) == ["judges"] and changed(old, old) == []
    assert changed(None, new) == ["runner"]  # a record written before fingerprints existed


def test_digests_do_not_depend_on_memory_addresses():
    import functools

    from runner.run.fingerprint import digest

    def fetch(index: int) -> bytes:
        return b""

    # A lazy loader in a sample's metadata, and objects printed with their address, as two runs see them.
    first = digest({"fetch": functools.partial(fetch, 3), "handle": object()})
    second = digest({"fetch": functools.partial(fetch, 3), "handle": object()})
    assert first == second and first != digest({"fetch": functools.partial(fetch, 4), "handle": object()})


def test_another_panel_is_refused_naming_it_and_the_run_dir_is_left_as_it_was(fake_llm, tmp_path):
    fake_llm.default = reply
    run_dir = tmp_path / "run"
    first = cli(args(fake_llm.base_url, run_dir, tmp_path / "cache"), timeout=120)
    assert first.returncode == 0, first.stderr
    records = read_jsonl(run_dir / "samples" / "open_ended.jsonl")
    assert all(set(split(r["fingerprint"])) == {"data", "task", "prompt", "model", "judges"} for r in records)
    before, sent = snapshot(run_dir), fake_llm.count

    proc = cli(args(fake_llm.base_url, run_dir, tmp_path / "cache", judges=("judge-b",)), timeout=120)
    assert proc.returncode == 2
    line = one_line_error(proc)
    assert "3 differ in the judge panel or rubric (was judge-a, now judge-b)" in line and "resume=refresh" in line
    after = snapshot(run_dir)  # runner.log only gains the refused invocation's lines
    log_before, log_after = before.pop("runner.log", b""), after.pop("runner.log", b"")
    assert after == before and log_after.startswith(log_before) and fake_llm.count == sent


def test_refresh_asks_exactly_the_changed_samples_and_reports_only_the_current_panel(fake_llm, tmp_path):
    fake_llm.default = reply
    run_dir, cache = tmp_path / "run", tmp_path / "cache"
    run_in_process(args(fake_llm.base_url, run_dir, cache, limit=2), run_dir)
    # One more sample and another panel: the two old samples are re-judged (their model calls come from
    # the cache), the new one is asked.
    fake_llm.reset()
    results = run_in_process(args(fake_llm.base_url, run_dir, cache, judges=("judge-b",), limit=3)
                             + ["resume=refresh"], run_dir)
    models = sorted(b["model"] for b in fake_llm.requests)
    assert models == ["fake-model", "judge-b", "judge-b", "judge-b"]
    block = results["tasks"]["open_ended"]
    assert results["judges"] == ["judge-b"]
    assert set(block["metrics"]) == {"llm_as_judge_judge-b", "llm_as_judge_avg", "judge_voting", "judge_agreement"}
    assert block["metrics"]["llm_as_judge_avg"] == 0.0 and block["n"] == 3


@pytest.mark.parametrize("change, parts", [
    # Rows 5-7 were scored after 5 shots; with 4 shots rows 4-6 are, and 5 and 6 have one shot less.
    (["benchmark.num_fewshot=4"], "2 differ in the data or few-shot examples"),
    (["model.params.temperature=0.7"], "3 differ in the model under test"),
    (["benchmark.specs.open_ended.solver.user=open_ended_w_context.j2"], "3 differ in the task settings"),
])
def test_a_changed_prompt_model_or_setting_is_refused(fake_llm, tmp_path, change, parts):
    fake_llm.default = reply
    run_dir = tmp_path / "run"
    run_in_process(args(fake_llm.base_url, run_dir, tmp_path / "cache"), run_dir)
    with pytest.raises(ConfigError, match=parts) as info:
        run_in_process(args(fake_llm.base_url, run_dir, tmp_path / "cache") + change, run_dir)
    if change[0].startswith("benchmark.num_fewshot"):
        assert "the messages sent to the model" in str(info.value)


def test_one_changed_row_is_the_only_sample_asked_again(fake_llm, tmp_path):
    fake_llm.default = reply
    rows = [json.loads(line) for line in (EVE_SAMPLE / "open_ended.jsonl").read_text().splitlines()][:8]
    data = write_jsonl(tmp_path / "data" / "open_ended.jsonl", rows)
    run_dir, cache = tmp_path / "run", tmp_path / "cache"
    run_in_process(args(fake_llm.base_url, run_dir, cache, data=data.parent), run_dir)
    rows[6]["Answer"] = "A different reference answer."
    write_jsonl(data, rows)
    with pytest.raises(ConfigError, match="1 differ in the data or few-shot examples"):
        run_in_process(args(fake_llm.base_url, run_dir, cache, data=data.parent), run_dir)
    fake_llm.reset()
    run_in_process(args(fake_llm.base_url, run_dir, cache, data=data.parent) + ["resume=refresh"], run_dir)
    # Its model call is cached (the messages did not change); the judge sees a new reference.
    assert [b["model"] for b in fake_llm.requests] == ["judge-a"]
    assert len(read_jsonl(run_dir / "samples" / "open_ended.jsonl")) == 4


def test_an_unknown_resume_mode_is_a_config_error(fake_llm, tmp_path):
    with pytest.raises(ConfigError, match="resume=refresh"):
        run_in_process(args(fake_llm.base_url, tmp_path / "run", tmp_path / "cache") + ["resume=fresh"],
                       tmp_path / "run")


def test_the_seed_is_part_of_the_fingerprint_only_where_it_decides_the_record():
    from conftest import compose

    from runner.config import instantiate
    from runner.tasks.base import Context
    from runner.types import Sample

    sample = Sample(id=0, input="q", target="A", choices=("x", "y"))
    eve = instantiate(compose(["benchmark=eve", "benchmark.tasks=[mcqa_single_answer]"]).benchmark,
                      "benchmark").build_tasks()[0]
    parts = [eve.fingerprint_parts(sample, [], Context(model=None, panel=None, seed=s))["task"] for s in (0, 1)]
    assert parts[0] == parts[1]  # a greedy multiple-choice prompt does not depend on the seed

    class Drawn(type(eve)):  # a task whose records depend on a seeded draw
        seeded = True

    drawn = Drawn.__new__(Drawn)
    drawn.__dict__.update(eve.__dict__)
    parts = [drawn.fingerprint_parts(sample, [], Context(model=None, panel=None, seed=s))["task"] for s in (0, 1)]
    assert parts[0] != parts[1]
