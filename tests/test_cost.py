"""Honest prices and accounting (issue 13, points 1 and 4): a reply costs litellm's price of it or the entry's
own `pricing`; an unknown price is null, never 0; cache hits cost nothing and are counted apart."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import JUDGE_CORRECT, cli, read_jsonl, run_in_process, run_overrides
from fake_llm import FakeLLM
from test_wandb_tracker import offline_env  # noqa: F401 - a fixture

from runner.errors import ConfigError
from runner.models.accounting import parse_pricing
from runner.models.cache import ResponseCache, request_key
from runner.models.entries import endpoint_from_config
from runner.models.litellm_model import Endpoint, _import_litellm
from runner.run.invocations import closing_line, format_usd, merge_usage, totals

# Prices per million tokens; $1 and $3 a token keep every sum an exact integer.
MODEL_PRICES = (1_000_000, 3_000_000)
JUDGE_PRICES = (0.15, 0.6)


def judged_reply(body: dict[str, Any]) -> str:
    """The model answers in a few words; the judge says correct."""
    return JUDGE_CORRECT if body["model"] == "judge1" else "An answer about Earth Observation."


def words(text: str) -> int:
    """How the fake server counts tokens."""
    return max(1, len(text.split()))


def billed(srv: FakeLLM, model: str) -> tuple[int, int]:
    """(prompt, completion) tokens the fake server billed to `model`: the words of all messages, the
    words of the reply."""
    prompt = completion = 0
    for body in srv.requests:
        if body["model"] == model:
            prompt += words("\n".join(str(m["content"]) for m in body["messages"]))
            completion += words(srv.reply_for(body))
    return prompt, completion


def pricing(prices: tuple[float, float] | None) -> dict[str, float] | None:
    return None if prices is None else {"input_per_mtok": prices[0], "output_per_mtok": prices[1]}


def overrides(url: str, run_dir: Path, cache: Path | None, *, model: str = "openai/fake-model",
              model_prices: tuple[float, float] | None = MODEL_PRICES,
              judge_prices: tuple[float, float] | None = JUDGE_PRICES, task: str = "open_ended") -> list[str]:
    """One judge; the preflight off: the samples' requests alone, for exact sums (its: tests/test_preflight.py)."""
    fields = {"concurrency": 4, "timeout": 5, "max_retries": 1}
    return run_overrides(url, run_dir, tasks=[task], limit=4, cache=cache,
                         model_fields={"model": model, **fields, "pricing": pricing(model_prices)},
                         judge_fields={**fields, "pricing": pricing(judge_prices)})


def test_entry_pricing_makes_the_cost_exact_and_cache_hits_cost_nothing(tmp_path):
    with FakeLLM(default=judged_reply) as srv:
        first = run_in_process(overrides(srv.base_url, tmp_path / "a", tmp_path / "cache"), tmp_path / "a")
        model_tokens, judge_tokens = billed(srv, "fake-model"), billed(srv, "judge1")
        sent = srv.count
        second = run_in_process(overrides(srv.base_url, tmp_path / "b", tmp_path / "cache"), tmp_path / "b")
        assert srv.count == sent, "the second run is served by the cache"

    model, judge = first["usage"]["fake-model"], first["usage"]["judge1"]
    assert (model["requests"], model["cached_requests"], judge["requests"]) == (4, 0, 4)
    assert (model["prompt_tokens"], model["completion_tokens"]) == model_tokens
    assert (judge["prompt_tokens"], judge["completion_tokens"]) == judge_tokens
    # cost = prompt_tokens * X / 1e6 + completion_tokens * Y / 1e6, exactly
    assert model["cost_usd"] == model_tokens[0] * 1 + model_tokens[1] * 3
    assert judge["cost_usd"] == pytest.approx(judge_tokens[0] * 0.15e-6 + judge_tokens[1] * 0.6e-6, rel=1e-12)
    assert model["cost"] == model["cost_usd"] and model["cache_hits"] == 0
    assert (model["saved_usd"], model["cached_prompt_tokens"], model["cached_completion_tokens"]) == (0.0, 0, 0)
    assert first["totals"]["cost_usd"] == pytest.approx(model["cost_usd"] + judge["cost_usd"], rel=1e-12)
    assert first["totals"]["requests"] == 8 and first["totals"]["prompt_tokens"] == model_tokens[0] + judge_tokens[0]
    on_disk = json.loads((tmp_path / "a" / "results.json").read_text())
    assert on_disk["usage"]["fake-model"]["cost_usd"] == model["cost_usd"]

    # The cached re-run sends nothing and spends nothing; it counts the cached tokens and what they saved.
    again = second["usage"]["fake-model"]
    assert (again["requests"], again["cached_requests"], again["cache_hits"]) == (0, 4, 4)
    assert (again["prompt_tokens"], again["completion_tokens"], again["cost_usd"], again["cost"]) == (0, 0, 0.0, 0.0)
    assert (again["cached_prompt_tokens"], again["cached_completion_tokens"]) == model_tokens
    assert again["saved_usd"] == model["cost_usd"]
    assert second["usage"]["judge1"]["saved_usd"] == pytest.approx(judge["cost_usd"], rel=1e-12)
    assert second["totals"]["cost_usd"] == 0.0 and second["totals"]["cached_requests"] == 8
    records = [json.loads(line) for line in (tmp_path / "b" / "samples" / "open_ended.jsonl").read_text().splitlines()]
    assert all(r["usage"]["model"]["cached"] and r["usage"]["model"]["cost"] == 0.0 for r in records)
    assert "0 requests sent · 8 from the cache · 0 tokens · $0.00" in closing_line(second)


