"""Everything checkable is checked before the first request (issue 33, point 2), and runs are read back with
their own settings (point 4): each mistake a user found only after paying for the model's replies now stops
the run with one line (exit 2) and no request, or makes its rows bad rows that are never sent; rescore, audit,
sweep pairs and rejudge read a run with its own allow_code and hydra.searchpath."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    JUDGE_CORRECT,
    TESTS,
    cli,
    fake_model_overrides,
    one_line_error,
    read_jsonl,
    run_in_process,
    run_overrides,
    write_jsonl,
)

from runner.errors import ConfigError

BENCH = TESTS / "fixtures" / "yaml_bench"
USER_PKG = TESTS / "fixtures" / "user_pkg"


def judged_reply(body: dict[str, Any]) -> str:
    return JUDGE_CORRECT if str(body["model"]).startswith("judge") else "Paris"


def eve(url: str, run_dir: Path, task: str, *extra: str) -> list[str]:
    return run_overrides(url, run_dir, *extra, tasks=[task], limit=3)


def arith(url: str, run_dir: Path, *extra: str, data: Path = BENCH / "data") -> list[str]:
    return run_overrides(url, run_dir, f"hydra.searchpath=[file://{BENCH / 'conf'}]", *extra, benchmark="arith",
                         data_dir=data)


# ------------------------------------------------------------------------------------------ templates


def test_an_undefined_variable_in_a_rubric_stops_before_any_request(fake_llm, tmp_path):
    rubric = tmp_path / "mine.j2"
    rubric.write_text("Question: {{ question }}\nAnswer: {{ response }}\nGold: {{ answr }}\nSay correct or not.")
    fake_llm.default = judged_reply
    proc = cli(eve(fake_llm.base_url, tmp_path / "run", "open_ended",
                   f"benchmark.specs.open_ended.scorers.judges.rubric={rubric}"), timeout=60)
    assert proc.returncode == 2
    line = one_line_error(proc)
    assert "benchmark.specs.open_ended.scorers.judges.rubric" in line and str(rubric) in line
    assert "'answr' is undefined" in line and "nothing was sent" in line
    assert fake_llm.count == 0


def test_an_undefined_variable_in_the_user_template_names_it_too(fake_llm, tmp_path):
    proc = cli(arith(fake_llm.base_url, tmp_path / "run", "benchmark.specs.arithmetic.solver.user='{{ questio }}'"),
               timeout=60)
    assert proc.returncode == 2
    line = one_line_error(proc)
    assert "benchmark.specs.arithmetic.solver.user" in line and "'questio' is undefined" in line
    assert fake_llm.count == 0


def test_an_undefined_variable_in_mugens_judge_prompt_stops_before_any_request(fake_llm, tmp_path):
    prompt = tmp_path / "judge.j2"
    prompt.write_text("{{ instruction }} {{ answer }} {{ reponse }}")
    args = fake_model_overrides(fake_llm.base_url) + [
        "benchmark=mugen", f"benchmark.prediction_dir={TESTS / 'fixtures' / 'mugen' / 'predictions'}",
        f"benchmark.judge_prompt={prompt}", "tracker=none", "cache.enabled=false", f"hydra.run.dir={tmp_path / 'r'}"]
    with pytest.raises(ConfigError, match=r"judge\.j2: 'reponse' is undefined when rendered for sample"):
        run_in_process(args, tmp_path / "r")
    broken = tmp_path / "broken.j2"  # (a prompt file is compiled once per process: another file)
    broken.write_text("{{ instruction }} {% if %}")
    with pytest.raises(ConfigError, match=r"benchmark\.judge_prompt: template .*broken\.j2 line 1"):
        run_in_process([*args, f"benchmark.judge_prompt={broken}"], tmp_path / "r")
    assert fake_llm.count == 0


# -------------------------------------------------------------------------------------- metrics, scores


def test_a_misspelt_metric_stops_before_any_request_with_its_close_match(fake_llm, tmp_path):
    proc = cli(eve(fake_llm.base_url, tmp_path / "run", "mcqa_single_answer",
                   "+benchmark.specs.mcqa_single_answer.metrics=[mean:acuracy]"), timeout=60)
    assert proc.returncode == 2
    line = one_line_error(proc)
    assert "benchmark.specs.mcqa_single_answer.metrics" in line and "'acuracy'" in line
    assert "did you mean 'accuracy'?" in line
    assert fake_llm.count == 0


def test_a_judge_score_of_the_panel_is_a_known_score(fake_llm, tmp_path):
    fake_llm.default = judged_reply
    results = run_in_process(eve(fake_llm.base_url, tmp_path / "run", "open_ended", "preflight=false",
                                 "+benchmark.specs.open_ended.metrics=[mean:judge/judge1,mean:judge_vote]"),
                             tmp_path / "run")
    assert results["tasks"]["open_ended"]["metrics"] == {"judge/judge1": 1.0, "judge_vote": 1.0}


def test_two_scorers_giving_one_score_stop_before_any_request(fake_llm, tmp_path):
    numeric = "{_target_:runner.scorers.numeric.Numeric}"
    proc = cli(arith(fake_llm.base_url, tmp_path / "run", f"benchmark.specs.arithmetic.scorers=[{numeric},{numeric}]"),
               timeout=60)
    assert proc.returncode == 2
    assert "scorers 0 and 1 both give the score 'accuracy'" in one_line_error(proc)
    assert fake_llm.count == 0


def user_scorer(folder: Path) -> Path:
    """A user's package whose scorer declares its scores (`score_names`), and one whose scorer does not."""
    pkg = folder / "declared_scorers"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text('''
from runner.types import Scored


class Silent:
    """Says nothing of the scores it gives: its metrics are trusted."""

    def prepare(self, folders, where):
        pass

    def metrics(self):
        return ["mean:short"]

    async def __call__(self, sample, text, ctx):
        words = len(text.split())
        return Scored(answer=words, scores={"short": float(words <= 3), "words": float(words)})


class Short(Silent):
    def score_names(self):
        return ["short", "words"]
''')
    return folder


