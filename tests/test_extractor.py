"""The choice scorer's extractor, end to end against the fake OpenAI-compatible server: an EVE multiple-choice run
whose model writes replies the rules cannot read, an extractor (a model entry on the same server, or the run's
first judge) that answers JSON; records say who read each reply and keep the extractor's raw reply and cost,
results.json counts the replies each way, the dry run counts the extractor's calls (an upper bound), and the
calls go through the run's cache and budget checks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import EVE_SAMPLE, fake_model_overrides, read_jsonl, run_in_process

from runner.errors import ConfigError
from runner.scorers.extractor import parse_letters

N = 4
SINGLE, MULTI = "mcqa_single_answer", "mcqa_multiple_answers"
ASKED = "You read one reply to a multiple-choice question"
"""The start of the extractor's prompt (runner/scorers/prompts/extract_letters.j2)."""
UNREADABLE = "Hmm. The instrument the question is about is the one I would pick, honestly."


def rows(task: str) -> list[dict[str, Any]]:
    return read_jsonl(EVE_SAMPLE / f"{task}.jsonl")[:N]


def gold(task: str, row: dict[str, Any]) -> list[str]:
    return sorted(row["Answers"]) if task == MULTI else [row["Answer"]]


def model_reply(body: dict[str, Any]) -> str:
    """The model under test: the first question of each task gets a reply the rules read, the others not."""
    text = body["messages"][-1]["content"]
    first = {rows(SINGLE)[0]["Question"]: "Answer: B", rows(MULTI)[0]["Question"]: "Answer: A, B"}
    return next((reply for question, reply in first.items() if question in text), UNREADABLE)


def extractor_reply(body: dict[str, Any]) -> str:
    several = "may have several correct options" in body["messages"][-1]["content"]
    return '{"letters": ["A", "C"]}' if several else '{"letters": ["C"]}'


def entry(url: str, name: str = "reader", pricing: bool = True) -> str:
    price = ",pricing:{input_per_mtok:1,output_per_mtok:2}" if pricing else ""
    return (f"{{name:{name},model:openai/{name},api_base:'{url}',api_key:test-key,max_retries:0,timeout:5,"
            f"params:{{max_tokens:32}}{price}}}")


def overrides(url: str, run_dir: Path, extractor: str, *extra: str, tasks: tuple[str, ...] = (SINGLE, MULTI),
              cache: Path | None = None) -> list[str]:
    return [*fake_model_overrides(url), "benchmark=eve", f"benchmark.data_dir={EVE_SAMPLE}",
            f"benchmark.tasks=[{','.join(tasks)}]", f"benchmark.limit={N}", "benchmark.num_fewshot=0",
            "tracker=none", "progress=false", f"hydra.run.dir={run_dir}",
            *([f"cache.dir={cache}"] if cache else ["cache.enabled=false"]),
            *[f"benchmark.specs.{t}.scorers.choice.extractor={extractor}" for t in tasks if extractor], *extra]


def serve(fake_llm, extractor=extractor_reply) -> None:
    fake_llm.rules = [(ASKED, extractor)]
    fake_llm.default = model_reply


def sent_to(fake_llm, model: str) -> list[dict[str, Any]]:
    """The requests for `model` (litellm sends the name without its provider prefix)."""
    return [r for r in fake_llm.requests if r.get("model") == model]


def test_replies_the_rules_cannot_read_are_read_by_the_extractor(fake_llm, tmp_path):
    serve(fake_llm)
    results = run_in_process(overrides(fake_llm.base_url, tmp_path / "run", entry(fake_llm.base_url)), tmp_path / "run")
    for task, read in ((SINGLE, "C"), (MULTI, ["A", "C"])):
        records = {r["id"]: r for r in read_jsonl(tmp_path / "run" / "samples" / f"{task}.jsonl")}
        first, *rest = [records[i] for i in sorted(records)]
        assert first["read_by"] == "rules" and first["extra"] == {}  # rules first: no extractor call
        assert first["answer"] == ("B" if task == SINGLE else ["A", "B"])
        for record in rest:
            assert record["response"] == UNREADABLE and record["answer"] == read
            assert record["read_by"] == "extractor"
            asked = record["extra"]["extractor"]
            assert asked["endpoint"] == "reader" and asked["raw"] == extractor_reply(
                {"messages": [{"content": "may have several correct options" if task == MULTI else ""}]})
            assert asked["letters"] == ([read] if task == SINGLE else read)
            assert asked["usage"]["cost"] > 0 and asked["usage"]["prompt_tokens"] > 0
        block = results["tasks"][task]
        assert block["counts"] == {"read_by_rules": 1, "read_by_extractor": N - 1}
        expected = [float(record["answer"] == (gold(task, row) if task == MULTI else row["Answer"]))
                    for record, row in zip([records[i] for i in sorted(records)], rows(task), strict=True)]
        assert block["metrics"]["accuracy"] == pytest.approx(sum(expected) / N)
    asked = sent_to(fake_llm, "reader")
    assert len(asked) == 2 * (N - 1)
    prompt = asked[0]["messages"][-1]["content"]
    assert UNREADABLE in prompt and "Options:" in prompt and '{"letters": []}' in prompt


def test_the_extractor_s_usage_is_in_results_json_under_its_own_name(fake_llm, tmp_path):
    serve(fake_llm)
    results = run_in_process(overrides(fake_llm.base_url, tmp_path / "run", entry(fake_llm.base_url),
                                       tasks=(SINGLE,)), tmp_path / "run")
    assert results["usage"]["reader"]["requests"] == N - 1
    assert results["usage"]["reader"]["cost_usd"] > 0