def test_an_unknown_price_is_null_end_to_end(tmp_path):
    with FakeLLM(default=judged_reply) as srv:
        args = overrides(srv.base_url, tmp_path / "a", tmp_path / "cache", model_prices=None)
        run_in_process(args, tmp_path / "a")
        second = run_in_process(overrides(srv.base_url, tmp_path / "b", tmp_path / "cache", model_prices=None),
                                tmp_path / "b")
    on_disk = json.loads((tmp_path / "a" / "results.json").read_text())
    model = on_disk["usage"]["fake-model"]
    assert model["requests"] == 4 and model["prompt_tokens"] > 0
    assert model["cost_usd"] is None and model["cost"] is None  # never 0
    assert on_disk["usage"]["judge1"]["cost_usd"] > 0  # the priced judge keeps its cost
    assert on_disk["totals"]["cost_usd"] is None and on_disk["totals"]["cost"] is None
    assert "cost unknown" in closing_line(on_disk)
    task = next(iter(on_disk["tasks"]))
    assert all(r["usage"]["model"]["cost"] is None  # each record says so too
               for r in read_jsonl(tmp_path / "a" / "samples" / f"{task}.jsonl"))
    cached = second["usage"]["fake-model"]
    assert cached["saved_usd"] is None and cached["cost_usd"] == 0.0  # nothing sent: nothing spent
    assert second["totals"]["saved_usd"] is None


def test_a_model_litellm_knows_costs_litellms_price_and_pricing_overrides_it(tmp_path):
    litellm = _import_litellm()
    with FakeLLM(default=judged_reply) as srv:
        args = overrides(srv.base_url, tmp_path / "a", None, model="openai/gpt-4o-mini", model_prices=None,
                         task="mcqa_single_answer")
        results = run_in_process(args, tmp_path / "a")
        bodies = [b for b in srv.requests if b["model"] == "gpt-4o-mini"]
        expected = sum(sum(litellm.cost_per_token(
            model="openai/gpt-4o-mini", prompt_tokens=words("\n".join(m["content"] for m in b["messages"])),
            completion_tokens=words(srv.reply_for(b)))) for b in bodies)
        srv.requests.clear()
        overridden = run_in_process(overrides(srv.base_url, tmp_path / "b", None, model="openai/gpt-4o-mini",
                                              task="mcqa_single_answer"), tmp_path / "b")
    usage = results["usage"]["fake-model"]
    assert len(bodies) == usage["requests"] == 4
    assert expected > 0 and usage["cost_usd"] == pytest.approx(expected, rel=1e-9)
    assert results["totals"]["cost_usd"] == pytest.approx(expected, rel=1e-9)  # the judge was not asked
    priced = overridden["usage"]["fake-model"]
    assert priced["cost_usd"] == priced["prompt_tokens"] * 1 + priced["completion_tokens"] * 3


