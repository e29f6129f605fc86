"""budget.max_usd is a hard cap: before each request (model, judge, extractor, preflight) its worst case (input
tokens as a dry run counts them, plus max_tokens, at the entry's price) is reserved, and a request that does
not fit is not sent; replies settle their reservation at their real cost; earlier invocations count. On the
fake server with prices set, results.json `cost_usd` never exceeds the cap: concurrency 1 and 16, two
workers, faults, judges and extractors, a resume with a smaller and a larger cap, a sweep's jobs.

The fake server bills a reply's words as its completion tokens and ignores max_tokens; a real provider never
writes more than max_tokens, so the replies here are cut at it (`within`)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import JUDGE_CORRECT, cli, one_line_error, run_in_process, run_overrides
from fake_llm import FakeLLM

from runner.errors import ConfigError
from runner.models.budget import Budget, BudgetStop
from runner.models.litellm_model import Endpoint, count_tokens

# Output at $1 a token, input free: a reply of n words costs $n and a request's worst case is $max_tokens.
DOLLAR_A_TOKEN = "{input_per_mtok:0,output_per_mtok:1000000}"
MCQ = "mcqa_single_answer"
ASKED = "You read one reply to a multiple-choice question"
"""The start of the extractor's prompt."""


def within(reply: str | Callable[[dict[str, Any]], str]) -> Callable[[dict[str, Any]], str]:
    """`reply`, cut at the request's max_tokens words (one word a token on the fake server), as a provider does."""
    def answer(body: dict[str, Any]) -> str:
        text = reply(body) if callable(reply) else reply
        cap = body.get("max_tokens")
        return " ".join(text.split()[:cap]) if isinstance(cap, int) else text
    return answer


def judged_reply(body: dict[str, Any]) -> str:
    return JUDGE_CORRECT if str(body["model"]).startswith("judge") else "An answer."


def mcq(url: str, run_dir: Path, *extra: str, concurrency: int = 1, max_tokens: int = 4) -> list[str]:
    """EVE's 13 single-answer samples, each reply $1 and each request's worst case $max_tokens (the run's
    `params.max_tokens`, over the task's 64 and the entry's 1024)."""
    return run_overrides(url, run_dir, f"model.pricing={DOLLAR_A_TOKEN}", f"params.max_tokens={max_tokens}", *extra,
                         tasks=[MCQ], model_fields={"concurrency": concurrency},
                         judge_fields={"concurrency": concurrency})


def judged(url: str, run_dir: Path, *extra: str, concurrency: int = 1) -> list[str]:
    """open_ended: the model (max_tokens 4, replies of 2 words: $2) and one judge (max_tokens 8, replies of 6
    words: $6), both at $1 an output token."""
    judge = (f"{{name:judge1,model:openai/judge1,api_base:'{url}',api_key:test-key,concurrency:{concurrency},"
             f"max_retries:3,timeout:5,params:{{max_tokens:8}},pricing:{DOLLAR_A_TOKEN}}}")
    return [a for a in mcq(url, run_dir, *extra, concurrency=concurrency) if not a.startswith("judges.panel")] + [
        f"judges.panel=[{judge}]", "benchmark.tasks=[open_ended]", "benchmark.num_fewshot=0",
        "preflight=true"]  # its one-token requests are part of the spend these tests count


def extracted(url: str, run_dir: Path, *extra: str) -> list[str]:
    """The single-answer task whose replies ("Hmm.", $1) the rules cannot read, so an extractor ($1 a token,
    max_tokens 4, replies '{"letters": ["B"]}': $2) reads each."""
    entry = (f"{{name:reader,model:openai/reader,api_base:'{url}',api_key:test-key,max_retries:0,timeout:5,"
             f"params:{{max_tokens:4}},pricing:{DOLLAR_A_TOKEN}}}")
    return mcq(url, run_dir, f"benchmark.specs.{MCQ}.scorers.choice.extractor={entry}", "preflight=true", *extra)


def cost(results: dict[str, Any]) -> float:
    value = results["totals"]["cost_usd"]
    assert value is not None
    return float(value)


# ------------------------------------------------------------------------------------------- the reservation


