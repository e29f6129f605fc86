"""Issue 29: a key reaches no file and no terminal line, wherever the user or a provider puts it.

Keys are planted where an attacker's review found them leaking (URL userinfo, request headers, an inline
`judges.panel=[{...api_key:K}]` override, a provider's error body without a key prefix, a prompt pulling
`${oc.env:VAR}`); each run below still works (the fake server checks that the requests carry the keys), and
every file under the run or sweep dir (.hydra/, results.json, samples/, view/, wandb/, multirun.yaml) and the
terminal output are searched for them.
"""

from __future__ import annotations

import json
import logging
import secrets
import sys
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from conftest import EVE_SAMPLE, JUDGE_CORRECT, cli, run_in_process, run_overrides, write_jsonl
from fake_llm import FakeLLM, _error, _match_text

import runner.config.redact as redact_module
from runner.config.redact import (
    MASK,
    install_log_redaction,
    is_secret_env,
    is_secret_key,
    redact,
    redact_text,
    write_redacted_yaml,
)
from runner.errors import ConfigError

# Built at run time, new for every session: no key-shaped literal sits in the repo, and no fixture or cache
# can hold one by chance. A prefix-less hex key is what only the name rules, the environment scan or the
# remembered keys can find; the sk- one is found by its shape too.
# Fixed, distinctive and prefix-less (a random one per import would give each pytest-xdist worker other
# test ids); each appears nowhere else in the repository.
MODEL_KEY = "5d0c6b9e21f84a37b0e9c4d2a1f7e836"   # read from an environment variable named like a credential
JUDGE_KEY = "9a3e7f10c6d54b28a8e1f0b47c2d9e65"   # typed inline in judges.panel=[{...api_key:K}]
HEADER_KEY = "sk-" + "4f2a8c1e7b3d9a60e5c2b7f1"  # in the model's extra_headers
GOOG_KEY = "c81d4e7a2b9f3c05d6e8a1b4f7c2e903"    # in the judge's extra_headers
URL_PASSWORD = "7e2b9c4f1a8d3e60b5c7a2f9d1e4b806"  # in api_base's userinfo
KEYS = (MODEL_KEY, JUDGE_KEY, HEADER_KEY, GOOG_KEY, URL_PASSWORD)