def test_price_known_is_decided_without_a_request():
    with FakeLLM() as srv:
        known = Endpoint(name="mini", model="openai/gpt-4o-mini", api_base=srv.base_url)
        local = Endpoint(name="local", model="openai/smollm2-135m-instruct", api_base=srv.base_url)
        priced = Endpoint(name="priced", model="openai/smollm2-135m-instruct", api_base=srv.base_url,
                          pricing={"input_per_mtok": 0.0, "output_per_mtok": 0.0})
        assert (known.price_known(), local.price_known(), priced.price_known()) == (True, False, True)
        assert local.price(10, 10) is None and priced.price(10, 10) == 0.0
        assert srv.count == 0
    assert known.stats.cost_usd == 0.0 and known.usage()["cost_usd"] == 0.0


def test_a_cache_entry_stored_without_its_cost_is_valued_at_litellms_prices(tmp_path):
    cache = ResponseCache(tmp_path / "cache")
    endpoint = Endpoint(name="mini", model="openai/gpt-4o-mini", api_base="http://127.0.0.1:9/v1", cache=cache)
    messages = [{"role": "user", "content": "hello"}]
    cache.put(request_key(endpoint.identity(endpoint.request(messages))),
              {"text": "hi", "model": "gpt-4o-mini", "prompt_tokens": 1000, "completion_tokens": 200})
    out = asyncio.run(endpoint.complete(messages))
    cache.close()
    assert out.text == "hi" and out.usage.cached and out.usage.cost == 0.0
    usage = endpoint.usage()
    in_cost, out_cost = _import_litellm().cost_per_token(model="openai/gpt-4o-mini", prompt_tokens=1000,
                                                         completion_tokens=200)
    assert usage["saved_usd"] == pytest.approx(in_cost + out_cost, rel=1e-12)
    assert (usage["requests"], usage["cached_requests"], usage["cost_usd"]) == (0, 1, 0.0)
    assert (usage["cached_prompt_tokens"], usage["cached_completion_tokens"]) == (1000, 200)


@pytest.mark.parametrize("bad", [{"input_per_mtok": 1}, {"input_per_mtok": 1, "output_per_mtok": -2},
                                 {"input_per_mtok": 1, "output_per_mtok": 2, "cached_per_mtok": 1},
                                 {"input_per_mtok": "a lot", "output_per_mtok": 2}, "cheap"])
def test_bad_pricing_is_a_config_error_naming_the_entry(bad):
    with pytest.raises(ConfigError, match=r"judge9\.pricing: .*input_per_mtok and output_per_mtok"):
        endpoint_from_config({"name": "judge9", "model": "openai/x", "pricing": bad}, None)
    assert parse_pricing(None, "x") is None
    assert parse_pricing({"input_per_mtok": 2, "output_per_mtok": 0.5}, "x") == (2.0, 0.5)


def test_totals_sum_counts_and_a_money_sum_is_null_when_any_part_is():
    usage = {"a": {"role": "model", "requests": 3, "cached_requests": 1, "prompt_tokens": 30, "cost_usd": 0.5,
                   "saved_usd": 0.25, "cost": 0.5, "rate_limited": 2, "served_models": ["a"]},
             "b": {"role": "judge", "requests": 2, "cached_requests": 0, "prompt_tokens": 20, "cost_usd": None,
                   "saved_usd": 0.0, "cost": None, "rate_limited": 0, "served_models": ["b"]}}
    total = totals(usage)
    assert (total["requests"], total["cached_requests"], total["prompt_tokens"], total["rate_limited"]) == (5, 1, 50, 2)
    assert total["cost_usd"] is None and total["cost"] is None and total["saved_usd"] == 0.25
    assert "role" not in total and "served_models" not in total
    assert totals({})["cost_usd"] == 0.0 and totals({})["requests"] == 0


def test_closing_line_formats():
    results = {"run": {"run_dir": "outputs/2025-01-01/12-00-00", "duration_s": 42.14},
               "totals": {"requests": 90, "cached_requests": 40, "retries": 3, "prompt_tokens": 50_000,
                          "completion_tokens": 2_310, "cost_usd": 0.03121}}
    # results.json's own figures, as they are: 90 requests sent (3 of them retries), 40 replies from the cache
    assert closing_line(results) == ("done: outputs/2025-01-01/12-00-00/results.json · 90 requests sent (3 retries) · "
                                     "40 from the cache · 52,310 tokens · $0.0312 · 42.1 s")
    unknown = {**results, "totals": {**results["totals"], "cost_usd": None}, "stopped": "budget"}
    assert closing_line(unknown).endswith("52,310 tokens · cost unknown · 42.1 s · stopped: budget")
    assert format_usd(0.0) == "$0.00" and format_usd(2.3e-06) == "$0.0000023" and format_usd(12.5) == "$12.5000"
    # An older results.json without totals: summed from its usage.
    old = {"usage": {"m": {"requests": 1, "cache_hits": 0, "prompt_tokens": 3, "completion_tokens": 1,
                           "cost_usd": 1e-06}}}
    assert closing_line(old) == "done: results.json · 1 request sent · 4 tokens · $0.0000010"


