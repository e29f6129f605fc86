"""Every shipped config composes and builds offline; typos and bad targets fail early; secrets are masked.

In the spirit of lightning-hydra-template's config tests: each option of each config group is composed
through Hydra exactly as `python -m runner GROUP=OPTION` would, then what can be built without the
network (benchmark and its tasks, tracker, model/judge endpoints, embedded-server specs) is built.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import CONF, compose
from hydra.errors import HydraException
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from runner.benchmarks.base import Benchmark
from runner.config import instantiate
from runner.errors import ConfigError
from runner.models.entries import endpoint_from_config
from runner.models.litellm_model import Endpoint
from runner.run.build import build
from runner.tasks.base import BaseTask

GROUPS = ("benchmark", "model", "judges", "tracker")
OPTIONS = [(group, path.stem) for group in GROUPS for path in sorted((CONF / group).glob("*.yaml"))]
CONTRACT_KEYS = ("name", "model", "api_base", "api_key", "concurrency", "params")
EVE_TASKS = ["mcqa_single_answer", "mcqa_multiple_answers", "open_ended", "open_ended_w_context", "refusal",
             "hallucination_detection"]
COMPOSE_ERRORS = (HydraException, OmegaConfBaseException)


def options(group: str) -> list[str]:
    """The option names of one config group (file stems under conf/GROUP/)."""
    return [name for g, name in OPTIONS if g == group]


def plain(node: Any) -> Any:
    """A resolved plain-Python copy of a config node."""
    return OmegaConf.to_container(node, resolve=True) if isinstance(node, DictConfig) else node


def error_chain(exc: BaseException) -> str:
    """The messages of an exception and of everything it was raised from (Hydra wraps the cause)."""
    parts: list[str] = []
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        parts.append(str(cur))
        cur = cur.__cause__ or cur.__context__
    return "\n".join(parts)


def searchpath(directory: Path) -> str:
    """The override that adds a user's config directory, as the CONTRACT documents it."""
    return f"hydra.searchpath=['file://{directory}']"


def assert_contract_entry(entry: dict[str, Any], where: str) -> None:
    """A model or judge entry has the CONTRACT keys, with usable values."""
    missing = [k for k in CONTRACT_KEYS if k not in entry]
    assert not missing, f"{where} lacks contract key(s) {missing}"
    assert isinstance(entry["name"], str) and entry["name"], where
    assert isinstance(entry["model"], str) and "/" in entry["model"], \
        f"{where}.model must be a litellm 'provider/model' string, got {entry['model']!r}"
    assert isinstance(entry["concurrency"], int) and entry["concurrency"] >= 1, where
    assert isinstance(entry["params"], dict), where
    assert entry["api_base"] is None or str(entry["api_base"]).startswith("http"), where


# --------------------------------------------------------------------------- every option composes


def test_config_groups_all_have_options() -> None:
    for group in GROUPS:
        assert options(group), f"conf/{group}/ has no YAML options"
    assert {"three", "one"} <= set(options("judges"))
    assert {"wandb", "none"} <= set(options("tracker"))


def test_default_config_composes_with_every_group() -> None:
    cfg = compose([])
    for group in GROUPS:
        assert group in cfg, group
    assert cfg.benchmark.name == "eve"


@pytest.mark.parametrize(("group", "name"), OPTIONS, ids=[f"{g}={n}" for g, n in OPTIONS])
def test_every_config_option_composes(group: str, name: str) -> None:
    cfg = compose([f"{group}={name}"])
    assert isinstance(cfg[group], DictConfig)
    # Resolving everything must work too (interpolations such as ${oc.env:...,null} and package_dir).
    assert isinstance(plain(cfg), dict)


@pytest.mark.parametrize(("group", "name"), OPTIONS, ids=[f"{g}={n}" for g, n in OPTIONS])
def test_no_option_sets_hydras_mode(group: str, name: str) -> None:
    """runner/__main__.py skips Hydra's mode probe (a whole extra compose) because no file of ours sets
    `hydra.mode`: run or sweep is the command line's choice (-m) alone."""
    assert compose([f"{group}={name}"], with_hydra=True).hydra.mode is None