def test_a_request_reserves_its_input_tokens_plus_max_tokens_at_the_entrys_price():
    """Exactly what the dry run counts: input tokens by litellm's tokenizer, plus max_tokens, priced."""
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Name a planet of the sun."}]
    with FakeLLM(default=within("Mars")) as srv:
        def endpoint(max_usd: float) -> Endpoint:
            e = Endpoint(name="m", model="openai/m", api_base=srv.base_url, api_key="k", max_retries=0,
                         params={"max_tokens": 5}, pricing={"input_per_mtok": 3.0, "output_per_mtok": 7.0})
            e.budget = Budget(max_usd)
            return e

        worst = (count_tokens("openai/m", messages) * 3.0 + 5 * 7.0) / 1e6
        refused = endpoint(worst * (1 - 1e-6))
        with pytest.raises(BudgetStop, match="may cost up to"):
            asyncio.run(refused.complete(messages))
        assert srv.count == 0 and refused.budget is not None and refused.budget.stopped
        fits = endpoint(worst * (1 + 1e-6))
        out = asyncio.run(fits.complete(messages))
        assert srv.count == 1 and out.text == "Mars"
        # settled at the real cost: the 8 + 1 words the fake server billed, at the entry's prices
        assert fits.budget is not None and fits.budget.spent == fits.stats.cost_usd == (8 * 3.0 + 1 * 7.0) / 1e6


# ------------------------------------------------------------------------ hand-computed spend, many setups


@pytest.mark.parametrize("concurrency, workers", [(1, 1), (16, 1), (16, 2)])
def test_the_cap_stops_where_the_next_worst_case_does_not_fit(tmp_path, concurrency, workers):
    """Worst case $4, real cost $1, cap $7.50: a request goes while what is spent plus $4 fits, so 4 replies
    ($4) are paid, whatever the concurrency and across two worker processes sharing one ledger."""
    with FakeLLM(default=within("B")) as srv:
        results = run_in_process(mcq(srv.base_url, tmp_path / "run", "budget.max_usd=7.5", f"workers={workers}",
                                     concurrency=concurrency), tmp_path / "run")
        assert srv.count == 4
    assert results["stopped"] == "budget" and cost(results) == 4.0 <= 7.5
    assert results["tasks"][MCQ]["n"] == 4 and results["tasks"][MCQ]["n_errors"] == 0


def test_faults_cost_nothing_and_the_cap_still_holds_at_concurrency_16(tmp_path):
    """Every request first gets a 500 and then a 429 (a retry keeps its reservation, a 429 gives it back and
    queues again, so more requests meet their faults): the failed attempts cost nothing, so exactly the same 4
    replies are paid."""
    with FakeLLM(default=within("B"), faults=["500", "429"]) as srv:
        results = run_in_process(mcq(srv.base_url, tmp_path / "run", "budget.max_usd=7.5", "model.backoff=0.01",
                                     concurrency=16), tmp_path / "run")
        usage = results["usage"]["fake-model"]
        assert usage["requests"] == srv.count > 3 * 4 and usage["successes"] == 4
    assert results["stopped"] == "budget" and cost(results) == 4.0


def test_a_resume_counts_earlier_invocations_with_a_smaller_and_a_larger_cap(tmp_path):
    run_dir = tmp_path / "run"
    with FakeLLM(default=within("B")) as srv:
        first = run_in_process(mcq(srv.base_url, run_dir, "budget.max_usd=7.5"), run_dir)
        assert (srv.count, cost(first)) == (4, 4.0)
        # $4 spent already is over a $3 cap: nothing is sent, the results say so again
        smaller = run_in_process(mcq(srv.base_url, run_dir, "budget.max_usd=3"), run_dir)
        assert (srv.count, cost(smaller), smaller["stopped"]) == (4, 4.0, "budget")
        # $10.50: $4 spent, so 3 more replies fit ($4 + $3 + the next $4 worst case > $10.50)
        larger = run_in_process(mcq(srv.base_url, run_dir, "budget.max_usd=10.5"), run_dir)
        assert (srv.count, cost(larger), larger["stopped"]) == (7, 7.0, "budget")
        assert larger["tasks"][MCQ]["n"] == 7 and larger["run"]["invocations"] == 3
        done = run_in_process(mcq(srv.base_url, run_dir, "budget.max_usd=100"), run_dir)
        whole = run_in_process(mcq(srv.base_url, tmp_path / "whole"), tmp_path / "whole")
    assert "stopped" not in done and cost(done) == 13.0 <= 100
    assert done["tasks"][MCQ]["metrics"] == whole["tasks"][MCQ]["metrics"] and done["tasks"][MCQ]["n"] == 13