def test_the_embedded_model_runs_here_and_costs_nothing(tmp_path):
    from conftest import compose

    from runner.run.build import build

    built = build(compose(["tracker=none", "cache.enabled=false"]), tmp_path / "run")
    assert built.model is not None and built.model.price_known()
    assert built.model.price(1000, 500) == 0.0 and built.panel.judges[0].price(10, 10) == 0.0


def test_a_reply_through_the_runner_costs_what_litellm_says(fake_llm: FakeLLM):
    litellm = _import_litellm()
    endpoint = Endpoint(name="mini", model="openai/gpt-4o-mini", api_base=fake_llm.base_url, api_key="k")
    out = asyncio.run(endpoint.complete([{"role": "user", "content": "one two three"}]))
    used = litellm.Usage(prompt_tokens=3, completion_tokens=1, total_tokens=4)
    reply = litellm.ModelResponse(model="gpt-4o-mini", usage=used, choices=[
        {"index": 0, "message": {"role": "assistant", "content": "A"}, "finish_reason": "stop"}])
    expected = litellm.completion_cost(completion_response=reply, model="openai/gpt-4o-mini")
    assert (out.usage.prompt_tokens, out.usage.completion_tokens) == (3, 1)
    assert out.usage.cost == pytest.approx(expected, rel=1e-12) and expected > 0
    assert endpoint.usage()["cost_usd"] == pytest.approx(expected, rel=1e-12)


# --- one count of everything (issue 35, point 3) ---------------------------------------------------

EXTRACTOR_ASKED = "You read one reply to a multiple-choice question"
"""The start of the extractor's prompt (runner/scorers/prompts/extract_letters.j2)."""
FOURTH_QUESTION = "^How does differential SAR interferometry"
"""open_ended's fourth sample: its model request (not the judge's, whose prompt quotes the question after its
rubric) is refused once with a 429, then retried."""


def _closing_figures(line: str) -> dict[str, float | int | None]:
    """The numbers of a closing line, as a reader takes them from the screen."""
    def number(pattern: str) -> int:
        found = re.search(pattern, line)
        return int(found.group(1).replace(",", "")) if found else 0

    cost = re.search(r"· \$([\d.]+) ·", line)
    return {"requests": number(r"([\d,]+) requests? sent"), "retries": number(r"sent \(([\d,]+) retr"),
            "cached_requests": number(r"([\d,]+) from the cache"), "tokens": number(r"([\d,]+) tokens"),
            "cost_usd": float(cost.group(1)) if cost else None, "invocations": number(r"over (\d+) invocations")}


