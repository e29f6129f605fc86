"""A new numeric or judged benchmark is a YAML file, a prompt file and a data file: no Python, no edit
elsewhere. The fixtures in tests/fixtures/yaml_bench are copied to a temporary searchpath dir and run."""

from __future__ import annotations

import json
import shutil
import statistics
from pathlib import Path

import pytest
from conftest import JUDGE_CORRECT, JUDGE_INCORRECT, TESTS, cli, fake_model_overrides, one_line_error, read_jsonl

from runner.scorers.numeric import read_number

BENCH = TESTS / "fixtures" / "yaml_bench"


@pytest.fixture
def user_dir(tmp_path: Path) -> Path:
    shutil.copytree(BENCH, tmp_path / "mine")
    return tmp_path / "mine"


def run(url: str, user_dir: Path, run_dir: Path, *extra: str, env: dict[str, str] | None = None) -> dict:
    args = fake_model_overrides(url) + [
        f"hydra.searchpath=[file://{user_dir / 'conf'}]", f"benchmark.data_dir={user_dir / 'data'}",
        "tracker=none", "cache.enabled=false", f"hydra.run.dir={run_dir}", *extra]
    proc = cli(args, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads((run_dir / "results.json").read_text())


def calculator(body: dict) -> str:
    """A model that gets everything right except division, which it rounds."""
    question = body["messages"][-1]["content"].removeprefix("Compute: ")
    value = eval(question, {"__builtins__": {}})  # noqa: S307 - the fixture's own arithmetic
    if "/" in question:
        value = round(value)
    return f"Let me see. {question} = {value:,}"


def test_a_numeric_benchmark_from_yaml_alone(fake_llm, user_dir, tmp_path):
    fake_llm.default = calculator
    results = run(fake_llm.base_url, user_dir, tmp_path / "run", "benchmark=arith")
    block = results["tasks"]["arithmetic"]
    # Row 0 is the few-shot example; of the five scored rows only "10 / 4" (read as 2, not 2.5) fails.
    assert block["n"] == 5 and block["metrics"] == {"accuracy": pytest.approx(4 / 5)}
    records = {r["id"]: r for r in read_jsonl(tmp_path / "run" / "samples" / "arithmetic.jsonl")}
    assert records[3]["answer"] == 1234.0 and records[1]["answer"] == 2.0 and records[4]["answer"] == -7.0
    sent = records[3]["prompt"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user"]
    assert sent[0]["content"].startswith("You are a careful calculator") and sent[2]["content"] == "4"
    assert sent[3]["content"] == "Compute: 1000 + 234"


def test_a_judged_benchmark_from_yaml_alone(fake_llm, user_dir, tmp_path):
    def reply(body: dict) -> str:
        text = body["messages"][-1]["content"]
        if "You grade answers" in text:
            # judge2 disagrees about Lima; both accept everything else.
            return JUDGE_INCORRECT if body["model"] == "judge2" and "Lima" in text else JUDGE_CORRECT
        return {"France": "Paris", "Japan": "Tokyo", "Kenya": "Mombasa", "Peru": "Lima"}[text.split()[-1][:-1]]

    fake_llm.default = reply
    args = [f"judges.panel=[{{name:judge1,model:openai/judge1,api_base:'{fake_llm.base_url}',api_key:k}},"
            f"{{name:judge2,model:openai/judge2,api_base:'{fake_llm.base_url}',api_key:k}}]"]
    results = run(fake_llm.base_url, user_dir, tmp_path / "run", "benchmark=capitals", *args)
    metrics = results["tasks"]["capitals"]["metrics"]
    # judge1 passes all 4 (even Mombasa: the scripted judges only look at Lima); judge2 fails Lima.
    assert metrics == pytest.approx({"llm_as_judge_judge1": 1.0, "llm_as_judge_judge2": 0.75,
                                     "llm_as_judge_avg": 0.875, "judge_voting": 0.75, "judge_agreement": 0.75})
    records = read_jsonl(tmp_path / "run" / "samples" / "capitals.jsonl")
    assert sorted(r["id"] for r in records) == ["c0", "c1", "c2", "c3"]
    assert all(len(r["judgements"]) == 2 and r["judgements"][0]["raw"] for r in records)


def test_a_missing_template_stops_the_run_before_any_request(fake_llm, user_dir, tmp_path):
    (user_dir / "data" / "arithmetic.j2").unlink()
    args = fake_model_overrides(fake_llm.base_url) + [
        f"hydra.searchpath=[file://{user_dir / 'conf'}]", f"benchmark.data_dir={user_dir / 'data'}",
        "benchmark=arith", "tracker=none", f"hydra.run.dir={tmp_path / 'run'}"]
    proc = cli(args, timeout=60)
    assert proc.returncode == 2
    assert "benchmark.specs.arithmetic.solver.user: template 'arithmetic.j2' not found" in one_line_error(proc)
    assert fake_llm.count == 0


def test_a_misspelt_eve_template_stops_the_run(fake_llm, tmp_path):
    proc = cli(fake_model_overrides(fake_llm.base_url) + [
        "benchmark.tasks=[open_ended]", "benchmark.specs.open_ended.solver.user=open_endd.j2", "tracker=none",
        f"hydra.run.dir={tmp_path / 'run'}"], timeout=60)
    assert proc.returncode == 2 and "open_endd.j2" in one_line_error(proc)
    assert fake_llm.count == 0


@pytest.mark.parametrize("reply, value", [
    ("42", 42.0), ("The answer is 42.", 42.0), ("-7", -7.0), ("1,234", 1234.0), ("x = 2.5 so the total is 2.5", 2.5),
    ("Answer: 1e3", 1000.0), (r"so $\boxed{17}$", 17.0), ("3 apples and 4 pears make 7", 7.0),
    ("The answer is 12, not 13.", 12.0), ("<think>maybe 5</think> 6", 6.0), ("no idea", None), ("", None),
    ("−3", -3.0), ("Final answer: **0.125**", 0.125),
])
def test_read_number(reply, value):
    assert read_number(reply) == value


def test_a_users_own_scorer_runs_only_when_its_package_is_allowed(fake_llm, user_dir, tmp_path):
    fake_llm.default = calculator
    scorer = "benchmark.specs.arithmetic.scorers=[{_target_:my_scorers.WordCount,limit:4}]"
    env = {"PYTHONPATH": str(TESTS / "fixtures" / "user_pkg")}
    args = fake_model_overrides(fake_llm.base_url) + [
        f"hydra.searchpath=[file://{user_dir / 'conf'}]", f"benchmark.data_dir={user_dir / 'data'}",
        "benchmark=arith", scorer, "tracker=none", "cache.enabled=false"]
    refused = cli(args + [f"hydra.run.dir={tmp_path / 'a'}"], env=env, timeout=60)
    assert refused.returncode == 2 and "allow_code=[my_scorers]" in one_line_error(refused)
    ok = cli(args + [f"hydra.run.dir={tmp_path / 'b'}", "allow_code=[my_scorers]"], env=env, timeout=60)
    assert ok.returncode == 0, ok.stderr
    # Every reply ("Let me see. 2 + 2 = 4") has 8 words: none is short enough.
    assert json.loads((tmp_path / "b" / "results.json").read_text())["tasks"]["arithmetic"]["metrics"] == {
        "short": 0.0}


def test_a_median_metric_has_its_own_interval_and_no_standard_error_of_the_mean(fake_llm, user_dir, tmp_path):
    fake_llm.default = calculator
    metrics = "+benchmark.specs.arithmetic.metrics=[mean:words,median:words]"
    results = run(fake_llm.base_url, user_dir, tmp_path / "run", "benchmark=arith", "allow_code=[my_scorers]",
                  "benchmark.specs.arithmetic.scorers=[{_target_:my_scorers.WordCount}]", metrics,
                  env={"PYTHONPATH": str(TESTS / "fixtures" / "user_pkg")})
    block = results["tasks"]["arithmetic"]
    words = sorted(len(calculator(body).split()) for body in fake_llm.requests)
    assert block["metrics"] == {"words": pytest.approx(sum(words) / len(words)),
                                "median_words": pytest.approx(statistics.median(words))}
    assert "words" in block["stderr"] and "median_words" not in block["stderr"]  # a median is no mean
    low, high = block["ci"]["median_words"]
    assert words[0] <= low <= statistics.median(words) <= high <= words[-1]
