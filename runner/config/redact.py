"""Masking of secrets in anything the runner writes or prints: saved config, overrides, logs, error texts.

Secrets are found by shape, not by a list of providers: a value under a name whose last word is a
credential word (`api_key`, `X-API-Key`, `Ocp-Apim-Subscription-Key`, `Authorization`, `hf_token`, ...), the
password of a URL, a string shaped like a known key format, and anywhere in any text the value of an
environment variable named like a credential (or of a key this process has masked before). Counts such as
`prompt_tokens` or `max_tokens` end in a plural or another word, so they are never taken for secrets.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import re
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

MASK = "***REDACTED***"

MIN_SECRET = 8
"""Shorter values are not looked for in free text: masking `k` or `test` everywhere would mangle prose."""

_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")  # api_key, X-API-Key, apiKey, OPENAI_API_KEY2
_SECRET_END = ("key", "token", "secret", "password", "passwd", "passphrase", "credential", "credentials",
               "signature", "auth", "authorization", "authentication", "cookie")
_SECRET_WORDS = frozenset({"sig", "secrets", "apikeys"})  # not "pwd": $PWD is a folder
_NOISE_TAIL = frozenset({"value", "header", "b64", "base64", "raw", "str"})  # api_key_value is still a key
# An environment name may carry the credential word inside (OPENAI_API_KEY_PROD); these endings say the
# value is something else (SSH_AUTH_SOCK is a path, KEY_VAULT_URL an address).
_ENV_NOT_SECRET = frozenset({"sock", "socket", "file", "path", "dir", "url", "uri", "host", "port", "type", "mode",
                             "name", "id", "user", "username", "email", "enabled", "disabled", "version", "count",
                             "size", "timeout", "region", "endpoint", "base", "location", "level"})

# Key formats recognisable on their own. A bearer token keeps its scheme word: "Bearer ***REDACTED***".
_SHAPES = re.compile(
    r"\b(?:sk-(?:ant-)?[A-Za-z0-9_\-]{16,}|hf_[A-Za-z0-9]{20,}|AIza[0-9A-Za-z_\-]{30,}|gh[pousr]_[A-Za-z0-9]{20,}|"
    r"github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_\-]{20,}|xox[abposr]-[A-Za-z0-9\-]{10,}|AKIA[0-9A-Z]{16}|"
    r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,})")
_BEARER = re.compile(r"\b([Bb]earer\s+)[A-Za-z0-9._~+/\-]{16,}=*")
_USERINFO = re.compile(r"\b([A-Za-z][A-Za-z0-9+.\-]*://)([^\s:/@?#'\"]*)(?::([^\s/@?#'\"]*))?@")
# `name<sep>value` in any text: `api_key=K`, `{...,api_key:K}` (Hydra's override grammar), `"token": "K"`,
# `X-API-Key: K`, `?key=K&`, `Authorization: Bearer K`. The name is judged by `is_secret_key`.
_PAIR = re.compile(
    r"(?<![\w.\-])(?P<name>[A-Za-z_][\w.\-]*)(?P<quote>[\"']?)(?P<sep>[ \t]*(?:(?<![=!<>])=(?!=)|:)[ \t]*)"
    r"(?P<scheme>(?:[Bb]earer|[Bb]asic|[Tt]oken|[Dd]igest)[ \t]+)?"
    r"(?P<value>\"[^\"\n]*\"|'[^'\n]*'|\$\{[^}\n]*\}|"
    r"[^\s,;&{}\[\]()\"'<>]+(?:,[^\s,;&{}\[\]()\"'<>=:]+(?=[,\s}\])]|$))*)")  # a sweep's K1,K2 too
_KEEP = frozenset({"null", "none", "nil", "~", "true", "false", "", MASK})

_learned: set[str] = set()
_LEARNED_MAX = 256


def _words(name: str) -> list[str]:
    words = [w.lower() for w in _WORDS.findall(name)]
    while words and (words[-1].isdigit() or words[-1] in _NOISE_TAIL):
        words.pop()
    return words


def _secret_word(word: str) -> bool:
    return word in _SECRET_WORDS or word.endswith(_SECRET_END)


def is_secret_key(key: Any) -> bool:
    """Whether a config key, header or override path names a credential: its last word is a credential word
    (api_key, apiKey, X-API-Key, x-goog-api-key, Authorization, hf_token, client_secret, model.api_key...).
    `prompt_tokens`, `max_tokens`, `token_count`, `KeyError` end in another word and are not."""
    words = _words(str(key))
    return bool(words) and _secret_word(words[-1])


def is_secret_env(name: str) -> bool:
    """Whether an environment variable's name says it holds a credential (`*_API_KEY`, `*_TOKEN`,
    `*_SECRET*`, `*_PASSWORD`, `*_AUTH*`, ...), also with the word inside (`OPENAI_API_KEY_PROD`)."""
    words = _words(name)
    return is_secret_key(name) or (any(_secret_word(w) for w in words[:-1]) and words[-1] not in _ENV_NOT_SECRET)


def _usable(value: Any) -> bool:
    """A value worth looking for in text: long enough, and no part of the mask (masking stays idempotent)."""
    return isinstance(value, str) and len(value) >= MIN_SECRET and value not in MASK and not value.startswith("${")


@functools.lru_cache(maxsize=4096)
def _env_name(name: str | bytes) -> str | None:
    text = os.fsdecode(name)
    return text if is_secret_env(text) else None


def env_secrets() -> dict[str, str]:
    """{value: variable} of the environment variables named like credentials (values of 8 characters or more).

    Read on every call (a variable set meanwhile counts at once); CPython's raw mapping is walked, with each
    name judged once, because decoding all of os.environ costs 30 us and every masked text pays it."""
    raw = getattr(os.environ, "_data", None)
    items = raw.items() if isinstance(raw, dict) else os.environ.items()
    found: dict[str, str] = {}
    for key, value in items:
        name = _env_name(key)
        if name is not None:
            text = os.fsdecode(value)
            if _usable(text):
                found[text] = name
    return found


def remember(*values: Any) -> None:
    """Mask these values (keys given literally, in a config or an override) wherever they appear later in
    this process's texts, e.g. echoed by a provider in an error body with no key-shaped prefix."""
    for value in values:
        if _usable(value) and len(_learned) < _LEARNED_MAX:
            _learned.add(value)