@pytest.mark.parametrize("name", options("benchmark"))
def test_every_benchmark_option_builds_all_its_tasks(name: str) -> None:
    cfg = compose([f"benchmark={name}"])
    benchmark = instantiate(cfg.benchmark, "benchmark", tasks=None)  # every spec, opt-in ones too
    assert isinstance(benchmark, Benchmark)
    tasks = benchmark.build_tasks()
    assert [t.name for t in tasks] == list(cfg.benchmark.specs), "every task spec must build, in order"
    for spec_name, task in zip(cfg.benchmark.specs, tasks, strict=True):
        assert isinstance(task, BaseTask), spec_name
        assert type(task).__module__.startswith("runner."), spec_name
        assert f"{type(task).__module__}.{type(task).__name__}" == cfg.benchmark.specs[spec_name]._target_
    if cfg.benchmark.data_dir is not None:
        data_dir = Path(cfg.benchmark.data_dir)
        for task in tasks:
            assert (data_dir / f"{task.name}.jsonl").is_file(), f"{name}: no data for {task.name} in {data_dir}"


def test_eve_benchmarks_offer_the_contract_task_names() -> None:
    for name in ("eve", "eve_sample"):
        cfg = compose([f"benchmark={name}"])
        # The contract's six run by default; hallucination_spans (issue 7) is an opt-in extra spec.
        assert list(cfg.benchmark.tasks) == EVE_TASKS, name
        assert sorted(cfg.benchmark.specs) == sorted(EVE_TASKS + ["hallucination_spans"]), name


@pytest.mark.parametrize("name", options("tracker"))
def test_every_tracker_option_instantiates_without_starting(name: str) -> None:
    cfg = compose([f"tracker={name}"])
    tracker = instantiate(cfg.tracker, "tracker")
    assert type(tracker).__module__.startswith("runner.outputs.tracking")
    for method in ("start", "log_task", "finish"):
        assert callable(getattr(tracker, method)), f"tracker={name} lacks {method}()"


def test_wandb_tracker_defaults_to_auto_mode() -> None:
    tracker = instantiate(compose(["tracker=wandb"]).tracker, "tracker")
    assert tracker.mode == "auto"


@pytest.mark.parametrize("name", options("model"))
def test_every_model_option_has_contract_keys_and_builds_an_endpoint(name: str) -> None:
    cfg = compose([f"model={name}"])
    entry = plain(cfg.model)
    assert_contract_entry(entry, f"model={name}")
    if entry.get("server"):
        server = instantiate(entry["server"], "model.server")  # constructed only, never started
        assert server.api_base is None
    endpoint = endpoint_from_config(entry, None)
    assert isinstance(endpoint, Endpoint)
    assert (endpoint.name, endpoint.model, endpoint.concurrency) == (entry["name"], entry["model"],
                                                                      entry["concurrency"])


@pytest.mark.parametrize("name", options("judges"))
def test_every_judges_option_has_contract_keys_and_unique_names(name: str) -> None:
    cfg = compose([f"judges={name}"])
    panel = plain(cfg.judges)["panel"]
    assert isinstance(panel, list)
    for i, entry in enumerate(panel):
        assert_contract_entry(entry, f"judges={name}.panel[{i}]")
        if entry.get("server"):
            assert instantiate(entry["server"], f"judges.panel[{i}].server").api_base is None
        assert isinstance(endpoint_from_config(entry, None), Endpoint)
    names = [e["name"] for e in panel]
    assert len(names) == len(set(names)), f"judges={name}: duplicate judge names {names}"


def test_judges_three_is_three_judges_from_three_providers() -> None:
    panel = plain(compose(["judges=three"]).judges)["panel"]
    assert len(panel) == 3
    providers = {entry["model"].split("/", 1)[0] for entry in panel}
    assert len(providers) == 3, f"providers {providers}"


def test_judges_one_is_a_single_judge() -> None:
    assert len(compose(["judges=one"]).judges.panel) == 1


def test_judges_none_is_an_empty_panel() -> None:
    assert len(compose(["judges=none"]).judges.panel) == 0


# --------------------------------------------------------------------------- structured-config validation


def test_typo_in_model_override_is_rejected_naming_the_key() -> None:
    with pytest.raises(COMPOSE_ERRORS) as info:
        compose(["model.concurency=3"])
    assert "concurency" in str(info.value)


def test_wrong_type_in_model_override_is_rejected_naming_the_key() -> None:
    with pytest.raises(COMPOSE_ERRORS) as info:
        compose(["model.concurrency=many"])
    assert "model.concurrency" in error_chain(info.value)


def test_typo_in_judge_panel_override_is_rejected_naming_the_key() -> None:
    with pytest.raises(COMPOSE_ERRORS) as info:
        compose(["judges.panel=[{name:x,model:openai/x,concurency:2}]"])
    assert "concurency" in error_chain(info.value)