def test_judges_reserve_too_and_a_sample_whose_judge_does_not_fit_stays_unasked(tmp_path):
    """One open-ended sample: preflight $1 + $1 (one-token replies), the model's reply $2 (worst $4), the judge's
    $6 (worst $8). A $10 cap lets the model's request go (2 + 4 <= 10) but not the judge's (4 + 8 > 10)."""
    with FakeLLM(default=within(judged_reply)) as srv:
        stopped = run_in_process(judged(srv.base_url, tmp_path / "a", "budget.max_usd=10", "benchmark.limit=1"),
                                 tmp_path / "a")
        assert [b["model"] for b in srv.requests].count("judge1") == 1  # its preflight only
        assert stopped["stopped"] == "budget" and cost(stopped) == 4.0 and stopped["tasks"]["open_ended"]["n"] == 0
        srv.reset()
        done = run_in_process(judged(srv.base_url, tmp_path / "b", "budget.max_usd=12.5", "benchmark.limit=1"),
                              tmp_path / "b")
    assert "stopped" not in done and cost(done) == 1 + 1 + 2 + 6
    assert done["usage"]["judge1"]["cost_usd"] == 7.0 and done["usage"]["fake-model"]["cost_usd"] == 3.0


def test_an_extractor_reserves_too(tmp_path):
    """One sample: preflight $1 (model) + $1 (reader), the model's reply $1 (worst $4), the reader's $2 (worst
    $4). $7.50 fits everything ($5 spent); at $6.50 the reader's request (3 + 4) does not fit."""
    rules = [(ASKED, within('{"letters": ["B"]}'))]
    with FakeLLM(default=within("Hmm."), rules=rules) as srv:
        done = run_in_process(extracted(srv.base_url, tmp_path / "a", "budget.max_usd=7.5", "benchmark.limit=1",
                                        "benchmark.num_fewshot=0"), tmp_path / "a")
        assert "stopped" not in done and cost(done) == 5.0 and done["tasks"][MCQ]["counts"]["read_by_extractor"] == 1
        stopped = run_in_process(extracted(srv.base_url, tmp_path / "b", "budget.max_usd=6.5", "benchmark.limit=1",
                                           "benchmark.num_fewshot=0"), tmp_path / "b")
    assert stopped["stopped"] == "budget" and cost(stopped) == 3.0 and stopped["tasks"][MCQ]["n"] == 0


@pytest.mark.parametrize("setup", ["judged-1", "judged-16", "judged-16-faults", "extracted-16", "judged-workers"])
@pytest.mark.parametrize("cap", [9.5, 37.25, 83.0])
def test_no_configuration_ends_above_its_cap(tmp_path, setup, cap):
    """Samples in flight at once, judges and extractors interleaved, retries and 429s, two processes: what
    results.json reports is never above the cap, and a run that stopped could not have sent its next request."""
    faults = ["500", "429"] if "faults" in setup else []
    concurrency = 1 if setup == "judged-1" else 16
    extra = ("budget.max_usd=" + str(cap), "model.backoff=0.01", "benchmark.limit=12")
    with FakeLLM(default=within(judged_reply if setup.startswith("judged") else "Hmm."), faults=faults,
                 rules=[(ASKED, within('{"letters": ["B"]}'))]) as srv:
        if setup.startswith("judged"):
            args = judged(srv.base_url, tmp_path / "run", *extra, *(["workers=2"] if "workers" in setup else []),
                          concurrency=concurrency)
        else:
            args = extracted(srv.base_url, tmp_path / "run", *extra, f"model.concurrency={concurrency}")
        results = run_in_process(args, tmp_path / "run")
    spent = cost(results)
    assert spent <= cap
    if results.get("stopped") == "budget":
        assert cap - spent < 8.0, "stopped only when the largest worst case ($8, a judge) no longer fit"


