"""Request params, on the fake server: the model entry's, under a task's (EVE MCQ's max_tokens 64), under the
run's `params.<key>=value`; judges keep their entries' own. A value a task requires that the run contradicts
stops the run before any request; results.json and plan.json show each task's effective params; a resume with
other params is refused by the fingerprint check; worker processes send the same params.

Expected values are read off the shipped YAML: conf/model/openai-compatible.yaml sends temperature 0.0 and
max_tokens 1024; conf/task/eve/*.yaml set max_tokens 64 (both MCQ tasks), 32 (hallucination_detection), 1024
(open_ended, open_ended_w_context) and 512 (refusal)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from conftest import EVE_SAMPLE, JUDGE_CORRECT, TESTS, cli, fake_model_overrides, one_line_error, run_in_process

from runner.errors import ConfigError
from runner.tasks.task import Task

ENTRY = {"temperature": 0.0, "max_tokens": 1024}
"""conf/model/openai-compatible.yaml's params."""
TASK_CAP = {"mcqa_single_answer": 64, "mcqa_multiple_answers": 64, "hallucination_detection": 32,
            "open_ended": 1024, "open_ended_w_context": 1024, "refusal": 512}
JUDGE_PARAMS = {"temperature": 0.0, "max_tokens": 16}


class Requiring(Task):
    """A YAML task type written outside the runner that takes `requires:` (BaseTask.require_params)."""

    def __init__(self, name: str, requires: Mapping[str, Any] | None = None, **spec: Any) -> None:
        super().__init__(name, **spec)
        self.require_params(requires or {})


def reply(body: dict[str, Any]) -> str:
    return JUDGE_CORRECT if str(body["model"]).startswith("judge") else "B"


def eve(srv: Any, run_dir: Path, *extra: str, tasks: str = "[mcqa_single_answer]", limit: int = 2) -> list[str]:
    """The shipped openai-compatible entry on the fake server, one judge with its own params."""
    judge = (f"{{name:judge1,model:openai/judge1,api_base:'{srv.base_url}',api_key:test-key,max_retries:0,"
             f"timeout:5,params:{{temperature:0.0,max_tokens:16}}}}")
    return [a for a in fake_model_overrides(srv.base_url) if not a.startswith("judges.panel")] + [
        f"judges.panel=[{judge}]", "benchmark=eve", f"benchmark.data_dir={EVE_SAMPLE}", f"benchmark.tasks={tasks}",
        f"benchmark.limit={limit}", "tracker=none", "progress=false", "cache.enabled=false",
        f"hydra.run.dir={run_dir}", *extra]


def sent(srv: Any, who: str = "fake-model") -> Counter[tuple[Any, Any]]:
    """(temperature, max_tokens) of each request to `who`, counted."""
    return Counter((b.get("temperature"), b.get("max_tokens")) for b in srv.requests if b["model"] == who)


def task_params(run_dir: Path, name: str = "results.json") -> dict[str, Any]:
    blocks = json.loads((run_dir / name).read_text(encoding="utf-8"))["tasks"]
    return {task: block["params"] for task, block in blocks.items()}


def test_each_eve_task_sends_its_own_max_tokens_over_the_shipped_entry_and_judges_keep_theirs(fake_llm, tmp_path):
    fake_llm.default = reply
    run = tmp_path / "run"
    tasks = ("mcqa_single_answer", "hallucination_detection", "open_ended")
    results = run_in_process(eve(fake_llm, run, tasks=f"[{','.join(tasks)}]"), run)
    assert all(results["tasks"][t]["n"] == 2 for t in tasks)
    # Two samples each: MCQ at 64, hallucination_detection at 32, open_ended at 1024, all at the entry's 0.0.
    assert sent(fake_llm) == {(0.0, 64): 2, (0.0, 32): 2, (0.0, 1024): 2}
    assert sent(fake_llm, "judge1") == {(0.0, 16): 2}, "a task's params are the model's, never a judge's"
    assert task_params(run) == {t: {**ENTRY, "max_tokens": TASK_CAP[t]} for t in tasks}


