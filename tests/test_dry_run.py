"""dry_run=true against the fake server: the plan counts exactly the requests the run then sends (EVE with two
judges, win rate in one and both orders, a resumed run dir), prices them, sends nothing and writes only
plan.json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import TESTS, cli, model_overrides, panel_override, read_jsonl, run_in_process, run_overrides

from runner.models.litellm_model import count_tokens
from runner.run.build import PREFLIGHT

JUDGED = ("open_ended", "open_ended_w_context", "refusal")
"""The EVE tasks graded by the judge panel."""
JUDGE_CAP = 64
"""max_tokens of each judge (its entry's own: a task's params are the model's, never a judge's)."""
TASK_CAP = {"mcqa_single_answer": 64, "mcqa_multiple_answers": 64, "open_ended": 1024, "open_ended_w_context": 1024,
            "refusal": 512, "hallucination_detection": 32}
"""max_tokens of each EVE task (conf/task/eve/*.yaml): they win over the model entry's 1024
(conf/model/openai-compatible.yaml), whose temperature 0.0 the tasks leave as it is."""
PRE = 1
"""The preflight's request to each endpoint a run with judges calls (`preflight=true`, the default): one
`max_tokens: 1` request before the samples, counted by the plan as the run sends it."""
WIN_RATE = TESTS / "fixtures" / "win_rate"
MUGEN = TESTS / "fixtures" / "mugen" / "predictions"


ENTRY = {"max_retries": 0, "timeout": 5}
JUDGE = {**ENTRY, "params": {"max_tokens": JUDGE_CAP}}
"""The fields of the model's entry and of each judge's: judges write at most JUDGE_CAP."""


def entries(base_url: str, judges: int) -> list[str]:
    """The model under test and `judges` judges, all on the fake server."""
    return [*model_overrides(base_url, **ENTRY), panel_override(base_url, judges, **JUDGE)]


def eve(base_url: str, run_dir: Path, *extra: str, judges: int = 2, model: str = "openai/fake-model",
        pricing: dict[str, float] | None = None, judge_pricing: dict[str, float] | None = None) -> list[str]:
    """A run of EVE's sample, the preflight on (PRE): a plan counts it as the run sends it."""
    return run_overrides(base_url, run_dir, *extra, judges=judges, preflight=True,
                         model_fields={"model": model, **ENTRY, "pricing": pricing},
                         judge_fields={**JUDGE, "pricing": judge_pricing})


def win_rate(base_url: str, run_dir: Path, *extra: str) -> list[str]:
    return ["benchmark=win_rate", f"benchmark.model_a=[{{name:x,file:'{WIN_RATE / 'model_x.csv'}'}}]",
            f"benchmark.model_b=[{{name:y,file:'{WIN_RATE / 'model_y.csv'}'}}]",
            panel_override(base_url, 2, **JUDGE),
            "tracker=none", "cache.enabled=false", "progress=false", f"hydra.run.dir={run_dir}", *extra]


def dry(overrides: list[str], run_dir: Path) -> dict[str, Any]:
    """A dry run in this process: its plan, checked against the plan.json it wrote."""
    out = run_in_process([*overrides, "dry_run=true"], run_dir)
    plan = out["plan"]
    assert json.loads((run_dir / "plan.json").read_text(encoding="utf-8")) == plan
    assert set(plan) == {"tasks", "endpoints", "total_cost_usd"}
    for block in plan["endpoints"].values():
        assert set(block) == {"requests", "input_tokens", "output_tokens_max", "cost_usd"}
    return plan


def files_in(run_dir: Path) -> set[str]:
    return {str(p.relative_to(run_dir)) for p in run_dir.rglob("*")}


def requests_sent(results: dict[str, Any]) -> dict[str, int]:
    return {name: usage["requests"] for name, usage in results["usage"].items()}


# --------------------------------------------------------------------------- EVE: model and two judges


def test_eve_plan_counts_every_request_and_prompt_token_the_run_then_sends(fake_llm, tmp_path, capsys):
    run_dir = tmp_path / "run"
    plan = dry(eve(fake_llm.base_url, run_dir), run_dir)
    assert fake_llm.count == 0, "a dry run sends no request"
    assert files_in(run_dir) == {"plan.json"}, "a dry run writes plan.json and nothing else"

    samples = {t: b["samples"] for t, b in plan["tasks"].items()}
    judged = sum(samples[t] for t in JUDGED)
    model, j1, j2 = (plan["endpoints"][n] for n in ("fake-model", "judge1", "judge2"))
    assert model["requests"] == sum(samples.values()) + PRE and judged > 0
    assert j1["requests"] == j2["requests"] == judged + PRE, "one call per judge per judged sample"
    assert model["output_tokens_max"] == sum(TASK_CAP[t] * n for t, n in samples.items()) + PRE, \
        "each task's max_tokens wins over the entry's"
    assert {t: b["params"] for t, b in plan["tasks"].items()} == \
        {t: {"temperature": 0.0, "max_tokens": cap} for t, cap in TASK_CAP.items()}
    assert j1["output_tokens_max"] == JUDGE_CAP * judged + PRE
    # The judges' prompts hold the model's reply, counted as its max_tokens (an estimate, said in the plan).
    assert j1["input_tokens"] > sum(TASK_CAP[t] * samples[t] for t in JUDGED)
    printed = capsys.readouterr().out
    assert "nothing was sent" in printed and "estimate" in printed and "~" in printed
    assert "no known price for fake-model" in printed and "(preflight)" in printed
    # openai/fake-model and the judges have no price: unknown, never 0.
    assert model["cost_usd"] is None and plan["total_cost_usd"] is None

    results = run_in_process(eve(fake_llm.base_url, run_dir), run_dir)
    assert requests_sent(results) == {n: b["requests"] for n, b in plan["endpoints"].items()}
    assert fake_llm.count == sum(b["requests"] for b in plan["endpoints"].values())
    assert {t: b["n"] for t, b in results["tasks"].items()} == samples
    # The model's input tokens are those of the very prompts the run sent (kept in the samples files).
    sent = [r for t in samples for r in read_jsonl(run_dir / "samples" / f"{t}.jsonl")]
    assert model["input_tokens"] == sum(count_tokens("openai/fake-model", r["prompt"]) for r in sent) + \
        count_tokens("openai/fake-model", list(PREFLIGHT))


def test_a_partial_run_dir_is_planned_for_its_unfinished_samples_only(fake_llm, tmp_path):
    run_dir = tmp_path / "run"
    first = run_in_process(eve(fake_llm.base_url, run_dir, "benchmark.limit=3"), run_dir)
    assert all(b["n"] == 3 for b in first["tasks"].values())
    full = dry(eve(fake_llm.base_url, tmp_path / "fresh"), tmp_path / "fresh")
    fake_llm.reset()
    before = files_in(run_dir)

    plan = dry(eve(fake_llm.base_url, run_dir), run_dir)
    assert fake_llm.count == 0
    assert files_in(run_dir) == before | {"plan.json"}
    assert plan["tasks"] == {t: {**b, "samples": b["samples"] - 3} for t, b in full["tasks"].items()}
    left = sum(b["samples"] for b in plan["tasks"].values())
    judged = sum(plan["tasks"][t]["samples"] for t in JUDGED)
    assert plan["endpoints"]["fake-model"]["requests"] == left + PRE
    assert plan["endpoints"]["judge1"]["requests"] == plan["endpoints"]["judge2"]["requests"] == judged + PRE

    run_in_process(eve(fake_llm.base_url, run_dir), run_dir)
    from runner.run.invocations import read_invocations  # results.json's usage adds up every invocation

    last = read_invocations(run_dir)[-1]["usage"]
    assert {n: u["requests"] for n, u in last.items()} == {n: b["requests"] for n, b in plan["endpoints"].items()}


def test_rejudging_plans_no_model_request_and_judge_prompts_with_the_recorded_replies(fake_llm, tmp_path):
    src, again = tmp_path / "src", tmp_path / "again"
    run_in_process(eve(fake_llm.base_url, src, "benchmark.tasks=[open_ended]"), src)
    fake_llm.reset()
    args = eve(fake_llm.base_url, again, "benchmark.tasks=[open_ended]", f"rejudge={src}")
    plan = dry(args, again)
    n = plan["tasks"]["open_ended"]["samples"]
    assert plan["endpoints"]["fake-model"] == {"requests": 0, "input_tokens": 0, "output_tokens_max": 0,
                                              "cost_usd": 0.0}
    # The replies are known: the judges' prompts are counted as sent, not with the model's max_tokens.
    assert plan["endpoints"]["judge1"]["requests"] == n + PRE, "the replayed model gets no preflight"
    assert plan["endpoints"]["judge1"]["input_tokens"] < TASK_CAP["open_ended"] * n
    results = run_in_process(args, again)
    assert requests_sent(results) == {name: b["requests"] for name, b in plan["endpoints"].items()}


# --------------------------------------------------------------------------- win rate: one or both orders


@pytest.mark.parametrize("orders, calls", [("one", 1), ("both", 2)])
def test_win_rate_plans_one_call_per_judge_per_order(fake_llm, tmp_path, orders, calls):
    run_dir = tmp_path / orders
    plan = dry(win_rate(fake_llm.base_url, run_dir, f"benchmark.orders={orders}"), run_dir)
    assert fake_llm.count == 0 and files_in(run_dir) == {"plan.json"}
    (task, block), = plan["tasks"].items()
    assert task == "x_vs_y" and block["samples"] == 5
    assert set(plan["endpoints"]) == {"judge1", "judge2"}, "no model under test"
    for judge in plan["endpoints"].values():
        assert judge["requests"] == calls * 5 + PRE
        assert judge["output_tokens_max"] == calls * 5 * JUDGE_CAP + PRE
    results = run_in_process(win_rate(fake_llm.base_url, run_dir, f"benchmark.orders={orders}"), run_dir)
    assert requests_sent(results) == {n: b["requests"] for n, b in plan["endpoints"].items()}


def test_both_orders_double_the_tokens_of_one_order(fake_llm, tmp_path):
    one = dry(win_rate(fake_llm.base_url, tmp_path / "one", "benchmark.orders=one"), tmp_path / "one")
    both = dry(win_rate(fake_llm.base_url, tmp_path / "both", "benchmark.orders=both"), tmp_path / "both")
    for name in ("judge1", "judge2"):
        # The two orders show the same answers, so the prompts are about as long as each other.
        assert both["endpoints"][name]["input_tokens"] == pytest.approx(
            2 * one["endpoints"][name]["input_tokens"], rel=0.05)


def test_mugen_predictions_are_judged_as_planned_and_a_reply_naming_no_option_is_not_sent(fake_llm, tmp_path):
    run_dir = tmp_path / "run"
    args = [*entries(fake_llm.base_url, 1), "benchmark=mugen", f"benchmark.prediction_dir={MUGEN}", "tracker=none",
            "cache.enabled=false", "progress=false", f"hydra.run.dir={run_dir}"]
    plan = dry(args, run_dir)
    assert fake_llm.count == 0 and set(plan["endpoints"]) == {"judge1"}
    samples = sum(b["samples"] for b in plan["tasks"].values())
    assert 0 < plan["endpoints"]["judge1"]["requests"] - PRE < samples, "null replies are never sent to the judge"
    results = run_in_process(args, run_dir)
    assert requests_sent(results) == {"judge1": plan["endpoints"]["judge1"]["requests"]}


# --------------------------------------------------------------------------- cost


def test_cost_is_each_requests_input_and_most_output_at_the_entry_pricing(fake_llm, tmp_path, capsys):
    run_dir = tmp_path / "run"
    plan = dry(eve(fake_llm.base_url, run_dir, pricing={"input_per_mtok": 2.0, "output_per_mtok": 8.0},
                   judge_pricing={"input_per_mtok": 0.5, "output_per_mtok": 1.5}), run_dir)
    ends = plan["endpoints"]
    model = ends["fake-model"]
    assert model["cost_usd"] == pytest.approx((2.0 * model["input_tokens"] + 8.0 * model["output_tokens_max"]) / 1e6)
    for judge in ("judge1", "judge2"):
        b = ends[judge]
        assert b["cost_usd"] == pytest.approx((0.5 * b["input_tokens"] + 1.5 * b["output_tokens_max"]) / 1e6)
    assert plan["total_cost_usd"] == pytest.approx(sum(b["cost_usd"] for b in ends.values()))
    printed = capsys.readouterr().out
    low = 2.0 * model["input_tokens"] / 1e6
    assert f"${low:.3g} - ${model['cost_usd']:.3g}" in printed, "the range [input cost, input + most output]"
    assert fake_llm.count == 0


def test_a_model_litellm_prices_is_priced_without_pricing_and_an_unknown_judge_makes_the_total_unknown(
        fake_llm, tmp_path):
    run_dir = tmp_path / "run"
    plan = dry(eve(fake_llm.base_url, run_dir, "benchmark.tasks=[open_ended]", model="openai/gpt-4o-mini"),
               run_dir)
    model = plan["endpoints"]["fake-model"]
    # litellm's prices for gpt-4o-mini: $0.15 in, $0.60 out per million tokens.
    assert model["cost_usd"] == pytest.approx((0.15 * model["input_tokens"] + 0.6 * model["output_tokens_max"]) / 1e6)
    assert plan["endpoints"]["judge1"]["cost_usd"] is None and plan["total_cost_usd"] is None


def test_an_entry_without_max_tokens_has_no_output_bound_and_no_cost_bound(fake_llm, tmp_path):
    run_dir = tmp_path / "run"
    plan = dry(eve(fake_llm.base_url, run_dir, "benchmark.tasks=[open_ended]", "~model.params.max_tokens",
                   pricing={"input_per_mtok": 1.0, "output_per_mtok": 1.0}), run_dir)
    model = plan["endpoints"]["fake-model"]
    # The task's own max_tokens (1024 for open_ended) then bounds the reply.
    assert model["output_tokens_max"] == 1024 * plan["tasks"]["open_ended"]["samples"] + PRE
    plan = dry(eve(fake_llm.base_url, run_dir, "benchmark.tasks=[open_ended]", "~model.params.max_tokens",
                   "~benchmark.specs.open_ended.params.max_tokens",
                   pricing={"input_per_mtok": 1.0, "output_per_mtok": 1.0}), run_dir)
    model = plan["endpoints"]["fake-model"]
    assert model["output_tokens_max"] is None and model["cost_usd"] is None and model["input_tokens"] > 0


# --------------------------------------------------------------------------- the command line and sweeps


def test_cli_dry_run_sweep_writes_a_plan_per_job_and_nothing_else(fake_llm, tmp_path):
    from runner.run.plan_report import sweep_plan

    sweep = tmp_path / "sweep"
    proc = cli(["-m", *win_rate(fake_llm.base_url, tmp_path / "unused"), "benchmark.orders=one,both",
                "dry_run=true", f"hydra.sweep.dir={sweep}"])
    assert proc.returncode == 0, proc.stderr
    assert "nothing was sent" in proc.stdout
    assert fake_llm.count == 0
    jobs = sorted(p for p in sweep.iterdir() if p.is_dir() and p.name != "report")
    assert len(jobs) == 2
    for job in jobs:  # (the log file is Hydra's, written when the benchmark logs how it paired the files)
        assert files_in(job) - {"runner.log"} == {"plan.json"}, "no .hydra, samples or results"
    total = sweep_plan(sweep)
    assert total is not None and total["jobs"] == 2
    assert total["tasks"] == {"x_vs_y": {"samples": 10}}
    assert total["endpoints"]["judge1"]["requests"] == 5 + 10 + 2 * PRE
    assert total["total_cost_usd"] is None  # openai/judge1 has no price


def test_a_dry_run_sweep_plans_every_job_and_prints_the_total(fake_llm, tmp_path):
    sweep = tmp_path / "sweep"
    args = [a for a in eve(fake_llm.base_url, tmp_path / "unused", "benchmark.tasks=[mcqa_single_answer]",
                           pricing={"input_per_mtok": 1, "output_per_mtok": 2})
            if not a.startswith(("hydra.run.dir", "model.name="))]
    proc = cli(["-m", "model.name=fake-a,fake-b", "dry_run=true", f"hydra.sweep.dir={sweep}", *args], timeout=120)
    assert proc.returncode == 0, proc.stderr
    plans = sorted(sweep.rglob("plan.json"))
    assert len(plans) == 2 and fake_llm.count == 0, proc.stdout + proc.stderr
    assert "Sweep plan: 2 job(s)" in proc.stdout
    assert not (sweep / "report" / "comparison.csv").exists()  # nothing ran, so nothing to compare


def test_hydra_mode_multirun_as_an_override_still_sweeps(fake_llm, tmp_path):
    """The start-up skips Hydra's mode probe only where nothing but the runner's tree decides the mode;
    `hydra.mode=MULTIRUN` given on the command line (in place of -m) must still make a sweep."""
    sweep = tmp_path / "sweep"
    args = [a for a in eve(fake_llm.base_url, tmp_path / "unused", "benchmark.tasks=[mcqa_single_answer]",
                           pricing={"input_per_mtok": 1, "output_per_mtok": 2})
            if not a.startswith(("hydra.run.dir", "model.name="))]
    proc = cli(["hydra.mode=MULTIRUN", "model.name=fake-a,fake-b", "dry_run=true", f"hydra.sweep.dir={sweep}", *args],
               timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert len(sorted(sweep.rglob("plan.json"))) == 2 and fake_llm.count == 0, proc.stdout + proc.stderr


def test_a_task_type_written_outside_the_runner_gets_a_right_plan(fake_llm, tmp_path):
    # A user's task class (allow_code) that asks three times per sample says so in planned_calls: the plan
    # counts what the run then sends, with no edit to the runner.
    fake_llm.default = "4"
    bench = TESTS / "fixtures" / "yaml_bench"
    args = [f"hydra.searchpath=[file://{bench / 'conf'}]", f"benchmark.data_dir={bench / 'data'}", "benchmark=arith",
            "benchmark.specs.arithmetic._target_=my_scorers.AskThrice", "~benchmark.specs.arithmetic.fields",
            "~benchmark.specs.arithmetic.solver", "~benchmark.specs.arithmetic.scorers", "allow_code=[my_scorers]",
            "benchmark.num_fewshot=0", "model=openai-compatible", f"model.api_base={fake_llm.base_url}",
            "model.api_key=k", "judges=none", "tracker=none", "progress=false", "cache.enabled=false"]
    env = {"PYTHONPATH": str(TESTS / "fixtures" / "user_pkg")}
    planned = cli([*args, "dry_run=true", f"hydra.run.dir={tmp_path / 'plan'}"], env=env, timeout=120)
    assert planned.returncode == 0, planned.stderr
    plan = json.loads((tmp_path / "plan" / "plan.json").read_text())
    ran = cli([*args, f"hydra.run.dir={tmp_path / 'run'}"], env=env, timeout=120)
    assert ran.returncode == 0, ran.stderr
    rows = len((bench / "data" / "arithmetic.jsonl").read_text().splitlines())
    assert plan["endpoints"]["openai-compatible"]["requests"] == fake_llm.count == 3 * rows


def test_preflight_false_plans_and_sends_no_preflight_request(fake_llm, tmp_path):
    run_dir = tmp_path / "run"
    args = eve(fake_llm.base_url, run_dir, "benchmark.tasks=[open_ended]", "benchmark.limit=2", "preflight=false")
    plan = dry(args, run_dir)
    assert {n: b["requests"] for n, b in plan["endpoints"].items()} == {"fake-model": 2, "judge1": 2, "judge2": 2}
    results = run_in_process(args, run_dir)
    assert requests_sent(results) == {"fake-model": 2, "judge1": 2, "judge2": 2} and fake_llm.count == 6


def test_a_run_with_the_model_alone_gets_no_preflight(fake_llm, tmp_path):
    """The model's first sample proves its key as well as a preflight would: nothing is added."""
    run_dir = tmp_path / "run"
    args = eve(fake_llm.base_url, run_dir, "benchmark.tasks=[mcqa_single_answer]", "benchmark.limit=2")
    plan = dry(args, run_dir)
    assert {n: b["requests"] for n, b in plan["endpoints"].items()} == {"fake-model": 2}
    run_in_process(args, run_dir)
    assert fake_llm.count == 2
