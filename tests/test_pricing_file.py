"""`pricing_file=FILE` (CONTRACT "Packaging"): a litellm model-prices JSON file merged over litellm's map for the
run, used by accounting, dry runs and budgets; an entry's `pricing` still wins; a bad file is one line, exit 2.
Every figure below is hand-computed from the fake server's word counts and the file's prices."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import cli, one_line_error, run_in_process, run_overrides
from fake_llm import FakeLLM

from runner.models.litellm_model import _import_litellm

MODEL = "runner-test-unpriced-model"  # a model name litellm's own map has never heard of
IN, OUT = 2e-6, 5e-6  # USD per token, as litellm's file writes them


def words(text: str) -> int:
    return max(1, len(text.split()))


def overrides(url: str, run_dir: Path, *extra: str) -> list[str]:
    return run_overrides(url, run_dir, *extra, judges=0, tasks=["mcqa_single_answer"], limit=3, preflight=True,
                         model_fields={"name": "new", "model": f"openai/{MODEL}", "api_key": "k"})


@pytest.fixture
def price_file(tmp_path: Path) -> Path:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({
        "sample_spec": {"input_cost_per_token": 0, "note": "litellm's own files document their fields here"},
        MODEL: {"input_cost_per_token": IN, "output_cost_per_token": OUT, "litellm_provider": "openai",
                "mode": "chat"}}))
    return path


def billed(srv: FakeLLM) -> float:
    return sum(IN * words("\n".join(str(m["content"]) for m in body["messages"])) + OUT * words(srv.reply_for(body))
               for body in srv.requests)


def test_a_model_litellm_does_not_know_is_priced_from_the_file_and_only_for_that_run(fake_llm, tmp_path, price_file):
    litellm = _import_litellm()
    unknown = run_in_process(overrides(fake_llm.base_url, tmp_path / "a"), tmp_path / "a")
    assert unknown["usage"]["new"]["cost_usd"] is None and fake_llm.count == 3
    fake_llm.reset()
    priced = run_in_process(overrides(fake_llm.base_url, tmp_path / "b", f"pricing_file={price_file}"), tmp_path / "b")
    assert fake_llm.count == 3
    assert priced["usage"]["new"]["cost_usd"] == pytest.approx(billed(fake_llm), rel=1e-12)
    assert priced["totals"]["cost_usd"] == pytest.approx(billed(fake_llm), rel=1e-12)
    assert MODEL not in litellm.model_cost  # put back when the run ended


def test_the_file_merges_over_known_models_and_an_entrys_pricing_wins(fake_llm, tmp_path):
    litellm = _import_litellm()
    before = dict(litellm.model_cost["gpt-4o-mini"])
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"gpt-4o-mini": {"input_cost_per_token": IN}}))  # output price: litellm's
    args = overrides(fake_llm.base_url, tmp_path / "a", f"pricing_file={path}", "model.model=openai/gpt-4o-mini")
    merged = run_in_process(args, tmp_path / "a")
    expected = sum(IN * words("\n".join(str(m["content"]) for m in body["messages"]))
                   + before["output_cost_per_token"] * words(fake_llm.reply_for(body)) for body in fake_llm.requests)
    assert merged["usage"]["new"]["cost_usd"] == pytest.approx(expected, rel=1e-12)
    assert litellm.model_cost["gpt-4o-mini"] == before
    fake_llm.reset()
    own = run_in_process(overrides(fake_llm.base_url, tmp_path / "b", f"pricing_file={path}",
                                   "model.model=openai/gpt-4o-mini",
                                   "+model.pricing={input_per_mtok:1,output_per_mtok:1}"), tmp_path / "b")
    tokens = sum(words("\n".join(str(m["content"]) for m in body["messages"])) + words(fake_llm.reply_for(body))
                 for body in fake_llm.requests)
    assert own["usage"]["new"]["cost_usd"] == pytest.approx(tokens * 1e-6, rel=1e-12)


def test_dry_runs_and_budgets_use_the_file(fake_llm, tmp_path, price_file):
    refused = cli(overrides(fake_llm.base_url, tmp_path / "a", "budget.max_usd=1"), timeout=120)
    assert refused.returncode == 2 and "new" in one_line_error(refused)
    # In a process of its own: the file is read at build time and merged when litellm is first loaded.
    dry = cli(overrides(fake_llm.base_url, tmp_path / "b", f"pricing_file={price_file}", "dry_run=true"), timeout=120)
    assert dry.returncode == 0, dry.stderr
    plan = json.loads((tmp_path / "b" / "plan.json").read_text())
    endpoint = plan["endpoints"]["new"]
    assert endpoint["cost_usd"] == pytest.approx(endpoint["input_tokens"] * IN + endpoint["output_tokens_max"] * OUT,
                                                 rel=1e-9)
    assert fake_llm.count == 0
    spent = run_in_process(overrides(fake_llm.base_url, tmp_path / "c", f"pricing_file={price_file}",
                                     "budget.max_usd=1"), tmp_path / "c")
    assert spent["usage"]["new"]["cost_usd"] == pytest.approx(billed(fake_llm), rel=1e-12)


@pytest.mark.parametrize("content, says", [
    (None, "cannot read it"),
    ("{not json", "not JSON"),
    ("[1, 2]", "it must be an object"),
    (json.dumps({MODEL: 3}), f"'{MODEL}' is a int"),
    (json.dumps({MODEL: {"input_cost_per_token": -1}}), f"'{MODEL}'.input_cost_per_token is -1"),
    (json.dumps({MODEL: {"output_cost_per_token": "0.1"}}), "a price is a number"),
    (json.dumps({"sample_spec": {}}), "lists no model"),
])
def test_a_bad_file_is_one_line_before_any_request(fake_llm, tmp_path, content: Any, says: str):
    path = tmp_path / "prices.json"
    if content is not None:
        path.write_text(content)
    proc = cli(overrides(fake_llm.base_url, tmp_path / "run", f"pricing_file={path}"), timeout=120)
    assert proc.returncode == 2
    line = one_line_error(proc)
    assert f"pricing_file={path}" in line and says in line
    assert fake_llm.count == 0