def test_a_reply_with_impossible_token_counts_keeps_its_reservation_as_spent(tmp_path):
    """Its cost is unknown (null in results.json): the budget counts the $4 reserved for it, so a $9 cap lets
    two requests go, not nine."""
    with FakeLLM(default=within("B"), usage={"completion_tokens": -5}) as srv:
        results = run_in_process(mcq(srv.base_url, tmp_path / "run", "budget.max_usd=9"), tmp_path / "run")
        assert srv.count == 2
    assert results["stopped"] == "budget" and results["totals"]["cost_usd"] is None


def test_an_earlier_invocation_of_unknown_cost_cannot_be_budgeted(tmp_path):
    run_dir = tmp_path / "run"
    with FakeLLM(default=within("B")) as srv:
        unpriced = [a for a in mcq(srv.base_url, run_dir, "benchmark.limit=2") if not a.startswith("model.pricing")]
        run_in_process(unpriced, run_dir)
        with pytest.raises(ConfigError, match="spent an unknown amount.*fake-model"):
            run_in_process(mcq(srv.base_url, run_dir, "budget.max_usd=100"), run_dir)
        assert srv.count == 2


# ------------------------------------------------------------------------------- the command line


def test_cli_a_budget_stop_is_exit_4_with_one_line_and_a_rerun_with_a_larger_cap_resumes(tmp_path):
    with FakeLLM(default=within("B")) as srv:
        proc = cli(mcq(srv.base_url, tmp_path / "run", "budget.max_usd=7.5"), timeout=120)
        assert proc.returncode == 4, proc.stderr
        assert "budget.max_usd=7.5 reached" in one_line_error(proc) and "to go on" in proc.stderr
        assert srv.count == 4
        results = json.loads((tmp_path / "run" / "results.json").read_text())
        assert results["stopped"] == "budget" and results["totals"]["cost_usd"] == 4.0
        proc = cli(mcq(srv.base_url, tmp_path / "run", "budget.max_usd=20"), timeout=120)
        assert proc.returncode == 0, proc.stderr
    resumed = json.loads((tmp_path / "run" / "results.json").read_text())
    assert "stopped" not in resumed and resumed["tasks"][MCQ]["n"] == 13 and resumed["totals"]["cost_usd"] == 13.0


def test_cli_an_endpoint_without_a_price_or_max_tokens_stops_before_any_request_naming_the_keys(tmp_path):
    with FakeLLM(default=within(judged_reply)) as srv:
        args = judged(srv.base_url, tmp_path / "run", "budget.max_usd=5", "~model.params.max_tokens",
                      "~benchmark.specs.open_ended.params.max_tokens", "~params.max_tokens")
        args = [a.replace(f",pricing:{DOLLAR_A_TOKEN}", "") if a.startswith("judges.panel") else a for a in args]
        proc = cli(args, timeout=60)
        assert proc.returncode == 2
        line = one_line_error(proc)
        assert "fake-model has no max_tokens" in line and "model.params.max_tokens" in line
        assert "params.max_tokens=N for the whole run" in line
        assert "judge1 has no known price" in line and "judges.panel[0].pricing" in line
        assert srv.count == 0
    assert not (tmp_path / "run" / "samples").exists()


def test_cli_every_job_of_a_sweep_keeps_its_own_cap(tmp_path):
    sweep = tmp_path / "sweep"
    with FakeLLM(default=within("B")) as srv:
        args = [a for a in mcq(srv.base_url, tmp_path / "unused", "budget.max_usd=5.5", concurrency=16)
                if not a.startswith(("hydra.run.dir", "model.name="))]
        proc = cli(["-m", "model.name=a,b", f"hydra.sweep.dir={sweep}", *args], timeout=180)
        assert proc.returncode != 0 and "Traceback" not in proc.stderr
        assert srv.count == 2 * 2  # worst $4, real $1: 2 replies per job fit in $5.50
    jobs = sorted(sweep.glob("*/results.json"))
    assert len(jobs) == 2
    for path in jobs:
        results = json.loads(path.read_text())
        assert results["stopped"] == "budget" and results["totals"]["cost_usd"] == 2.0 <= 5.5
