"""A failure that every sample and every re-run would repeat (the install, not the sample) stops the run at
once with one line naming the packages involved (issue 28, point 5); a failure of one sample's data stays
that sample's error. Runs against the real fake server, with the user's scorers in a real package."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ROOT, TESTS, cli, fake_model_overrides, one_line_error, read_jsonl

from runner.errors import BrokenInstall, repeating_fault
from runner.run.invocations import closing_line

BENCH = ROOT / "tests" / "fixtures" / "yaml_bench"


def arith(url: str, run_dir: Path, scorer: str) -> list[str]:
    return fake_model_overrides(url) + [
        f"hydra.searchpath=[file://{BENCH / 'conf'}]", f"benchmark.data_dir={BENCH / 'data'}",
        "benchmark=arith", f"benchmark.specs.arithmetic.scorers=[{{_target_:my_scorers.{scorer}}}]",
        "allow_code=[my_scorers]", "benchmark.num_fewshot=0", "tracker=none", "cache.enabled=false", "progress=false",
        f"hydra.run.dir={run_dir}"]


def test_a_missing_package_stops_the_run_at_the_first_sample_naming_versions(fake_llm, tmp_path):
    fake_llm.default = "4"
    proc = cli(arith(fake_llm.base_url, tmp_path / "run", "NeedsAPackage") + ["model.concurrency=1"],
               env={"PYTHONPATH": str(TESTS / "fixtures" / "user_pkg")}, timeout=120)
    assert proc.returncode == 1
    line = one_line_error(proc)
    assert "ModuleNotFoundError: No module named 'a_package_that_is_not_installed'" in line
    assert "runner 0.1.0" in line and "every re-run" in line and "re-run with hydra.run.dir" not in line
    assert not (tmp_path / "run" / "results.json").exists()
    rows = len((BENCH / "data" / "arithmetic.jsonl").read_text().splitlines())
    assert 1 <= fake_llm.count < rows  # stopped at the first sample scored, not after asking every one


def test_one_rows_bad_data_is_that_samples_error_and_the_run_goes_on(fake_llm, tmp_path):
    fake_llm.default = "4"
    proc = cli(arith(fake_llm.base_url, tmp_path / "run", "ReadsAField"),
               env={"PYTHONPATH": str(TESTS / "fixtures" / "user_pkg")}, timeout=120)
    records = read_jsonl(tmp_path / "run" / "samples" / "arithmetic.jsonl")
    errors = [r for r in records if r["status"] == "error"]
    questions = [json.loads(line) for line in (BENCH / "data" / "arithmetic.jsonl").read_text().splitlines()]
    divisions = [q for q in questions if "/" in json.dumps(q)]
    assert len(errors) == len(divisions) >= 1 and len(records) == len(questions)
    assert all("AttributeError" in r["error"] for r in errors)
    assert proc.returncode == 1 and "re-run with hydra.run.dir" in one_line_error(proc)


def _raised(fn) -> BaseException:  # type: ignore[no-untyped-def]
    try:
        fn()
    except BaseException as exc:  # noqa: BLE001 - the test looks at what was raised
        return exc
    raise AssertionError("nothing raised")


def test_what_counts_as_the_installs_fault():
    import json as a_module

    def missing_name():
        return a_module.no_such_helper  # type: ignore[attr-defined]

    def renamed_argument():
        return a_module.dumps({}, no_such_option=True)

    fault = repeating_fault(_raised(missing_name))
    assert isinstance(fault, BrokenInstall) and fault.exit_code == 1 and "no_such_helper" in str(fault)
    assert repeating_fault(_raised(renamed_argument)) is not None
    assert repeating_fault(_raised(lambda: __import__("a_package_that_is_not_installed"))) is not None
    # The data's fault, not the install's: the sample's own error.
    assert repeating_fault(_raised(lambda: "text".numerator)) is None  # type: ignore[attr-defined]
    assert repeating_fault(_raised(lambda: int("x"))) is None
    assert repeating_fault(_raised(lambda: {}["k"])) is None
    assert repeating_fault(_raised(lambda: 1 + "1")) is None  # type: ignore[operator]


@pytest.mark.parametrize("cached, line", [(0, "0 requests sent · 0 tokens · no cost"),
                                          (3, "0 requests sent · 3 from the cache · 0 tokens · $0.00")])
def test_a_run_that_asked_nothing_says_so_instead_of_a_price(cached, line):
    # cached replies' tokens are not spent again: prompt_tokens counts the requests sent only
    results = {"totals": {"requests": 0, "cached_requests": cached, "prompt_tokens": 0,
                          "completion_tokens": 0, "cost_usd": 0.0}}
    assert closing_line(results) == f"done: results.json · {line}"