def test_user_model_file_with_typo_key_fails_at_compose_naming_it(tmp_path: Path) -> None:
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "mine.yaml").write_text(
        "name: mine\nmodel: openai/my-model\nconcurency: 4\n", encoding="utf-8")
    with pytest.raises(COMPOSE_ERRORS) as info:
        compose([searchpath(tmp_path), "model=mine"])
    assert "concurency" in error_chain(info.value)


def test_user_judges_file_with_typo_key_fails_at_compose_naming_it(tmp_path: Path) -> None:
    (tmp_path / "judges").mkdir()
    (tmp_path / "judges" / "mine.yaml").write_text(
        "panel:\n  - name: j1\n    model: openai/j1\n    concurency: 2\n", encoding="utf-8")
    with pytest.raises(COMPOSE_ERRORS) as info:
        compose([searchpath(tmp_path), "judges=mine"])
    assert "concurency" in error_chain(info.value)


def test_user_model_file_on_searchpath_composes_and_builds(tmp_path: Path) -> None:
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "mine.yaml").write_text(
        "name: mine\nmodel: openai/my-served-model\napi_base: http://127.0.0.1:9/v1\napi_key: null\n"
        "concurrency: 4\nparams: {temperature: 0.2, max_tokens: 64}\n", encoding="utf-8")
    cfg = compose([searchpath(tmp_path), "model=mine", "tracker=none", "cache.enabled=false",
                   "benchmark.tasks=[mcqa_single_answer]"])
    assert cfg.model.name == "mine"
    built = build(cfg, tmp_path / "run")
    try:
        assert built.model is not None
        assert (built.model.name, built.model.model, built.model.api_base, built.model.concurrency) == \
               ("mine", "openai/my-served-model", "http://127.0.0.1:9/v1", 4)
        assert built.model.params == {"temperature": 0.2, "max_tokens": 64}
        assert [t.name for t in built.tasks] == ["mcqa_single_answer"]
        assert built.panel.names == []  # no selected task needs judges
    finally:
        built.stack.close()


def test_user_judges_file_on_searchpath_composes_and_builds(tmp_path: Path) -> None:
    (tmp_path / "judges").mkdir()
    (tmp_path / "judges" / "mine.yaml").write_text(
        "panel:\n"
        "  - {name: j1, model: openai/j1, api_base: 'http://127.0.0.1:9/v1', api_key: k, concurrency: 2,"
        " params: {}}\n"
        "  - {name: j2, model: openai/j2, api_base: 'http://127.0.0.1:9/v1', api_key: k, concurrency: 3,"
        " params: {}}\n", encoding="utf-8")
    cfg = compose([searchpath(tmp_path), "judges=mine", "model=openai-compatible", "tracker=none",
                   "cache.enabled=false", "benchmark.tasks=[open_ended]"])
    built = build(cfg, tmp_path / "run")
    try:
        assert built.panel.names == ["j1", "j2"]
        assert [j.concurrency for j in built.panel.judges] == [2, 3]
    finally:
        built.stack.close()


def test_unknown_task_is_a_config_error_listing_valid_tasks() -> None:
    cfg = compose(["benchmark.tasks=[bogus]"])
    with pytest.raises(ConfigError) as info:
        instantiate(cfg.benchmark, "benchmark")
    message = str(info.value)
    assert "bogus" in message
    for task in EVE_TASKS:
        assert task in message, f"the error should list valid task {task}"


def test_misspelled_task_gets_a_did_you_mean_hint() -> None:
    cfg = compose(["benchmark.tasks=[mcqa_singel_answer]"])
    with pytest.raises(ConfigError, match="did you mean 'mcqa_single_answer'"):
        instantiate(cfg.benchmark, "benchmark")


def test_negative_limit_is_a_config_error() -> None:
    cfg = compose(["benchmark.limit=-1"])
    with pytest.raises(ConfigError, match="benchmark.limit"):
        instantiate(cfg.benchmark, "benchmark")


def test_typo_key_in_task_spec_is_a_config_error_naming_it() -> None:
    cfg = compose(["+benchmark.specs.mcqa_single_answer.num_fewshots=3"])
    benchmark = instantiate(cfg.benchmark, "benchmark")
    with pytest.raises(ConfigError, match="num_fewshots") as info:
        benchmark.build_tasks()
    assert "benchmark.specs.mcqa_single_answer" in str(info.value)


def test_target_outside_runner_is_rejected() -> None:
    with pytest.raises(ConfigError, match="outside runner"):
        instantiate({"_target_": "os.system", "command": "echo pwned"}, "benchmark")


