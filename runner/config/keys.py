"""One clear line for a key the config does not have: `+key=` adding what the schema never reads, and a
plain override of a missing key, each with the close match and the keys that exist there."""

from __future__ import annotations

import dataclasses
import difflib
import re
from typing import Any

from omegaconf import DictConfig

from runner.config.schema import AuditConfig, BudgetConfig, CacheConfig, ModelConfig, RunnerConfig, StatsConfig


def _fields(node: Any) -> list[str]:
    return [f.name for f in dataclasses.fields(node)] if dataclasses.is_dataclass(node) else []


# The typed parts of the schema: a `+key` under them would add a key the runner never reads.
_TYPED: dict[str, Any] = {"": RunnerConfig, "model": ModelConfig, "cache": CacheConfig, "stats": StatsConfig,
                          "budget": BudgetConfig, "audit": AuditConfig}


def _typed_node(parent: str) -> Any:
    return ModelConfig if re.fullmatch(r"judges\.panel\.\d+", parent) else _TYPED.get(parent)


def schema_key_problem(override: str) -> str | None:
    """Why a `+key=value` or `++key=value` override (Hydra's "add a key") must be refused: under the
    runner's typed config every key already exists, so `+model.concurency=3` is a typo, not a new setting
    (and `++` would add it silently, to be ignored). `++key=value` on a key that exists just sets it."""
    sign = "++" if override.startswith("++") else "+" if override.startswith("+") else ""
    if not sign or "=" not in override:
        return None
    key = override[len(sign):].partition("=")[0]
    parent, _, leaf = key.rpartition(".")
    node = _typed_node(parent)
    if node is None or "." in leaf:
        return None
    known = _fields(node)
    if leaf in known:
        return None if sign == "++" else f"'{override}': {key} exists already; set it without the '+' ({key}=...)"
    hint = _close(leaf, known)
    return (f"'{override}': {key} is not a key of the runner's config, and '{sign}' cannot add one"
            + (f" (did you mean {(parent + '.') if parent else ''}{hint}?)" if hint else "")
            + f"; the keys{' of ' + parent if parent else ''} are: {', '.join(known)}")


def _close(word: str, known: list[str]) -> str | None:
    hint = difflib.get_close_matches(word, known, n=1)
    return hint[0] if hint else None


def unknown_key_problem(exc: BaseException) -> str | None:
    """The one line for an override of a key the composed config does not have (`model.concurency=3`).
    Hydra's own message advises `+model.concurency=3`: under the runner's schema that is refused too (see
    schema_key_problem), and where it is not (an untyped node such as `benchmark`) it adds a key that
    nothing reads. So: name the key, the close match and the keys that exist there; never `+`."""
    from omegaconf.errors import ConfigAttributeError, ConfigKeyError

    typed = re.match(r"Could not override '([^']+)'", str(exc))
    cause = exc.__cause__
    if typed is None or not isinstance(cause, (ConfigAttributeError, ConfigKeyError)) \
            or not isinstance(cause.parent_node, DictConfig) or not cause.full_key:
        return None
    # OmegaConf names list items `panel[0]` where the override said `panel.0`: count levels, not text.
    depth = len(re.sub(r"\[(\w+)\]", r".\1", cause.full_key).split("."))
    parts = typed[1].split(".")
    if depth > len(parts):
        return None
    parent, missing = ".".join(parts[:depth - 1]), ".".join(parts[:depth])
    known = [str(k) for k in cause.parent_node if not str(k).startswith("_")]
    hint = _close(parts[depth - 1], known)
    where = f"{typed[1]}: " if typed[1] != missing else ""
    if _free_form(parent) and not hint:  # any key goes there (a provider's params): adding one takes `+`
        return (f"{where}{missing} is not set in this config; {parent} takes any key: add it with "
                f"+{typed[1]}=... (the keys set now are: {', '.join(known) or 'none'})")
    return (f"{where}{missing} is not a key of the runner's config"
            + (f" (did you mean {parent + '.' if parent else ''}{hint}?)" if hint else "")
            + f"; the keys{' of ' + parent if parent else ''} are: {', '.join(known)}")


def _free_form(parent: str) -> bool:
    """A map whose keys are the user's to choose: the run's, an entry's or a task's request params."""
    return bool(re.fullmatch(r"params|(model|judges\.panel\.\d+)\.params|benchmark\.specs\.[^.]+\.(params|requires)",
                             parent))


def group_option_problem(exc: BaseException) -> str | None:
    """The one line for a config group option that does not exist (`benchmark=eve_smaple`): the close match
    and the options there are, from Hydra's own error."""
    text = str(exc)
    found = re.search(r"Could not find '([^']+)/([^'/]+)'", text)
    listed = re.search(r"Available options in '[^']+':\s*\n((?:\s+\S+\n?)+)", text)
    if found is None:
        return None
    group, option = found.groups()
    options = listed.group(1).split() if listed else []
    hint = _close(option, options)
    return (f"{group}={option} is not an option of {group}" + (f" (did you mean {group}={hint}?)" if hint else "")
            + (f"; the options are: {', '.join(options)}" if options else "")
            + "; your own files join them with hydra.searchpath=[file:///abs/dir]")