def secret_values() -> list[str]:
    """Every value masked in free text: the credential variables' and the remembered ones, longest first."""
    return sorted({*env_secrets(), *_learned}, key=len, reverse=True)


def _looks_like_key(text: str) -> bool:
    """A URL user part or a prose value that is a key rather than a word: long, or letters mixed with digits."""
    return len(text) >= 16 or (len(text) >= 6 and any(c.isdigit() for c in text) and any(c.isalpha() for c in text))


def _userinfo(match: re.Match[str]) -> str:
    scheme, user, password = match.group(1), match.group(2), match.group(3)
    if user and user != MASK and _looks_like_key(user):  # https://KEY@host: the user part is the key
        remember(user)
        user = MASK
    if password:
        remember(password)
        return f"{scheme}{user}:{MASK}@"
    return f"{scheme}{user}@"


def _pair(match: re.Match[str]) -> str:
    name, value = match.group("name"), match.group("value")
    quote = value[0] if value[:1] in ("'", '"') else ""
    inner = value[1:-1] if quote else value
    if not is_secret_key(name) or inner in _KEEP or inner.lower() in _KEEP:
        return match.group(0)
    # A single plain word is often prose or a placeholder ("Answer key: B", "KEY=VALUE" in a help text):
    # its value is masked when it looks like a key (after "=", 8 characters or a digit will do: `?key=`,
    # `token=`). A structured name (api_key, X-API-Key, "token"), a quoted value or a scheme word (Bearer)
    # masks whatever value it has.
    if not (match.group("quote") or quote or match.group("scheme")) and not re.search(r"[._\-]|[a-z][A-Z]", name):
        keyish = _looks_like_key(inner) if ":" in match.group("sep") else \
            len(inner) >= MIN_SECRET or any(c.isdigit() for c in inner)
        if not keyish:
            return match.group(0)
    start = match.start("value") - match.start(0)
    return f"{match.group(0)[:start]}{quote}{MASK}{quote}"


def redact_text(text: str) -> str:
    """Mask every secret in free text (log lines, error bodies, override strings); idempotent."""
    return _text(text, secret_values()) if text else text


def _text(text: str, values: list[str]) -> str:
    for value in values:
        if value in text:
            text = text.replace(value, MASK)
    text = _SHAPES.sub(MASK, text)
    text = _BEARER.sub(lambda m: m.group(1) + MASK, text)
    text = _USERINFO.sub(_userinfo, text)
    return _PAIR.sub(_pair, text)