@pytest.mark.usefixtures("offline_env")
def test_the_closing_line_results_json_invocations_and_wandb_count_alike(fake_llm: FakeLLM, tmp_path, capsys):
    """A resumed run over two invocations, with cache hits, a retry, a judge and an extractor: the screen's
    figures are results.json's `totals`, which are the sums of invocations.jsonl, which W&B's summary holds; the
    requests are what the server received, the cached ones what it did not."""
    fake_llm.rules = [(EXTRACTOR_ASKED, '{"letters": ["C"]}')]
    fake_llm.default = judged_reply_or_unreadable
    fake_llm.faults, fake_llm.fault_only_matching = ["429"], FOURTH_QUESTION
    reader = (f"{{name:reader,model:openai/reader,api_base:'{fake_llm.base_url}',api_key:test-key,max_retries:0,"
              "timeout:5,params:{max_tokens:32},pricing:{input_per_mtok:1,output_per_mtok:2}}")

    def args(run_dir: Path, limit: int, tracker: str = "none") -> list[str]:
        base = overrides(fake_llm.base_url, run_dir, tmp_path / "cache", task="mcqa_single_answer,open_ended")
        return [*[a for a in base if not a.startswith(("benchmark.limit", "tracker"))], f"benchmark.limit={limit}",
                "benchmark.num_fewshot=0", f"tracker={tracker}",
                f"benchmark.specs.mcqa_single_answer.scorers.choice.extractor={reader}"]

    run_in_process(args(tmp_path / "warm", 3), tmp_path / "warm")  # fills the cache for samples 0-2
    before = fake_llm.count
    run_in_process(args(tmp_path / "run", 2, "wandb"), tmp_path / "run")  # all from the cache
    capsys.readouterr()
    results = run_in_process(args(tmp_path / "run", 4, "wandb"), tmp_path / "run")  # sample 2 cached, 3 sent
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("done: "))

    # By hand: per task and sample one model call plus one extractor (mcqa, unreadable replies) or judge
    # (open_ended) call: 4 samples x 2 tasks x 2 = 16 replies; sample 3's four calls were sent, plus the 429's
    # second attempt; the other 12 came from the cache.
    total = results["totals"]
    assert fake_llm.count - before == total["requests"] == 5 and total["retries"] == 1
    assert total["cached_requests"] == 12 and total["rate_limited"] == 1
    assert total["requests"] == total["successes"] + total["failures"] + total["retries"]  # docs/outputs.md
    assert set(results["usage"]) == {"fake-model", "judge1", "reader"}
    figures = _closing_figures(line)
    assert figures == {"requests": 5, "retries": 1, "cached_requests": 12,
                       "tokens": total["prompt_tokens"] + total["completion_tokens"],
                       "cost_usd": float(format_usd(total["cost_usd"])[1:]), "invocations": 2}, line

    on_disk = json.loads((tmp_path / "run" / "results.json").read_text())
    assert on_disk["totals"] == total and on_disk["usage"] == results["usage"]
    lines = [json.loads(x) for x in (tmp_path / "run" / "invocations.jsonl").read_text().splitlines()]
    assert [x["usage"]["fake-model"]["cached_requests"] for x in lines] == [4, 2]  # 2 tasks x 2, then 2 x 1
    assert totals(merge_usage([x["usage"] for x in lines])) == total

    from test_wandb_tracker import read_offline_run

    last = sorted((tmp_path / "run" / "wandb").glob("offline-run-*"))[-1]
    summary = read_offline_run(last)["summary"]
    assert {k: summary[f"totals/{k}"] for k in ("requests", "cached_requests", "retries", "prompt_tokens",
                                                "completion_tokens", "cost_usd")} == \
        {k: total[k] for k in ("requests", "cached_requests", "retries", "prompt_tokens", "completion_tokens",
                               "cost_usd")}


def judged_reply_or_unreadable(body: dict[str, Any]) -> str:
    """The judge says correct; the model's replies name no option the rules can read (so the extractor reads
    the multiple-choice ones)."""
    return JUDGE_CORRECT if body["model"] == "judge1" else "Hmm. The one I would pick, honestly."


def test_a_model_and_a_judge_of_one_name_are_both_counted(fake_llm: FakeLLM, tmp_path):
    fake_llm.default = judged_reply
    args = [a.replace("name:judge1", "name:fake-model") for a in
            overrides(fake_llm.base_url, tmp_path / "run", None)]
    results = run_in_process(args, tmp_path / "run")
    assert fake_llm.count == 8  # 4 model calls, 4 judge calls
    assert results["totals"]["requests"] == fake_llm.count
    usage = results["usage"]["fake-model"]
    assert (usage["role"], usage["requests"]) == ("model+judge", 8)
    assert {role: u["requests"] for role, u in usage["by_role"].items()} == {"model": 4, "judge": 4}


def test_a_model_and_a_judge_of_one_name_are_both_counted_with_workers(fake_llm: FakeLLM, tmp_path):
    fake_llm.default = judged_reply
    args = [a.replace("name:judge1", "name:fake-model") for a in
            overrides(fake_llm.base_url, tmp_path / "run", None)] + ["workers=2"]
    proc = cli(args, timeout=120)
    assert proc.returncode == 0, proc.stderr
    usage = json.loads((tmp_path / "run" / "results.json").read_text())["usage"]["fake-model"]
    assert fake_llm.count == 8 and usage["requests"] == 8
    assert {role: u["requests"] for role, u in usage["by_role"].items()} == {"model": 4, "judge": 4}
