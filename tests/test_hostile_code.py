"""Issue 29: a hostile benchmark runs no code and writes nothing outside the run dir.

Templates render in Jinja's sandbox; a `_target_` must resolve to a class defined in runner.* (or an
allow_code package) through real submodules; Hydra callbacks on the command line obey the same rule; and
names used as file names cannot lead out of the run dir. Each attack is shown refused with one error line
(exit 2), and shown to have done nothing: the marker file it would create does not exist, the file it
would empty is untouched. The legitimate uses next to each attack keep working."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from conftest import CONF, ROOT, TESTS, cli, fake_model_overrides, one_line_error, read_jsonl, run_in_process

from runner.benchmarks.win_rate.reporter import chart_path
from runner.config import hydra_callback_problem, instantiate, target_class
from runner.config.paths import inside, name_problem
from runner.errors import ConfigError
from runner.run.store import SampleStore
from runner.tasks.templates import check, load_template, render

BENCH = TESTS / "fixtures" / "yaml_bench"


@pytest.fixture
def user_dir(tmp_path: Path) -> Path:
    shutil.copytree(BENCH, tmp_path / "mine")
    return tmp_path / "mine"


def yaml_run(url: str, user_dir: Path, run_dir: Path, *extra: str):
    return cli(fake_model_overrides(url) + [
        f"hydra.searchpath=[file://{user_dir / 'conf'}]", f"benchmark.data_dir={user_dir / 'data'}",
        "tracker=none", "cache.enabled=false", f"hydra.run.dir={run_dir}", *extra], timeout=120)


def shell(marker: Path) -> str:
    """What a template would run through os.system if it could."""
    return f"touch {marker}"


# ----------------------------------------------------------------------------- Jinja sandbox

def test_a_template_reaching_os_system_is_refused_at_build_and_runs_nothing(fake_llm, user_dir, tmp_path):
    marker = tmp_path / "PWNED"
    attack = f"Compute: {{{{ cycler.__init__.__globals__.os.system('{shell(marker)}') }}}} {{{{ question }}}}\n"
    (user_dir / "data" / "arithmetic.j2").write_text(attack, encoding="utf-8")
    proc = yaml_run(fake_llm.base_url, user_dir, tmp_path / "run", "benchmark=arith")
    line = one_line_error(proc)
    assert proc.returncode == 2 and "internal error" not in line
    assert "benchmark.specs.arithmetic.solver.user" in line and str(user_dir / "data" / "arithmetic.j2") in line
    assert "unsafe" in line and "sandbox" in line
    assert not marker.exists() and fake_llm.count == 0


def test_a_judge_rubric_reaching_python_internals_is_refused_at_build(fake_llm, user_dir, tmp_path):
    marker = tmp_path / "PWNED"
    rubric = user_dir / "data" / "capitals_rubric.j2"
    rubric.write_text(rubric.read_text() + f"{{{{ lipsum['__globals__']['os'].system('{shell(marker)}') }}}}\n")
    proc = yaml_run(fake_llm.base_url, user_dir, tmp_path / "run", "benchmark=capitals")
    line = one_line_error(proc)
    assert proc.returncode == 2 and "scorers.0.rubric" in line and str(rubric) in line and "__globals__" in line
    assert not marker.exists() and fake_llm.count == 0


def test_an_unsafe_name_built_while_rendering_stops_the_run_naming_the_template(fake_llm, user_dir, tmp_path):
    # The attribute name is computed, so only the sandbox, at render time, can see it: every sample fails
    # the same way and the run stops before any request, naming the template.
    template = user_dir / "data" / "arithmetic.j2"
    template.write_text("{% set n = '_' ~ '_class__' %}Compute: {{ question[n] }}\n", encoding="utf-8")
    proc = yaml_run(fake_llm.base_url, user_dir, tmp_path / "run", "benchmark=arith")
    line = one_line_error(proc)
    assert proc.returncode == 2 and str(template) in line and "unsafe" in line
    assert fake_llm.count == 0


def test_a_template_unsafe_for_one_sample_only_stops_the_run_before_any_request(fake_llm, user_dir, tmp_path):
    template = user_dir / "data" / "arithmetic.j2"
    template.write_text("{% set n = '_' ~ '_class__' %}Compute: {{ question }}{% if question == '7 * 6' %}"
                        "{{ question[n] }}{% endif %}\n", encoding="utf-8")
    proc = yaml_run(fake_llm.base_url, user_dir, tmp_path / "run", "benchmark=arith")
    assert proc.returncode == 2 and str(template) in one_line_error(proc)
    assert fake_llm.count == 0


def test_a_rubric_unsafe_only_while_rendering_stops_the_run_and_runs_nothing(fake_llm, user_dir, tmp_path):
    marker = tmp_path / "PWNED"
    rubric = user_dir / "data" / "capitals_rubric.j2"
    rubric.write_text("{% set g = '_' ~ '_globals__' %}" + rubric.read_text()
                      + f"{{{{ cycler.reset[g].os.system('{shell(marker)}') }}}}\n")
    fake_llm.default = "Paris"
    proc = yaml_run(fake_llm.base_url, user_dir, tmp_path / "run", "benchmark=capitals")
    line = one_line_error(proc)
    assert proc.returncode == 2 and str(rubric) in line and "unsafe" in line
    assert not marker.exists()
    assert not [b for b in fake_llm.requests if b["model"] == "judge1"]  # no judge was sent the rubric


def test_a_mugen_judge_prompt_file_runs_in_the_sandbox_too(fake_llm, tmp_path):
    marker = tmp_path / "PWNED"
    prompt = tmp_path / "judge.j2"
    prompt.write_text(f"{{{{ instruction }}}} {{{{ self.__init__.__globals__ }}}}{shell(marker)}\n")
    run = tmp_path / "run"
    with pytest.raises(ConfigError, match=r"judge\.j2 tried an unsafe operation") as info:
        run_in_process(fake_model_overrides(fake_llm.base_url) + [
            "benchmark=mugen", f"benchmark.prediction_dir={TESTS / 'fixtures' / 'mugen' / 'predictions'}",
            f"benchmark.judge_prompt={prompt}", "tracker=none", "cache.enabled=false", "progress=false"], run)
    assert info.value.exit_code == 2 and not marker.exists()
    assert not [b for b in fake_llm.requests if b["model"] == "judge1"]


@pytest.mark.parametrize("text, refused", [
    ("{{ cycler.__init__.__globals__ }}", "__globals__"),
    ("{{ x|attr('__class__') }}", "__class__"),
    ("{{ joiner._TemplateReference__context }}", "_TemplateReference__context"),
    ("{{ row._id }}", "_id"),
])
def test_the_two_loaders_refuse_the_same_templates_when_compiled(tmp_path, text, refused):
    (tmp_path / "t.j2").write_text(text)
    with pytest.raises(ConfigError, match=f"'{refused}' is not allowed"):
        load_template("t.j2", [tmp_path], "benchmark.specs.x.solver.user")
    with pytest.raises(ConfigError, match=f"'{refused}' is not allowed"):
        check(tmp_path, "t.j2", "benchmark.judge_prompt")
    with pytest.raises(ConfigError, match=f"{tmp_path / 't.j2'}"):
        render(tmp_path, "t.j2", x=1)


def test_changing_a_list_or_calling_into_python_is_refused_while_rendering(tmp_path):
    for text in ("{{ choices.append('E') }}", "{{ '{0.__class__}'.format(question) }}"):
        template = load_template(text, [], "benchmark.specs.x.solver.user")
        with pytest.raises(ConfigError, match="benchmark.specs.x.solver.user: template inline tried an unsafe"):
            template.render(question="q", choices=["A"])


def test_ordinary_templates_render_the_same_in_both_loaders(tmp_path):
    text = ("{% set ns = namespace(n=0) %}{% for c in choices %}{% set ns.n = ns.n + 1 %}"
            "{{ letters[loop.index0] }}. {{ c|trim|capitalize }}\n{% endfor %}{{ ns.n }} options; "
            "{{ question.upper() }} {{ '{}-{}'.format(1, 2) }} {{ row['_id'] }} {{ row.get('x', 'none') }} "
            "{{ range(3)|list|join(',') }} {{ meta.items()|list|length }}{% if target is defined %} {{ target }}"
            "{% endif %}")
    (tmp_path / "ok.j2").write_text(text)
    variables = {"question": "why?", "choices": [" a ", "b"], "letters": ["A", "B"], "row": {"_id": 7},
                 "meta": {"k": 1}, "target": "B"}
    expected = "A. A\nB. B\n2 options; WHY? 1-2 7 none 0,1,2 1 B"
    assert load_template("ok.j2", [tmp_path], "w").render(**variables) == expected
    assert render(tmp_path, "ok.j2", **variables) == expected
    with pytest.raises(Exception, match="'missing' is undefined"):  # StrictUndefined is kept
        load_template("{{ missing }}", [], "w").render()


# ----------------------------------------------------------------------------- _target_ resolution

def test_a_target_through_a_runner_modules_import_of_os_cannot_empty_a_file(fake_llm, user_dir, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    scorer = (f"benchmark.specs.arithmetic.scorers=[{{_target_:runner.run.store.os.open,path:'{victim}',"
              f"flags:{os.O_WRONLY | os.O_TRUNC}}}]")
    proc = yaml_run(fake_llm.base_url, user_dir, tmp_path / "run", "benchmark=arith", scorer)
    line = one_line_error(proc)
    assert proc.returncode == 2 and "benchmark.specs.arithmetic.scorers.0._target_" in line
    assert "runner.run.store.os.open" in line and "module os" in line and "allow_code" in line
    assert victim.read_text() == "keep me\n" and fake_llm.count == 0


def test_a_target_through_a_class_runner_imports_cannot_write_a_pth_file(fake_llm, user_dir, tmp_path):
    pth = tmp_path / "evil.pth"
    scorer = (f"benchmark.specs.arithmetic.scorers=[{{_target_:runner.config.schema.OmegaConf.save,config:{{a:1}},"
              f"f:'{pth}'}}]")
    proc = yaml_run(fake_llm.base_url, user_dir, tmp_path / "run", "benchmark=arith", scorer)
    line = one_line_error(proc)
    assert proc.returncode == 2 and "runner.config.schema.OmegaConf.save" in line and "omegaconf" in line
    assert not pth.exists()


@pytest.mark.parametrize("target, why", [
    ("builtins.eval", "is outside runner"),
    ("runner.x.json.loads", "does not exist"),
    ("runner.run.store.json.loads", "passes through the module json"),
    ("runner.run.store.write_json", "is not a class"),
    ("runner.config.allow_code", "is not a class"),
    ("runner.tasks.task.Task.__init__", "is not a plain dotted class name"),
    ("runner.run.store", "is a module"),
    ("runnerx.Thing", "is outside runner"),
])
def test_targets_that_are_not_runner_classes_are_refused_before_anything_runs(tmp_path, target, why):
    marker = tmp_path / "written.json"
    spec = {"_target_": target, "path": str(marker), "data": [1]}
    with pytest.raises(ConfigError, match=f"benchmark._target_: '{target}' {why}"):
        instantiate(spec, "benchmark")
    assert not marker.exists()


def test_a_nested_target_is_never_built_by_hydra(fake_llm, user_dir, tmp_path):
    marker = tmp_path / "nested.yaml"
    nested = (f"+benchmark.specs.arithmetic.fields.extra={{_target_:omegaconf.OmegaConf.save,config:{{a:1}},"
              f"f:'{marker}'}}")
    proc = yaml_run(fake_llm.base_url, user_dir, tmp_path / "run", "benchmark=arith", "dry_run=true", nested)
    assert proc.returncode == 0, proc.stderr
    assert not marker.exists()


def _shipped_targets() -> list[str]:
    found: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            found.extend(str(v) for k, v in node.items() if k == "_target_")
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    for path in sorted(CONF.rglob("*.yaml")):
        walk(yaml.safe_load(path.read_text(encoding="utf-8")))
    return sorted(set(found))


def test_every_target_the_runner_ships_is_still_allowed():
    from runner.launchers import PLUGINS

    # conf/launcher/*.yaml's hydra.launcher targets are instantiated by Hydra's plugin registry, where the
    # runner enters its own launchers under hydra_plugins.* names (runner/launchers/__init__.py), not by the
    # runner's instantiate: they are the registry's names, each mapped to a class of runner.launchers.
    targets = _shipped_targets()
    launchers = {t for t in targets if t.startswith("hydra_plugins.")}
    assert launchers and launchers <= set(PLUGINS)
    assert all(module.startswith("runner.launchers.") for module, _ in PLUGINS.values())
    targets = [t for t in targets if t not in launchers]
    assert "runner.tasks.task.Task" in targets and "runner.outputs.sweep_report.SweepReport" in targets
    assert {t: target_class(t)[1] for t in targets if target_class(t)[0] is None} == {}
    assert target_class("runner.BaseTask")[0] is target_class("runner.tasks.base.BaseTask")[0]  # a re-export


def test_an_allowed_package_is_held_to_the_same_rule():
    import sys

    sys.path.insert(0, str(TESTS / "fixtures" / "user_pkg"))
    try:
        packages = ("runner", "my_scorers")
        assert target_class("my_scorers.WordCount", packages)[0].__name__ == "WordCount"
        assert target_class("my_scorers.WordCount", ("runner",))[1] == "is outside runner.*"
        # What the package imports is not the package's: typing's Any is refused, runner's Scored is runner's.
        assert target_class("my_scorers.Any", packages) == (None, "names typing.Any, defined outside runner.* "
                                                                  "and allow_code")
        assert target_class("my_scorers.Scored", packages)[0].__module__ == "runner.types"
    finally:
        sys.path.remove(str(TESTS / "fixtures" / "user_pkg"))


# ----------------------------------------------------------------------------- Hydra callbacks

@pytest.mark.parametrize("args", [
    ["+hydra.callbacks.x._target_=os.system", "+hydra.callbacks.x._args_=[id]"],
    ["+hydra.callbacks.x._target_=omegaconf.OmegaConf.save"],
    ["+hydra.callbacks.x._target_=runner.config.schema.OmegaConf"],
    ["hydra.callbacks.report._target_=runner.run.store.write_json"],
    ["hydra.callbacks={x:{_target_:os.system}}"],
    ["hydra={callbacks:{x:{_target_:os.system}}}"],
    ["++hydra.callbacks.report={_target_:runner.outputs.sweep_report.SweepReport,x:[{_target_:runner.run.store.write_json}]}"],
    ["-m", "hydra.callbacks.report._target_=runner.outputs.sweep_report.SweepReport,os.system"],
    ["hydra.callbacks.report._target_=${oc.env:EVIL}"],
    ["+hydra.callbacks.x._target_=runner.config.RunnerConfig"],
    ["+benchmark@hydra.callbacks.x=eve"],
    ["+hydra.callbacks.x._target_=my_scorers.WordCount"],
])
def test_callback_overrides_hydra_would_build_are_refused(args):
    problem = hydra_callback_problem(args)
    assert problem and "hydra.callbacks" in problem


@pytest.mark.parametrize("args", [
    [], ["model=local", "benchmark=eve", "-m", "seed=1,2"], ["-cd", "/somewhere", "benchmark=eve"],
    ["hydra.callbacks.report._target_=runner.outputs.sweep_report.SweepReport"], ["~hydra.callbacks.report"],
    ["hydra.run.dir=/tmp/x", "'benchmark.tasks=[a,b]'"],
])
def test_other_overrides_and_the_runners_own_callback_pass(args):
    assert hydra_callback_problem(args) is None


@pytest.mark.skipif("hydra_callback_problem" not in (ROOT / "runner" / "__main__.py").read_text(),
                    reason="runner/__main__.py does not call hydra_callback_problem yet")
def test_a_callback_override_writing_a_file_stops_the_cli_first(tmp_path):
    written = tmp_path / "cb.yaml"
    proc = cli(["+hydra.callbacks.x._target_=omegaconf.OmegaConf.save", "+hydra.callbacks.x.config={a:1}",
                f"+hydra.callbacks.x.f={written}", "dry_run=true", "tracker=none",
                f"hydra.run.dir={tmp_path / 'run'}"], timeout=60)
    assert proc.returncode == 2 and "hydra.callbacks.x._target_" in one_line_error(proc)
    assert not written.exists()


# ----------------------------------------------------------------------------- names are not paths

def test_a_task_named_to_climb_out_of_the_run_dir_writes_nothing(fake_llm, user_dir, tmp_path):
    spec = yaml.safe_load((user_dir / "conf" / "benchmark" / "arith.yaml").read_text())
    spec["specs"] = {"../../../X": spec["specs"]["arithmetic"]}
    (user_dir / "conf" / "benchmark" / "climb.yaml").write_text(yaml.safe_dump(spec))
    # The data is where the name leads (data/../../../X.jsonl), so only the check stands between the name
    # and run/samples/../../../X.jsonl, i.e. a/b/X.jsonl beside the run dir.
    data = tmp_path / "d" / "e" / "f" / "data"
    shutil.copytree(user_dir / "data", data)
    shutil.copy(data / "arithmetic.jsonl", tmp_path / "d" / "X.jsonl")
    run = tmp_path / "a" / "b" / "c" / "run"
    proc = cli(fake_model_overrides(fake_llm.base_url) + [
        f"hydra.searchpath=[file://{user_dir / 'conf'}]", f"benchmark.data_dir={data}", "benchmark=climb",
        "tracker=none", "cache.enabled=false", f"hydra.run.dir={run}"], timeout=120)
    line = one_line_error(proc)
    assert proc.returncode == 2 and "benchmark.specs: the task name '../../../X' contains '/'" in line
    assert [p.name for p in (tmp_path / "a").rglob("*") if p.is_file()] == [] and fake_llm.count == 0


@pytest.mark.parametrize("override, key", [
    ("model.name=../../evil", "model.name"),
    ("model.name=.hidden", "model.name"),
])
def test_endpoint_names_that_are_not_file_names_are_refused(fake_llm, user_dir, tmp_path, override, key):
    proc = yaml_run(fake_llm.base_url, user_dir, tmp_path / "run", "benchmark=arith", override)
    assert proc.returncode == 2 and one_line_error(proc).startswith(f"error: {key}: the model name")
    assert fake_llm.count == 0


def test_a_judge_name_with_a_separator_is_refused(fake_llm, user_dir, tmp_path):
    panel = f"judges.panel=[{{name:'a/b',model:openai/j,api_base:'{fake_llm.base_url}',api_key:k}}]"
    proc = yaml_run(fake_llm.base_url, user_dir, tmp_path / "run", "benchmark=capitals", panel)
    assert proc.returncode == 2 and "judges.panel[0].name: the judge name 'a/b'" in one_line_error(proc)


def test_names_with_dots_inside_keep_their_files(fake_llm, user_dir, tmp_path):
    fake_llm.default = "4"
    run = tmp_path / "run"
    proc = yaml_run(fake_llm.base_url, user_dir, run, "benchmark=arith", "model.name=gpt-4.1-mini",
                    "benchmark.limit=1")
    assert proc.returncode in (0, 1), proc.stderr
    assert json.loads((run / "results.json").read_text())["model"] == "gpt-4.1-mini"
    assert read_jsonl(run / "samples" / "arithmetic.jsonl")[0]["model"] == "gpt-4.1-mini"


@pytest.mark.parametrize("parts", [("..", "x"), ("samples", "../../x.jsonl"), ("/etc/passwd",), ("a\0b",), ("x", "..")])
def test_inside_refuses_every_way_out(tmp_path, parts):
    with pytest.raises(ConfigError, match="would be written outside"):
        inside(tmp_path / "run", *parts)


def test_paths_built_from_names_stay_in_the_run_dir(tmp_path):
    store = SampleStore(tmp_path / "run")
    assert store.path("open_ended") == tmp_path / "run" / "samples" / "open_ended.jsonl"
    assert inside(tmp_path, "predictions", "cap", "dom.json") == tmp_path / "predictions" / "cap" / "dom.json"
    with pytest.raises(ConfigError):
        store.path("../../../X")
    with pytest.raises(ConfigError):  # a reporter's files too (win_rate/comparison_<task>.png)
        chart_path(SimpleNamespace(name="/../../../x"), tmp_path / "run")
    assert not list(tmp_path.rglob("X*"))
    assert [name_problem(n) for n in ("eve", "gpt-4.1", "a..b", "Keyword_Spotting")] == [None] * 4
    assert [name_problem(n) for n in ("", "../x", "a\\b", ".x", "a\0b")] == [
        "is empty", "contains '/'", "contains '\\'", "starts with '.'", "contains a NUL character"]