def test_a_users_scorer_declares_its_scores_and_one_that_does_not_is_trusted(fake_llm, tmp_path):
    sys.path.insert(0, str(user_scorer(tmp_path / "pkg")))
    try:
        base = ["allow_code=[declared_scorers]", "benchmark.limit=2"]
        with pytest.raises(ConfigError, match=r"'mean:wrds' reads the score 'wrds'.*did you mean 'words'"):
            run_in_process(arith(fake_llm.base_url, tmp_path / "a", *base,
                                 "benchmark.specs.arithmetic.scorers=[{_target_:declared_scorers.Short}]",
                                 "+benchmark.specs.arithmetic.metrics=[mean:wrds]"), tmp_path / "a")
        assert fake_llm.count == 0
        results = run_in_process(arith(fake_llm.base_url, tmp_path / "b", *base,
                                       "benchmark.specs.arithmetic.scorers=[{_target_:declared_scorers.Silent}]",
                                       "+benchmark.specs.arithmetic.metrics=[mean:words]"), tmp_path / "b")
        assert results["tasks"]["arithmetic"]["metrics"] == {"words": 1.0}
    finally:
        sys.path.remove(str(tmp_path / "pkg"))


# ------------------------------------------------------------------------------------------- bad rows


def test_a_reference_a_numeric_scorer_cannot_read_is_a_bad_row_never_sent(fake_llm, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(BENCH / "data", data)
    rows = read_jsonl(data / "arithmetic.jsonl")
    rows[2]["answer"] = "3 to 5"
    write_jsonl(data / "arithmetic.jsonl", rows)
    fake_llm.default = "4"
    results = run_in_process(arith(fake_llm.base_url, tmp_path / "run", data=data), tmp_path / "run")
    block = results["tasks"]["arithmetic"]
    assert block["n_errors"] == 1 and block["n"] == len(rows) - 1  # one row is the few-shot example
    bad = [r for r in read_jsonl(tmp_path / "run" / "samples" / "arithmetic.jsonl") if r["status"] == "error"]
    assert len(bad) == 1 and "reference '3 to 5' is not a number" in bad[0]["error"]
    assert not any(rows[2]["question"] in json.dumps(body) for body in fake_llm.requests), "never sent"
    assert fake_llm.count == len(rows) - 2

    write_jsonl(data / "arithmetic.jsonl", [{**r, "answer": "ten"} for r in rows])
    fake_llm.reset()
    proc = cli(arith(fake_llm.base_url, tmp_path / "other", data=data), timeout=60)
    assert proc.returncode == 2
    line = one_line_error(proc)
    assert "none of its" in line and "reference 'ten' is not a number" in line
    assert fake_llm.count == 0


def test_a_gold_letter_not_among_the_options_is_a_bad_row_never_sent(fake_llm, tmp_path):
    conf, data = tmp_path / "conf" / "benchmark", tmp_path / "data"
    conf.mkdir(parents=True)
    (conf / "letters.yaml").write_text("""
_target_: runner.benchmarks.base.Benchmark
name: letters
data_dir: null
limit: null
tasks: null
num_fewshot: null
specs:
  pick:
    _target_: runner.tasks.task.Task
    fields: {input: q, target: gold, choices: options}
    solver: {_target_: runner.solvers.chat.Chat, user: "{{ question }} {{ choices|join(', ') }}"}
    scorers: [{_target_: runner.scorers.choice.Choice}]
""")
    write_jsonl(data / "pick.jsonl", [{"q": "Pick one", "gold": "B", "options": ["x", "y"]},
                                      {"q": "Pick again", "gold": "E", "options": ["x", "y", "z"]}])
    fake_llm.default = "B"
    results = run_in_process(fake_model_overrides(fake_llm.base_url) + [
        f"hydra.searchpath=[file://{tmp_path / 'conf'}]", "benchmark=letters", f"benchmark.data_dir={data}",
        "tracker=none", "progress=false", "cache.enabled=false"], tmp_path / "run")
    assert results["tasks"]["pick"]["n_errors"] == 1 and results["tasks"]["pick"]["metrics"]["accuracy"] == 1.0
    bad = [r for r in read_jsonl(tmp_path / "run" / "samples" / "pick.jsonl") if r["status"] == "error"]
    assert "reference 'E' is not among the option letters: its options are A, B, C" in bad[0]["error"]
    assert fake_llm.count == 1


# ------------------------------------------------------------------------------------------- keys


def test_three_missing_keys_are_named_in_one_line(fake_llm, tmp_path):
    def judge(name: str, model: str) -> str:
        return f"{{name:{name},model:{model},params:{{max_tokens:8}}}}"

    args = eve(fake_llm.base_url, tmp_path / "run", "open_ended", "model.api_key=null",
               "model.model=openai/gpt-4o-mini", "model.api_base=null",
               f"judges.panel=[{judge('judge-a', 'anthropic/claude-haiku-4-5')},"
               f"{judge('judge-b', 'mistral/mistral-small-latest')}]")
    proc = cli(args, env={"OPENAI_API_KEY": "", "ANTHROPIC_API_KEY": "", "MISTRAL_API_KEY": ""}, timeout=60)
    assert proc.returncode == 3
    line = one_line_error(proc)
    assert line.startswith("error: 3 endpoint(s) need an API key")
    for name, variable in (("fake-model", "OPENAI_API_KEY"), ("judge-a", "ANTHROPIC_API_KEY"),
                           ("judge-b", "MISTRAL_API_KEY")):
        assert f"{name} (" in line and variable in line
    assert fake_llm.count == 0


@pytest.mark.parametrize("where", ["model", "judges.panel.0"])
def test_an_api_base_on_an_embedded_entry_stops_instead_of_asking_the_embedded_model(fake_llm, where, tmp_path):
    # The default model and judge start their own server: an api_base beside it was quietly replaced by that
    # server's address, and a user who meant to ask their own server got the demo model's answers instead.
    proc = cli([f"{where}.api_base={fake_llm.base_url}", "tracker=none", "benchmark.limit=1",
                f"hydra.run.dir={tmp_path / 'run'}"], timeout=60)
    assert proc.returncode == 2
    line = one_line_error(proc)
    assert "api_base" in line and f"{where}.server=null" in line
    assert fake_llm.count == 0 and not (tmp_path / "run" / "local_server.log").exists()
    # With the server dropped, as the line says, that address is asked.
    fake_llm.default = lambda body: JUDGE_CORRECT if "judgement" in json.dumps(body["messages"]) else "B"
    other = "model" if where.startswith("judges") else "judges.panel.0"
    proc = cli([f"{where}.api_base={fake_llm.base_url}", f"{where}.server=null", f"{where}.api_key=k",
                f"{other}.api_base={fake_llm.base_url}", f"{other}.server=null", f"{other}.api_key=k",
                "tracker=none", "benchmark.limit=1", "cache.enabled=false", f"hydra.run.dir={tmp_path / 'ok'}"],
               timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert fake_llm.count > 0 and not (tmp_path / "ok" / "local_server.log").exists()


# ------------------------------------------------------------------------ runs read with their own settings


def user_run(url: str, run_dir: Path) -> list[str]:
    """The arithmetic benchmark scored by a user's scorer (tests/fixtures/user_pkg, allowed by allow_code)."""
    return arith(url, run_dir, "allow_code=[my_scorers]", "benchmark.specs.arithmetic.scorers=[{_target_:"
                 "my_scorers.WordCount}]", "judges=none")


def test_rescore_audit_and_pairs_apply_the_runs_own_allow_code(fake_llm, tmp_path):
    from runner.config import allow_code
    from runner.outputs.pairs import Job, pair_rows
    from runner.run.rescore import load_run, rescore

    fake_llm.default = "4"
    sys.path.insert(0, str(USER_PKG))
    try:
        first = run_in_process(user_run(fake_llm.base_url, tmp_path / "a"), tmp_path / "a")
        fake_llm.default = "The answer is 4, as anyone can see."
        second = run_in_process(user_run(fake_llm.base_url, tmp_path / "b"), tmp_path / "b")
        allow_code([])  # as in a new process: only the run's own config may allow the user's package
        assert rescore(tmp_path / "a")["arithmetic"]["metrics"] == first["tasks"]["arithmetic"]["metrics"]
        allow_code([])
        _, tasks, records = load_run(tmp_path / "b")  # what runner.audit reads
        assert [t.name for t in tasks] == ["arithmetic"] and len(records["arithmetic"]) == second["tasks"][
            "arithmetic"]["n"]
        allow_code([])
        rows, notes = pair_rows([Job(tmp_path / "a", "a", first), Job(tmp_path / "b", "b", second)])
        assert rows and rows[0]["metric"] == "short" and not [n for n in notes if "allow_code" in n], notes
    finally:
        sys.path.remove(str(USER_PKG))
    proc = cli(["rescore", str(tmp_path / "a")], env={"PYTHONPATH": str(USER_PKG)}, timeout=60)
    assert proc.returncode == 0, proc.stderr


def own_conf(tmp_path: Path, url: str) -> Path:
    """A user's config folder: the capitals benchmark and two judges files of their own."""
    conf = tmp_path / "conf"
    shutil.copytree(BENCH / "conf", conf)
    (conf / "judges").mkdir()
    for name in ("mine", "other"):
        (conf / "judges" / f"{name}.yaml").write_text(
            f"panel:\n  - {{name: {name}, model: openai/{name}, api_base: '{url}', api_key: k, timeout: 5}}\n")
    return conf


def test_rejudge_keeps_the_runs_searchpath_and_a_refused_one_leaves_no_folder(fake_llm, tmp_path):
    conf = own_conf(tmp_path, fake_llm.base_url)
    fake_llm.default = judged_reply
    src = tmp_path / "src"
    first = cli(["model=openai-compatible", "model.name=fake-model", "model.model=openai/fake-model",
                 f"model.api_base={fake_llm.base_url}", "model.api_key=k", f"hydra.searchpath=[file://{conf}]",
                 "benchmark=capitals", f"benchmark.data_dir={BENCH / 'data'}", "judges=mine", "tracker=none",
                 "cache.enabled=false", f"hydra.run.dir={src}"], timeout=120)
    assert first.returncode == 0, first.stderr
    proc = cli([str(src), "judges=other"], module="runner.rejudge", timeout=120)
    assert proc.returncode == 0, proc.stderr
    (made,) = tmp_path.glob("src-rejudge-*")
    assert json.loads((made / "results.json").read_text())["judges"] == ["other"]
    shutil.rmtree(made)

    refused = cli([str(src), "judges=nobody"], module="runner.rejudge", timeout=60)
    assert refused.returncode == 2 and "judges" in one_line_error(refused)
    missing_key = cli([str(src), "judges.panel.0.model=mistral/mistral-small-latest", "judges.panel.0.api_key=null"],
                      module="runner.rejudge", env={"MISTRAL_API_KEY": ""}, timeout=60)
    assert missing_key.returncode == 3 and "MISTRAL_API_KEY" in one_line_error(missing_key)
    assert not list(tmp_path.glob("src-rejudge-*")), "a refused rejudge leaves no folder behind"
