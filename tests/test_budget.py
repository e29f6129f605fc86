"""budget.max_usd: once the run has spent it, no new request is sent, results of what was scored are
written with "stopped": "budget", the exit status is 4, and a re-run resumes to the unbudgeted numbers."""

from __future__ import annotations

import json

import pytest
from conftest import EVE_SAMPLE, cli, fake_model_overrides, one_line_error, read_jsonl
from fake_llm import FakeLLM

# Every reply is one word and costs $1: output at a million dollars per million tokens, input free.
PRICED = "model.pricing={input_per_mtok:0,output_per_mtok:1000000}"


def args(url: str, run_dir, *extra: str) -> list[str]:
    return fake_model_overrides(url, concurrency=1) + [
        "benchmark=eve", f"benchmark.data_dir={EVE_SAMPLE}", "benchmark.tasks=[mcqa_single_answer]",
        "tracker=none", "cache.enabled=false", f"hydra.run.dir={run_dir}", PRICED, *extra]


def test_a_budget_stops_new_requests_and_a_rerun_resumes_to_the_same_numbers(tmp_path):
    with FakeLLM(default="B") as srv:
        proc = cli(args(srv.base_url, tmp_path / "run", "budget.max_usd=3"), timeout=120)
        assert proc.returncode == 4, proc.stderr
        assert "budget.max_usd=3 reached" in one_line_error(proc) and "to go on" in proc.stderr
        # One request in flight at a time: three replies ($3) are paid, then nothing more is sent.
        assert srv.count == 3
        results = json.loads((tmp_path / "run" / "results.json").read_text())
        assert results["stopped"] == "budget" and results["tasks"]["mcqa_single_answer"]["n"] == 3
        assert len(read_jsonl(tmp_path / "run" / "samples" / "mcqa_single_answer.jsonl")) == 3

        proc = cli(args(srv.base_url, tmp_path / "run"), timeout=120)  # no budget: the rest is asked
        assert proc.returncode == 0, proc.stderr
        resumed = json.loads((tmp_path / "run" / "results.json").read_text())
        proc = cli(args(srv.base_url, tmp_path / "whole"), timeout=120)
        whole = json.loads((tmp_path / "whole" / "results.json").read_text())
    assert "stopped" not in resumed
    assert resumed["tasks"]["mcqa_single_answer"]["metrics"] == whole["tasks"]["mcqa_single_answer"]["metrics"]
    assert resumed["tasks"]["mcqa_single_answer"]["n"] == whole["tasks"]["mcqa_single_answer"]["n"] == 13


def test_a_budget_with_an_unknown_price_stops_before_the_first_request(fake_llm, tmp_path):
    unpriced = [a for a in args(fake_llm.base_url, tmp_path / "run", "budget.max_usd=1") if a != PRICED]
    proc = cli(unpriced, timeout=60)
    assert proc.returncode == 2
    assert "fake-model has no known price" in one_line_error(proc) and "pricing" in proc.stderr
    assert fake_llm.count == 0


def test_a_replys_cost_reaches_the_shared_budget_as_soon_as_it_is_counted():
    """Workers share one budget: each writes its spending where the others read it the moment a reply's
    cost is counted, before the sample is scored (its judges may take seconds), so no other worker sends a
    request on an old figure."""
    import asyncio

    from runner.models.budget import Budget, BudgetStop
    from runner.models.litellm_model import Endpoint

    published: list[float] = []
    with FakeLLM(default="B") as srv:
        endpoint = Endpoint(name="m", model="openai/m", api_base=srv.base_url, api_key="k", max_retries=0,
                            pricing={"input_per_mtok": 0, "output_per_mtok": 1_000_000})  # $1 per output token
        budget = Budget(2.0, spent=lambda: endpoint.stats.cost_usd,
                        on_spend=lambda: published.append(endpoint.stats.cost_usd))
        endpoint.budget = budget

        async def ask() -> None:
            for _ in range(3):
                await endpoint.complete([{"role": "user", "content": "?"}], params={"max_tokens": 1})

        with pytest.raises(BudgetStop):
            asyncio.run(ask())
        sent = srv.count
    # the fake server counts the one-word reply as 1 completion token: $1 a reply, so the third is not sent
    assert (published, sent, budget.stopped) == ([1.0, 2.0], 2, True)