def test_a_run_level_max_tokens_wins_for_every_task_in_the_plan_and_the_run(fake_llm, tmp_path):
    fake_llm.default = reply
    run = tmp_path / "run"
    every = f"[{','.join(TASK_CAP)}]"
    plan = run_in_process(eve(fake_llm, run, "params.max_tokens=4096", "dry_run=true", tasks=every, limit=1),
                          run)["plan"]
    assert fake_llm.count == 0
    expected = {t: {**ENTRY, "max_tokens": 4096} for t in TASK_CAP}
    assert {t: b["params"] for t, b in plan["tasks"].items()} == expected
    assert task_params(run, "plan.json") == expected
    assert plan["endpoints"]["fake-model"]["output_tokens_max"] == 4096 * len(TASK_CAP)
    assert plan["endpoints"]["judge1"]["output_tokens_max"] == 16 * 3, "three judged tasks, one sample each"

    run_in_process(eve(fake_llm, run, "params.max_tokens=4096", tasks=every, limit=1), run)
    assert sent(fake_llm) == {(0.0, 4096): len(TASK_CAP)}
    assert sent(fake_llm, "judge1") == {(0.0, 16): 3}
    assert task_params(run) == expected


def test_a_tasks_temperature_is_sent_and_the_runs_own_wins_over_it(fake_llm, tmp_path):
    fake_llm.default = reply
    hot = "+benchmark.specs.mcqa_single_answer.params.temperature=0.7"
    run_in_process(eve(fake_llm, tmp_path / "a", hot), tmp_path / "a")
    assert sent(fake_llm) == {(0.7, 64): 2}
    assert task_params(tmp_path / "a") == {"mcqa_single_answer": {"temperature": 0.7, "max_tokens": 64}}
    fake_llm.reset()
    run_in_process(eve(fake_llm, tmp_path / "b", hot, "params.temperature=0.2", "+params.top_p=0.5"), tmp_path / "b")
    assert Counter((b["temperature"], b["max_tokens"], b["top_p"]) for b in fake_llm.requests) == {(0.2, 64, 0.5): 2}
    assert task_params(tmp_path / "b") == {"mcqa_single_answer": {"temperature": 0.2, "max_tokens": 64,
                                                                  "top_p": 0.5}}


def requiring(srv: Any, run_dir: Path, *extra: str) -> list[str]:
    """MCQ as a task type that requires temperature 0.7 (its module, this file, is allowed code)."""
    return eve(srv, run_dir, "allow_code=[test_params]",
               "benchmark.specs.mcqa_single_answer._target_=test_params.Requiring",
               "+benchmark.specs.mcqa_single_answer.requires={temperature:0.7}", *extra)


def test_a_run_level_value_contradicting_a_required_one_stops_before_any_request(fake_llm, tmp_path):
    fake_llm.default = reply
    proc = cli(requiring(fake_llm, tmp_path / "run", "params.temperature=0.0"),
               env={"PYTHONPATH": str(TESTS)}, timeout=120)
    assert proc.returncode == 2, proc.stderr
    line = one_line_error(proc)
    assert "params.temperature=0.0" in line and "benchmark.specs.mcqa_single_answer.requires.temperature=0.7" in line
    assert fake_llm.count == 0
    assert not (tmp_path / "run" / "samples").exists()

    # The required value is sent over the entry's 0.0; a run-level value that agrees with it is no contradiction.
    for extra in ((), ("params.temperature=0.7",)):
        fake_llm.reset()
        run_in_process(requiring(fake_llm, tmp_path / f"ok{len(extra)}", *extra), tmp_path / f"ok{len(extra)}")
        assert sent(fake_llm) == {(0.7, 64): 2}


def test_a_task_contradicting_its_own_required_value_is_refused(fake_llm, tmp_path):
    with pytest.raises(ConfigError, match=r"params.temperature=0.1 contradicts requires.temperature=0.7") as info:
        run_in_process(requiring(fake_llm, tmp_path / "run", "+benchmark.specs.mcqa_single_answer.params."
                                 "temperature=0.1"), tmp_path / "run")
    assert info.value.exit_code == 2 and fake_llm.count == 0