def test_benchmark_target_override_outside_runner_is_rejected() -> None:
    cfg = compose(["benchmark._target_=os.system"])
    with pytest.raises(ConfigError, match=r"benchmark\._target_.*os\.system"):
        instantiate(cfg.benchmark, "benchmark")


def test_task_spec_target_outside_runner_is_rejected() -> None:
    cfg = compose(["benchmark.specs.refusal._target_=builtins.print", "benchmark.tasks=[refusal]"])
    benchmark = instantiate(cfg.benchmark, "benchmark")
    with pytest.raises(ConfigError, match=r"benchmark\.specs\.refusal\._target_"):
        benchmark.build_tasks()


def test_spec_without_target_is_rejected() -> None:
    with pytest.raises(ConfigError, match="no _target_"):
        instantiate({"name": "x"}, "tracker")


# --------------------------------------------------------------------------- secrets


def test_literal_api_key_is_masked_in_resolved_config() -> None:
    from runner.config.redact import MASK
    from runner.run.app import resolved_config

    secret = "sk-" + "abcdefghijklmnopqrstuvwx123"  # built: no key-shaped literal in the repo
    cfg = compose([f"model.api_key={secret}"])
    assert cfg.model.api_key == secret  # the run itself still gets the key
    resolved = resolved_config(cfg)
    assert resolved["model"]["api_key"] == MASK
    assert secret not in json.dumps(resolved)


def test_env_interpolated_api_key_resolves_and_is_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    from runner.config.redact import MASK
    from runner.run.app import resolved_config

    # Not shaped like any known key format: only the key name can tell it is a secret.
    secret = "plain-secret-value-0042"
    monkeypatch.setenv("RUNNER_TEST_SECRET", secret)
    cfg = compose(["model.api_key=${oc.env:RUNNER_TEST_SECRET}"])
    assert cfg.model.api_key == secret
    resolved = resolved_config(cfg)
    assert resolved["model"]["api_key"] == MASK
    assert secret not in json.dumps(resolved)


def test_shipped_env_keys_resolve_and_are_masked_for_model_and_judges(monkeypatch: pytest.MonkeyPatch) -> None:
    from runner.config.redact import MASK
    from runner.run.app import resolved_config

    secrets = {"OPENAI_API_KEY": "openai-secret-111", "ANTHROPIC_API_KEY": "anthropic-secret-222",
               "MISTRAL_API_KEY": "mistral-secret-333"}
    for var, value in secrets.items():
        monkeypatch.setenv(var, value)
    cfg = compose(["model=gpt-4o-mini", "judges=three"])
    assert cfg.model.api_key == secrets["OPENAI_API_KEY"]
    assert [j.api_key for j in cfg.judges.panel] == list(secrets.values())
    resolved = resolved_config(cfg)
    assert resolved["model"]["api_key"] == MASK
    assert [j["api_key"] for j in resolved["judges"]["panel"]] == [MASK] * 3
    dumped = json.dumps(resolved)
    for value in secrets.values():
        assert value not in dumped


def test_unset_env_key_stays_null_and_visible(monkeypatch: pytest.MonkeyPatch) -> None:
    from runner.run.app import resolved_config

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    cfg = compose(["model=gpt-4o-mini"])
    assert cfg.model.api_key is None
    assert resolved_config(cfg)["model"]["api_key"] is None


def test_redacted_yaml_is_written_by_libyaml_or_omegaconf_with_the_same_content(tmp_path: Path) -> None:
    import enum

    from runner.config.redact import MASK, write_redacted_yaml

    class Mode(enum.Enum):
        RUN = 1

    secret = "plain-secret-value-0043"
    tree = {"model": {"name": "m", "api_key": secret, "params": {"temperature": 0.0, "stop": ["\n", "null"]}},
            "note": "${oc.env:HOME,null}", "empty": None, "unicode": "Erdbeobachtung – ü"}
    write_redacted_yaml(tree, tmp_path / "plain.yaml")  # libyaml's dumper
    write_redacted_yaml({**tree, "mode": Mode.RUN}, tmp_path / "enum.yaml")  # an enum: OmegaConf's writer
    plain_back = OmegaConf.to_container(OmegaConf.load(tmp_path / "plain.yaml"), resolve=False)
    enum_back = OmegaConf.to_container(OmegaConf.load(tmp_path / "enum.yaml"), resolve=False)
    expected = {**tree, "model": {**tree["model"], "api_key": MASK}}
    assert plain_back == expected and enum_back == {**expected, "mode": "RUN"}
    assert secret not in (tmp_path / "plain.yaml").read_text() + (tmp_path / "enum.yaml").read_text()