def test_the_first_judge_as_extractor_counts_under_the_judge_s_name(fake_llm, tmp_path):
    serve(fake_llm)
    results = run_in_process(overrides(fake_llm.base_url, tmp_path / "run", "judges", tasks=(SINGLE,)),
                             tmp_path / "run")
    assert results["tasks"][SINGLE]["counts"] == {"read_by_rules": 1, "read_by_extractor": N - 1}
    assert results["usage"]["judge1"]["requests"] == N - 1 and results["judges"] == ["judge1"]
    records = read_jsonl(tmp_path / "run" / "samples" / f"{SINGLE}.jsonl")
    assert {r["extra"].get("extractor", {}).get("endpoint") for r in records} == {None, "judge1"}


def test_an_unparseable_extractor_reply_leaves_no_answer_and_keeps_the_raw_reply(fake_llm, tmp_path):
    serve(fake_llm, extractor="I'd say C.")
    results = run_in_process(overrides(fake_llm.base_url, tmp_path / "run", entry(fake_llm.base_url),
                                       tasks=(SINGLE,)), tmp_path / "run")
    records = sorted(read_jsonl(tmp_path / "run" / "samples" / f"{SINGLE}.jsonl"), key=lambda r: r["id"])[1:]
    assert all(r["answer"] is None and r["read_by"] == "rules" for r in records)
    assert all(r["extra"]["extractor"]["raw"] == "I'd say C." and r["extra"]["extractor"]["letters"] is None
               for r in records)
    assert results["tasks"][SINGLE]["counts"] == {"read_by_rules": N, "read_by_extractor": 0}


def test_the_dry_run_counts_one_extractor_call_per_sample_and_sends_nothing(fake_llm, tmp_path):
    serve(fake_llm)
    out = run_in_process(overrides(fake_llm.base_url, tmp_path / "run", entry(fake_llm.base_url), "dry_run=true"),
                         tmp_path / "run")
    plan = out["plan"]
    assert plan["endpoints"]["reader"]["requests"] == 2 * N  # an upper bound: the rules will read 2 of them
    assert plan["endpoints"]["reader"]["cost_usd"] > 0 and plan["endpoints"]["fake-model"]["requests"] == 2 * N
    assert fake_llm.count == 0
    assert json.loads((tmp_path / "run" / "plan.json").read_text(encoding="utf-8")) == plan


def test_without_an_extractor_nothing_changes(fake_llm, tmp_path):
    serve(fake_llm)
    results = run_in_process(overrides(fake_llm.base_url, tmp_path / "run", ""), tmp_path / "run")
    assert fake_llm.count == 2 * N and not sent_to(fake_llm, "reader")
    for task in (SINGLE, MULTI):
        assert results["tasks"][task]["counts"] == {}
        assert all(r["extra"] == {} for r in read_jsonl(tmp_path / "run" / "samples" / f"{task}.jsonl"))


def test_extractor_calls_are_cached_like_any_other(fake_llm, tmp_path):
    serve(fake_llm)
    args = dict(tasks=(SINGLE,), cache=tmp_path / "cache")
    run_in_process(overrides(fake_llm.base_url, tmp_path / "one", "judges", **args), tmp_path / "one")
    fake_llm.reset()
    results = run_in_process(overrides(fake_llm.base_url, tmp_path / "two", "judges", **args), tmp_path / "two")
    assert fake_llm.count == 0
    assert results["usage"]["judge1"]["cached_requests"] == N - 1
    first, second = (read_jsonl(tmp_path / d / "samples" / f"{SINGLE}.jsonl") for d in ("one", "two"))
    assert [r["answer"] for r in first] == [r["answer"] for r in second]


def test_a_budget_needs_the_extractor_s_price_too(fake_llm, tmp_path):
    with pytest.raises(ConfigError, match="reader"):
        run_in_process(overrides(fake_llm.base_url, tmp_path / "run", entry(fake_llm.base_url, pricing=False),
                                 "budget.max_usd=1", "model.pricing={input_per_mtok:0,output_per_mtok:0}",
                                 "judges=none", tasks=(SINGLE,)), tmp_path / "run")
    assert fake_llm.count == 0


@pytest.mark.parametrize(("spec", "message"), [
    ("oops", "a model entry"),
    ("{name:fake-model,model:openai/x,api_base:'http://127.0.0.1:9/v1'}", "already the name"),
])
def test_a_bad_extractor_is_refused_before_any_request(fake_llm, tmp_path, spec, message):
    with pytest.raises(ConfigError, match=message):
        run_in_process(overrides(fake_llm.base_url, tmp_path / "run", spec, tasks=(SINGLE,)), tmp_path / "run")
    assert fake_llm.count == 0


@pytest.mark.parametrize(("text", "letters"), [
    ('{"letters": ["A", "C"]}', ("A", "C")), ('{"letters": []}', ()), ('```json\n{"letters": ["b"]}\n```', ("B",)),
    ('{"letters": ["E"]}', None), ('{"letters": ["A", "A"]}', None), ('{"letters": "A"}', None),
    ('{"letters": ["A"], "why": "x"}', None), ("A", None), ("", None), (None, None),
    ('Sure! {"letters": ["A"]}', None),
])
def test_the_extractor_s_reply_is_parsed_strictly(text, letters):
    assert parse_letters(text, 4) == letters