def test_a_resume_with_another_run_level_temperature_is_refused_by_the_fingerprints(fake_llm, tmp_path):
    fake_llm.default = reply
    run = tmp_path / "run"
    run_in_process(eve(fake_llm, run, limit=3), run)
    # The entry's own 0.0 given again at run level changes no request: the records are kept.
    fake_llm.reset()
    run_in_process(eve(fake_llm, run, "params.temperature=0.0", limit=3), run)
    assert fake_llm.count == 0
    with pytest.raises(ConfigError, match="3 differ in the model under test") as info:
        run_in_process(eve(fake_llm, run, "params.temperature=0.5", limit=3), run)
    assert info.value.exit_code == 2 and fake_llm.count == 0
    run_in_process(eve(fake_llm, run, "params.temperature=0.5", "resume=refresh", limit=3), run)
    assert sent(fake_llm) == {(0.5, 64): 3}
    assert task_params(run) == {"mcqa_single_answer": {"temperature": 0.5, "max_tokens": 64}}


def test_two_worker_processes_send_the_params_one_process_sends(fake_llm, tmp_path):
    fake_llm.default = reply
    extra = ("params.max_tokens=4096", "+benchmark.specs.mcqa_multiple_answers.params.temperature=0.7")
    tasks = "[mcqa_single_answer,mcqa_multiple_answers]"
    expected = {(0.0, 4096): 6, (0.7, 4096): 6}
    for workers in (1, 2):
        fake_llm.reset()
        run = tmp_path / f"w{workers}"
        proc = cli(eve(fake_llm, run, f"workers={workers}", "model.concurrency=4", *extra, tasks=tasks, limit=6))
        assert proc.returncode == 0, proc.stderr
        assert ("in 2 worker processes" in proc.stdout) == (workers == 2)
        assert sent(fake_llm) == expected
        assert task_params(run) == {"mcqa_single_answer": {"temperature": 0.0, "max_tokens": 4096},
                                    "mcqa_multiple_answers": {"temperature": 0.7, "max_tokens": 4096}}


def test_params_is_a_map_and_takes_any_key_without_a_plus(fake_llm, tmp_path):
    fake_llm.default = reply
    run_in_process(eve(fake_llm, tmp_path / "a", "params.seed=11", limit=1), tmp_path / "a")
    assert [b["seed"] for b in fake_llm.requests] == [11]
    with pytest.raises(ConfigError, match=r"params: 5 is no map of request params; .*params.max_tokens=4096"):
        run_in_process(eve(fake_llm, tmp_path / "b", "params=5", limit=1), tmp_path / "b")


def test_self_consistency_requires_its_temperature_and_a_run_that_contradicts_it_sends_nothing(fake_llm, tmp_path):
    """benchmark=eve_self_consistency: a YAML task's `requires: {temperature: 0.7}` is sent on every ask (five
    epochs of each MCQ sample at 0.7), and params.temperature=0 on the command line stops the run with exit 2."""
    fake_llm.default = "Answer: B"
    base = [*fake_model_overrides(fake_llm.base_url), "benchmark=eve_self_consistency",
            f"benchmark.data_dir={EVE_SAMPLE}", "benchmark.tasks=[mcqa_single_answer]", "benchmark.limit=2",
            "benchmark.num_fewshot=0", "tracker=none", "progress=false", "cache.enabled=false"]
    results = run_in_process([*base, f"hydra.run.dir={tmp_path / 'ok'}"], tmp_path / "ok")
    task = results["tasks"]["mcqa_single_answer"]
    assert (task["reducer"], task["epochs"], task["params"]["temperature"]) == ("mode", 5, 0.7)
    assert len(fake_llm.requests) == 2 * 5 and {b["temperature"] for b in fake_llm.requests} == {0.7}
    fake_llm.reset()
    proc = cli([*base, "params.temperature=0", f"hydra.run.dir={tmp_path / 'refused'}"])
    assert proc.returncode == 2 and fake_llm.count == 0
    line = one_line_error(proc)
    assert "params.temperature=0" in line and "benchmark.specs.mcqa_single_answer.requires.temperature=0.7" in line