def redact(obj: Any) -> Any:
    """Return a copy of a plain dict/list tree with every credential masked.

    A secret-named key keeps a null (or empty, or boolean) value as it is, so "no key configured" stays
    visible, and any other value becomes the mask (each item of a list; a mapping is searched by its own
    names); strings elsewhere go through `redact_text`. Masked values are remembered (`remember`).
    """
    return _tree(obj, False, secret_values())


def _tree(obj: Any, secret: bool, values: list[str]) -> Any:
    if isinstance(obj, Mapping):
        return {k: _tree(v, is_secret_key(k), values) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_tree(v, secret, values) for v in obj]
    if secret and obj is not None and not isinstance(obj, bool) and obj != "":
        remember(obj)
        return MASK
    if isinstance(obj, str) and obj:
        return _text(_mask_override(obj), values)
    return obj


def _mask_override(text: str) -> str:
    """`model.api_key=K` or `+hydra.job.env_set.HF_TOKEN=K` (an override as typed): the whole value is the key,
    sweeps (`=K1,K2`) and functions (`=choice(K1,K2)`) included."""
    key, eq, value = text.partition("=")
    if eq and value and re.fullmatch(r"[+~]{0,2}[\w.\-/@\[\]]+", key) and is_secret_key(key.split("[")[0]) \
            and value.lower() not in _KEEP:
        remember(value)
        return f"{key}={MASK}"
    return text


def entry_secrets(name: str, api_key: Any, api_base: Any, params: Any) -> dict[str, str]:
    """{value: label} of the keys a model or judge entry sends: its api_key, its api_base's password (or key
    as user), and every secret-named value of its params (`extra_headers: {api-key: K}`)."""
    found: dict[str, str] = {}
    if _usable(api_key):
        found[api_key] = f"{name}'s api_key"
    for match in _USERINFO.finditer(api_base if isinstance(api_base, str) else ""):
        for part in (match.group(3) or "", match.group(2) if _looks_like_key(match.group(2)) else ""):
            if _usable(part):
                found[part] = f"the key in {name}'s api_base"

    def walk(node: Any, path: str, secret: bool) -> None:
        if isinstance(node, Mapping):
            for k, v in node.items():
                walk(v, f"{path}.{k}", is_secret_key(k))
        elif isinstance(node, (list, tuple)):
            for v in node:
                walk(v, path, secret)
        elif secret and _usable(node):
            found[node] = f"{name}'s {path}"

    walk(params, "params", False)
    return found


def first_secret(texts: Iterable[Any], secrets: Mapping[str, str]) -> str | None:
    """The label of the first of `secrets` ({value: label}) found in any of the texts, else None."""
    for text in texts:
        if isinstance(text, str):
            for value, label in secrets.items():
                if value in text:
                    return label
    return None


class RedactingRecords:
    """A log record factory that masks each message as it is made, so every handler, also ones Hydra
    configures again between the jobs of a sweep, only ever sees the masked text."""

    def __init__(self, factory: Any) -> None:
        self.factory = factory

    def __call__(self, *args: Any, **kwargs: Any) -> logging.LogRecord:
        record: logging.LogRecord = self.factory(*args, **kwargs)
        with contextlib.suppress(Exception):  # a message that cannot be formatted is logging's to report
            record.msg, record.args = redact_text(record.getMessage()), None
        return record


def install_log_redaction() -> None:
    """Mask every log message of this process from now on (idempotent)."""
    factory = logging.getLogRecordFactory()
    if not isinstance(factory, RedactingRecords):
        logging.setLogRecordFactory(RedactingRecords(factory))


def redact_yaml_file(path: Path) -> None:
    """Rewrite a YAML file Hydra saved (config, overrides, multirun.yaml) with every secret masked; left
    untouched when there is nothing to mask (a sweep's jobs may read it meanwhile)."""
    if not path.exists():
        return
    from omegaconf import OmegaConf

    data = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
    if redact(data) != data:
        write_redacted_yaml(data, path)


def write_redacted_yaml(data: Any, path: Path) -> None:
    """Write a plain config tree (or an overrides list) as YAML with every secret masked; atomically, so a
    reader (a sweep's job reading multirun.yaml) sees the old file or the new one."""
    import yaml

    masked = redact(data)
    try:  # libyaml's dumper: 4 ms for a run's three files, where OmegaConf's nodes took 50 ms of each start
        text = yaml.dump(masked, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), sort_keys=False,
                         allow_unicode=True, default_flow_style=False)
    except yaml.YAMLError:  # a value plain YAML cannot represent (an enum, a path): OmegaConf's writer
        from omegaconf import OmegaConf

        text = OmegaConf.to_yaml(OmegaConf.create(masked))
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