class KeyServer(FakeLLM):
    """The fake provider, checking keys as a real one does (any of `keys` as the bearer token), keeping every
    request's headers, and echoing the key it was sent in its error body, with no key prefix, for the
    requests whose text matches `echo` (model name -> pattern): "Invalid key: <key>"."""

    def __init__(self, keys: set[str], echo: dict[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.keys, self.echo, self.headers = keys, echo or {}, []

    def _check_access(self, request: web.Request, body: dict[str, Any]) -> web.Response | None:
        self.headers.append({k.lower(): v for k, v in request.headers.items()})
        sent = request.headers.get("Authorization", "").removeprefix("Bearer ")
        if sent not in self.keys:
            return _error(401, "Incorrect API key provided (fake)", "invalid_request_error")
        pattern = self.echo.get(str(body.get("model")))
        if pattern and pattern in _match_text(body):
            return _error(400, f"Invalid key: {sent} may not use this model", "invalid_request_error")
        return None


@pytest.fixture(autouse=True)
def forget_remembered_keys():
    """Keys masked once are masked in every later text of the process: each test starts without them, so it
    shows what its own rules find (and leaves none behind for other modules)."""
    redact_module._learned.clear()
    yield
    redact_module._learned.clear()


def reply(body: dict[str, Any]) -> str:
    return JUDGE_CORRECT if str(body.get("model")).startswith("judge") else "Answer: B"


@pytest.fixture
def key_server():
    srv = KeyServer({MODEL_KEY, JUDGE_KEY}, default=reply,
                    # one sample's model call and another's judge call are refused with the key echoed
                    echo={"fake-model": "nominal revisit interval", "judge1": "airborne LiDAR"})
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


def hostile_overrides(url: str) -> list[str]:
    """Keys everywhere a config can hold one: the model's from the environment, the judge's inline, both in
    headers; W&B on; the preflight on (the default)."""
    return run_overrides(url, None, f"+model.params.extra_headers={{api-key:{HEADER_KEY},X-API-Key:{HEADER_KEY}}}",
                         "fail_on_error=1", tasks=["mcqa_single_answer", "open_ended"], limit=3, preflight=True,
                         tracker="wandb",
                         model_fields={"api_key": "${oc.env:RUNNER_HOSTILE_API_KEY}", "timeout": 5, "max_retries": 0},
                         judge_fields={"api_key": JUDGE_KEY, "concurrency": 4, "timeout": 5, "max_retries": 0,
                                       "params": {"extra_headers": {"x-goog-api-key": GOOG_KEY,
                                                                    "Ocp-Apim-Subscription-Key": GOOG_KEY}}})


ENV = {"RUNNER_HOSTILE_API_KEY": MODEL_KEY, "WANDB_MODE": "offline"}


def leaks(folder: Path, *texts: str) -> list[str]:
    """Where any planted key appears: files (by content, bytes) and names below `folder`, and the texts."""
    found = []
    for path in folder.rglob("*"):
        data = path.read_bytes() if path.is_file() else b""
        found += [f"{path}: {key}" for key in KEYS if key.encode() in data or key in str(path)]
    found += [f"output: {key}" for key in KEYS for text in texts if key in text]
    return found


# --------------------------------------------------------------------------- the rules, alone

@pytest.mark.parametrize("name", ["api_key", "apiKey", "api-key", "X-API-Key", "x-goog-api-key",
                                  "Ocp-Apim-Subscription-Key", "Authorization", "hf_token", "HF_TOKEN",
                                  "client_secret", "password", "judges.panel.0.api_key", "X-Amz-Signature",
                                  "aws_secret_access_key", "credentials", "api_key_2", "Set-Cookie", "auth"])
def test_credential_names_are_secret(name):
    assert is_secret_key(name)


@pytest.mark.parametrize("name", ["prompt_tokens", "completion_tokens", "max_tokens", "cached_prompt_tokens",
                                  "token_count", "author_name", "key_name", "score_keys", "KeyError", "api_base",
                                  "monkeypatching", "tokenizer"])
def test_counts_and_other_names_are_not(name):
    assert not is_secret_key(name)


def test_environment_names_with_the_credential_word_inside():
    assert is_secret_env("OPENAI_API_KEY_PROD") and is_secret_env("AZURE_TOKEN_V2") and is_secret_env("HF_TOKEN")
    assert not is_secret_env("SSH_AUTH_SOCK") and not is_secret_env("PWD") and not is_secret_env("KEY_VAULT_URL")


@pytest.mark.parametrize("text", [
    f"http://user:{URL_PASSWORD}@host:8000/v1",
    f"https://{URL_PASSWORD}@host/v1",                                    # the key as the user part
    f"judges.panel=[{{name:j,model:openai/x,api_key:{JUDGE_KEY}}}]",       # Hydra's inline dict grammar
    f"judges.panel=[{{name:j,api_key:'{JUDGE_KEY}'}}],[{{name:k,api_key:{JUDGE_KEY}}}]",
    f"model.api_key={JUDGE_KEY},{MODEL_KEY}",                               # a sweep over keys
    f"+hydra.job.env_set.OPENAI_API_KEY={JUDGE_KEY}",
    f"a=1,model.api_key={JUDGE_KEY},b=2",                                   # hydra.job.override_dirname
    f'{{"error": {{"message": "bad header", "api-key": "{JUDGE_KEY}"}}}}',
    f"{{'X-API-Key': '{JUDGE_KEY}', 'x-goog-api-key': '{GOOG_KEY}'}}",     # a Python repr of headers
    f"Ocp-Apim-Subscription-Key: {JUDGE_KEY}",
    f"Invalid key: {JUDGE_KEY}",                                            # a provider's echo, no prefix
    f"Authorization: Bearer {JUDGE_KEY}",
    f"GET /v1/models?key={JUDGE_KEY}&alt=json",
    f"rejected {HEADER_KEY} (shape)",
])
def test_keys_are_masked_in_text_by_shape_and_the_masking_is_idempotent(text):
    masked = redact_text(text)
    assert not [k for k in KEYS if k in masked], masked
    assert MASK in masked
    assert redact_text(masked) == masked


@pytest.mark.parametrize("text", [
    "prompt_tokens: 12, completion_tokens: 5, max_tokens=1024, cached_prompt_tokens: 0",
    "The model counts every token; a token is about four characters.",
    "Answer key: B", "KeyError: 'question'", "Usage: runner [KEY=VALUE ...]", "{% if key == target %}yes{% endif %}",
    "the api key is read from OPENAI_API_KEY", "ssh://git@github.com/org/repo", "http://127.0.0.1:8000/v1",
    "judges.panel=[{name:j,model:openai/x,api_key:null}]", "model.api_key=null",
])
def test_normal_text_and_token_counts_are_left_alone(text):
    assert redact_text(text) == text


def test_a_credential_variables_value_is_masked_wherever_it_appears(monkeypatch):
    other = secrets.token_hex(16)
    monkeypatch.setenv("RUNNER_HOSTILE_SECRET", MODEL_KEY)
    monkeypatch.setenv("RUNNER_HOSTILE_DIR", other)  # named like no credential: left alone
    text = f"provider said: {MODEL_KEY} is revoked; folder {other}"
    assert redact_text(text) == f"provider said: {MASK} is revoked; folder {other}"


def test_a_config_tree_masks_secret_names_and_keeps_counts_and_nulls():
    tree = {"model": {"api_key": JUDGE_KEY, "api_base": f"http://u:{URL_PASSWORD}@h/v1",
                      "params": {"max_tokens": 64, "extra_headers": {"api-key": JUDGE_KEY, "X-API-Key": JUDGE_KEY}}},
            "judges": {"panel": [{"name": "j", "api_key": None}]},
            "usage": {"prompt_tokens": 12, "completion_tokens": 5}}
    masked = redact(tree)
    assert masked["model"]["params"] == {"max_tokens": 64, "extra_headers": {"api-key": MASK, "X-API-Key": MASK}}
    assert masked["model"]["api_base"] == f"http://u:{MASK}@h/v1"
    assert masked["judges"]["panel"][0]["api_key"] is None and masked["usage"] == tree["usage"]
    assert redact(masked) == masked


def test_saved_overrides_are_masked_and_still_parse(tmp_path):
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from omegaconf import OmegaConf

    overrides = [f"judges.panel=[{{name:j,model:openai/x,api_key:{JUDGE_KEY}}}],[{{name:k,api_key:{MODEL_KEY}}}]",
                 f"model.api_key={JUDGE_KEY}", f"+hydra.job.env_set.HF_TOKEN={MODEL_KEY}", "benchmark.limit=2"]
    write_redacted_yaml(overrides, tmp_path / "overrides.yaml")
    write_redacted_yaml({"hydra": {"overrides": {"task": overrides},
                                   "job": {"override_dirname": ",".join(overrides[1:])}}}, tmp_path / "hydra.yaml")
    assert not leaks(tmp_path)
    saved = [str(o) for o in OmegaConf.load(tmp_path / "overrides.yaml")]
    assert saved[-1] == "benchmark.limit=2"
    # The masked sweep is still a sweep over the same key (runner.config.swept reads multirun.yaml so).
    parsed = OverridesParser.create().parse_overrides(saved)
    assert parsed[0].key_or_group == "judges.panel" and parsed[0].is_sweep_override()


def test_every_log_message_is_masked_once_installed():
    seen: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(self.format(record))

    factory = logging.getLogRecordFactory()
    logger = logging.getLogger("runner.test_hostile_keys")
    handler = Keep()
    logger.addHandler(handler)
    try:
        install_log_redaction()
        install_log_redaction()  # idempotent: one wrapper
        logger.warning("\t#%d : %s", 0, f"judges.panel=[{{name:j,api_key:{JUDGE_KEY}}}]")
    finally:
        logger.removeHandler(handler)
        logging.setLogRecordFactory(factory)
    assert seen == [f"\t#0 : judges.panel=[{{name:j,api_key:{MASK}}}]"]


# --------------------------------------------------------------------------- prompts carrying a key

def test_a_system_prompt_reading_a_key_variable_is_refused_before_any_request(key_server, tmp_path, monkeypatch):
    monkeypatch.setenv("RUNNER_HOSTILE_API_KEY", MODEL_KEY)
    overrides = [o for o in hostile_overrides(key_server.base_url) if o != "tracker=wandb"] + [
        "tracker=none", "benchmark.specs.mcqa_single_answer.solver.system='Key: ${oc.env:RUNNER_HOSTILE_API_KEY}'"]
    with pytest.raises(ConfigError) as refused:
        run_in_process(overrides, tmp_path / "run")
    assert refused.value.exit_code == 2
    assert "benchmark.specs.mcqa_single_answer.solver.system" in str(refused.value)
    assert "$RUNNER_HOSTILE_API_KEY" in str(refused.value) and MODEL_KEY not in str(refused.value)
    assert key_server.requests == [] and not list((tmp_path / "run").rglob("*.jsonl"))


def test_a_data_row_holding_an_endpoints_key_is_refused_naming_the_template(key_server, tmp_path, monkeypatch):
    monkeypatch.setenv("RUNNER_HOSTILE_API_KEY", MODEL_KEY)
    rows = [json.loads(line) for line in (EVE_SAMPLE / "mcqa_single_answer.jsonl").read_text().splitlines()]
    rows[3]["Question"] += f" (use {JUDGE_KEY})"  # a key typed in an override, in the fourth sample's question
    write_jsonl(tmp_path / "data" / "mcqa_single_answer.jsonl", rows)
    overrides = [o for o in hostile_overrides(key_server.base_url) if not o.startswith(("tracker", "benchmark."))]
    with pytest.raises(ConfigError) as refused:
        run_in_process(overrides + ["tracker=none", f"model.api_key={JUDGE_KEY}",
                                    f"benchmark.data_dir={tmp_path / 'data'}", "benchmark.tasks=[mcqa_single_answer]"],
                       tmp_path / "run")
    message = str(refused.value)
    assert "benchmark.specs.mcqa_single_answer.solver.user (mcqa_question.j2)" in message
    assert "fake-model's api_key" in message and JUDGE_KEY not in message
    assert key_server.requests == []


def test_a_rubric_holding_a_key_is_refused(key_server, tmp_path, monkeypatch):
    monkeypatch.setenv("RUNNER_HOSTILE_API_KEY", MODEL_KEY)
    overrides = [o for o in hostile_overrides(key_server.base_url) if o != "tracker=wandb"] + [
        "tracker=none", "benchmark.specs.open_ended.scorers.judges.rubric='Grade {{ response }} with "
        "${oc.env:RUNNER_HOSTILE_API_KEY}: reply with JSON'"]
    with pytest.raises(ConfigError, match=r"benchmark\.specs\.open_ended\.scorers\.judges\.rubric"):
        run_in_process(overrides, tmp_path / "run")
    assert key_server.requests == []


# --------------------------------------------------------------------------- whole runs, through the CLI

def test_a_run_with_keys_everywhere_leaks_none(key_server, tmp_path):
    run_dir = tmp_path / "run"
    proc = cli(hostile_overrides(key_server.base_url) + [f"hydra.run.dir={run_dir}"], env=ENV)
    assert proc.returncode == 0, proc.stderr
    # The run worked, with the keys really sent: bearer tokens and headers as configured.
    sent = key_server.headers
    assert {h["authorization"] for h in sent} == {f"Bearer {MODEL_KEY}", f"Bearer {JUDGE_KEY}"}
    assert any(h.get("api-key") == HEADER_KEY and h.get("x-api-key") == HEADER_KEY for h in sent)
    assert any(h.get("x-goog-api-key") == GOOG_KEY and h.get("ocp-apim-subscription-key") == GOOG_KEY for h in sent)
    results = json.loads((run_dir / "results.json").read_text())
    assert results["summary"]["n_errors"] == 2  # the two echoed refusals, recorded as errors
    errors = [json.loads(line)["error"] for f in (run_dir / "samples").glob("*.jsonl")
              for line in f.read_text().splitlines() if json.loads(line)["status"] == "error"]
    assert len(errors) == 2 and all(f"Invalid key: {MASK}" in e for e in errors), errors
    assert results["usage"]["fake-model"]["prompt_tokens"] > 0  # counts are not masked
    view = cli([str(run_dir)], module="runner.view")
    assert view.returncode == 0, view.stderr
    assert list(run_dir.glob("wandb/offline-run-*")) and (run_dir / "view" / "index.html").is_file()
    assert MASK in (run_dir / ".hydra" / "overrides.yaml").read_text()
    assert leaks(run_dir, proc.stdout, proc.stderr, view.stdout, view.stderr) == []


def test_a_sweep_with_keys_in_its_overrides_leaks_none(key_server, tmp_path):
    sweep = tmp_path / "sweep"
    args = [o for o in hostile_overrides(key_server.base_url) if not o.startswith("benchmark.limit")]
    proc = cli(["-m", *args, "benchmark.limit=2,3", f"hydra.sweep.dir={sweep}"], env=ENV, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in sweep.iterdir() if (p / "results.json").is_file()) == ["0_2", "1_3"]
    launched = [line for line in (proc.stdout + proc.stderr).splitlines() if "#0 :" in line]
    assert launched and f"api_key:{MASK}" in launched[0]  # Hydra's launch line, masked
    assert MASK in (sweep / "multirun.yaml").read_text()
    view = cli([str(sweep)], module="runner.view")
    assert view.returncode == 0, view.stderr
    assert leaks(sweep, proc.stdout, proc.stderr, view.stdout, view.stderr) == []


def test_a_sweep_over_inline_keys_names_no_folder_after_them(key_server, tmp_path):
    sweep = tmp_path / "sweep"
    panel = "[{{name:judge1,model:openai/judge1,api_base:'{}',api_key:{},concurrency:4,timeout:5}}]"
    args = [o for o in hostile_overrides(key_server.base_url) if not o.startswith(("judges", "tracker"))]
    proc = cli(["-m", *args, "tracker=none", "benchmark.limit=1", "benchmark.tasks=[open_ended]",
                "judges.panel=" + ",".join(panel.format(key_server.base_url, k) for k in (JUDGE_KEY, MODEL_KEY)),
                f"hydra.sweep.dir={sweep}"], env=ENV, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert leaks(sweep, proc.stdout, proc.stderr) == []
    # The folder name is cut at 80 characters: even the start of a key is too much of it.
    assert [p.name for p in sweep.iterdir() if any(k[:6] in p.name for k in KEYS)] == []


def test_a_mistyped_override_holding_a_key_is_reported_masked(tmp_path):
    proc = cli([f"judges.panel=[{{name:j,api_key:{JUDGE_KEY}", "tracker=none", f"hydra.run.dir={tmp_path}"])
    assert proc.returncode == 2
    assert JUDGE_KEY not in proc.stdout + proc.stderr


def test_a_key_in_api_base_userinfo_is_masked_when_the_endpoint_fails(key_server, tmp_path):
    # litellm's client refuses a URL with credentials beside its bearer header, so the endpoint fails:
    # the stop line, the error records and the saved config must all show the address masked.
    run_dir = tmp_path / "run"
    url = key_server.base_url.replace("http://", f"http://user:{URL_PASSWORD}@")
    args = [o for o in hostile_overrides(key_server.base_url) if not o.startswith(("model.api_base", "tracker"))]
    proc = cli(args + [f"model.api_base={url}", "tracker=none", f"hydra.run.dir={run_dir}"], env=ENV)
    assert proc.returncode == 3, proc.stderr
    assert f"user:{MASK}@127.0.0.1" in proc.stderr
    assert f"user:{MASK}@" in (run_dir / ".hydra" / "config.yaml").read_text()
    assert leaks(run_dir, proc.stdout, proc.stderr) == []


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
