"""Issue 11: tasks neither print nor write files; the benchmark's reporters (named in its YAML) do. A contract
key a benchmark does not use stops the run when it is set, naming what the benchmark reads instead. And
`Usage` adds up, so no task sums token counts by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ROOT, cli, compose, one_line_error

from runner.benchmarks.base import Benchmark
from runner.benchmarks.mugen.reporter import MugenReporter
from runner.benchmarks.mugen.task import MugenTask
from runner.benchmarks.vakra.reporter import VakraReporter
from runner.benchmarks.vakra.task import DomainTask
from runner.benchmarks.win_rate.reporter import WinRateReporter
from runner.benchmarks.win_rate.task import PairwiseTask
from runner.config import instantiate
from runner.errors import ConfigError
from runner.outputs.reporter import Reporter
from runner.types import TaskResult, Usage

PAIR = ["benchmark=win_rate", "benchmark.model_a=[{name:x,file:a.csv}]", "benchmark.model_b=[{name:y,file:b.csv}]"]


@pytest.mark.parametrize(("benchmark", "reporter"), [
    (["benchmark=mugen"], MugenReporter), (["benchmark=vakra"], VakraReporter), (PAIR, WinRateReporter),
])
def test_each_benchmark_names_its_reporter_in_yaml(benchmark, reporter):
    built = instantiate(compose(benchmark).benchmark, "benchmark")
    assert isinstance(built, Benchmark)
    assert [type(r) for r in built.reporters] == [reporter]
    mine: Reporter = built.reporters[0]  # the protocol app.py calls
    assert callable(mine.report)


@pytest.mark.parametrize("task", [MugenTask, DomainTask, PairwiseTask])
def test_tasks_leave_files_and_console_lines_to_the_reporters(task):
    assert "finalize" not in vars(task) and "extras" not in vars(task)


def test_no_benchmark_module_prints():
    # fixture.py is a command-line tool that writes an offline data dir; it is never part of a run. A
    # benchmark's reporter.py prints its own lines, after aggregation: the one module that may.
    for package in ("mugen", "vakra", "win_rate"):
        for path in sorted((ROOT / "runner" / "benchmarks" / package).glob("*.py")):
            if path.name not in ("fixture.py", "reporter.py"):
                assert "print(" not in path.read_text(encoding="utf-8"), path


# --------------------------------------------------------------------------- keys a benchmark does not use


@pytest.mark.parametrize(("overrides", "message"), [
    (["benchmark=vakra", "benchmark.data_dir=/data"],
     r"benchmark.data_dir=/data: vakra reads benchmark.gt_root and benchmark.pred_root .*not data_dir"),
    (["benchmark=vakra", "benchmark.num_fewshot=0"], r"benchmark.num_fewshot=0: vakra .*leave num_fewshot null"),
    (["benchmark=mugen", "benchmark.num_fewshot=0"], r"benchmark.num_fewshot=0: mugen has no few-shot examples"),
    (["benchmark=mugen", "benchmark.num_fewshot=3"], r"benchmark.num_fewshot=3: mugen .*leave num_fewshot null"),
    ([*PAIR, "benchmark.data_dir=/data"],
     r"benchmark.data_dir=/data: win_rate reads the files named in benchmark.model_a and benchmark.model_b"),
    ([*PAIR, "benchmark.num_fewshot=2"], r"benchmark.num_fewshot=2: win_rate .*not num_fewshot; leave num_fewshot"),
    ([*PAIR, "+benchmark.specs.mine={_target_:runner.benchmarks.win_rate.task.PairwiseTask}"],
     r"benchmark.specs=.*win_rate .*not specs; leave specs empty"),
])
def test_a_key_the_benchmark_does_not_use_is_a_config_error_naming_what_it_uses(overrides, message):
    with pytest.raises(ConfigError, match=message):
        instantiate(compose(overrides).benchmark, "benchmark")


def test_the_defaults_leave_those_keys_unset_and_build():
    for overrides in (["benchmark=vakra"], ["benchmark=mugen"], PAIR):
        instantiate(compose(overrides).benchmark, "benchmark")


def test_the_cli_stops_with_exit_2_and_one_line(tmp_path):
    proc = cli(["benchmark=vakra", "benchmark.data_dir=/data", "tracker=none", f"hydra.run.dir={tmp_path / 'run'}"],
               timeout=120)
    assert proc.returncode == 2
    assert one_line_error(proc).startswith("error: benchmark.data_dir=/data: vakra reads benchmark.gt_root")
    assert not (tmp_path / "run" / "results.json").exists()


# --------------------------------------------------------------------------- reporters on their own


def test_the_mugen_reporter_writes_the_mugen_shape_and_prints_mugens_lines(tmp_path, capsys):
    bench = instantiate(compose(["benchmark=mugen", "benchmark.tasks=[Keyword_Spotting]"]).benchmark, "benchmark")
    (task,) = bench.build_tasks()
    task.order = [7, 8]
    source = {"id": 7, "instruction": "Which clip says 'lantern'?", "answer": "(A)", "response": "(A)"}
    records = [{"id": 7, "status": "invalid", "extra": {"input": source, "Explanation": "??", "Judgement": "??"}},
               {"id": 8, "status": "error", "error": "call failed", "extra": {}}]
    result = TaskResult(n=2, n_invalid=1, invalid_ids=[7], metrics={"accuracy": 0.0}, n_errors=1, error_ids=[8])
    assert MugenReporter().report([task], {task.name: records}, {task.name: result}, tmp_path) is None
    judged = json.loads((tmp_path / "Keyword_Spotting" / "llm_judge_results.json").read_text(encoding="utf-8"))
    assert judged == [{**source, "Explanation": "??", "Judgement": "??"}]  # the failed generation has no reply
    predictions = json.loads((tmp_path / "predictions" / "Keyword_Spotting" / "output.json").read_text())
    assert predictions == [source]
    assert capsys.readouterr().out.splitlines() == [
        "Task: Keyword_Spotting | Accuracy: 0.00% (0/1)",
        "Invalid judgements for IDs: [7]",
        "Not judged (errors, see samples/Keyword_Spotting.jsonl) for IDs: [8]",
        "Dimension: Semantics & Pragmatics (S&P) | Accuracy: 0.00% (0/1)",
        "Overall | Accuracy: 0.00% (0/1)",
    ]


def test_reporters_skip_what_is_not_theirs(tmp_path, capsys):
    assert WinRateReporter().report([], {}, {}, tmp_path) is None
    assert VakraReporter().report([], {}, {}, tmp_path) is None
    assert list(Path(tmp_path).iterdir()) == [] and capsys.readouterr().out == ""


# --------------------------------------------------------------------------- Usage


def test_usage_adds_field_by_field_and_is_cached_only_when_both_are():
    a = Usage(prompt_tokens=10, completion_tokens=2, cost=0.5, cached=True, retries=1)
    b = Usage(prompt_tokens=3, completion_tokens=4, cost=0.25, cached=False, retries=2)
    assert a + b == Usage(prompt_tokens=13, completion_tokens=6, cost=0.75, cached=False, retries=3)
    assert a + a == Usage(prompt_tokens=20, completion_tokens=4, cost=1.0, cached=True, retries=2)
    assert sum([b, a], start=Usage(cached=True)) == a + b
