"""What a config may build: `instantiate` builds a `_target_` only when it resolves to a class defined in
runner.* or a package of the run's `allow_code`, and turns anything wrong into a ConfigError naming the
key; command-line Hydra callbacks are held to the same rule before Hydra builds them."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from omegaconf import DictConfig

from runner.errors import ConfigError

log = logging.getLogger("runner")

# Packages besides runner.* whose classes YAML may name in `_target_` (the run's `allow_code`).
_ALLOWED: list[str] = []


def allow_code(packages: list[str]) -> None:
    """Let `_target_`s name classes of these packages (a user's own solvers and scorers) for this run."""
    _ALLOWED[:] = [str(p).rstrip(".") for p in packages]


def _ours(name: str, packages: tuple[str, ...]) -> bool:
    """Whether a dotted name lies in one of `packages` (by its text: `runner` or `runner.x`, not `runnerx`)."""
    return any(name == p or name.startswith(p + ".") for p in packages)


def target_class(target: Any, packages: tuple[str, ...] | None = None) -> tuple[type | None, str]:
    """The class a `_target_` names, if it may be built: (class, "") or (None, why not).

    A prefix check on the text is not enough: `runner.run.store.os.open` starts with `runner.` and is os.open,
    and `runner.config.OmegaConf.save` writes any file. So the target is resolved the way Hydra resolves it
    (modules imported, then attributes) and every step must stay in `packages` (runner and the run's
    `allow_code`): a module step must be the real submodule of that name (not a module some file imported,
    such as `os`), a class step a class whose `__module__` is in those packages (a runner class re-exported
    by `runner`, such as runner.BaseTask, is fine; omegaconf's OmegaConf is not). The end must be a class:
    functions, methods and other objects are refused (runner's own `write_json` or `allow_code` are
    functions a config must not call). Nothing outside `packages` is imported to find out."""
    import importlib
    import inspect

    packages = packages or ("runner", *_ALLOWED)
    if not isinstance(target, str) or not target:
        return None, "is not a dotted class name"
    if not _ours(target, packages):
        return None, "is outside runner.*"
    parts = target.split(".")
    if any(not p.isidentifier() or p.startswith("__") for p in parts):
        return None, "is not a plain dotted class name"
    try:
        obj: Any = importlib.import_module(parts[0])
    except ImportError as exc:
        return None, f"cannot be imported ({exc})"
    for i, part in enumerate(parts[1:], start=2):
        path = ".".join(parts[:i])
        if inspect.ismodule(obj):
            value = getattr(obj, part, None)
            if value is None and hasattr(obj, "__path__"):  # a submodule not imported yet
                try:
                    value = importlib.import_module(path)
                except ModuleNotFoundError as exc:
                    if exc.name is None or not path.startswith(exc.name):
                        raise
                except ImportError as exc:
                    return None, f"cannot be imported ({exc})"
        else:
            value = inspect.getattr_static(obj, part, None)
        if value is None:
            return None, f"does not exist ({path} not found)"
        if inspect.ismodule(value):
            if value.__name__ != path or not _ours(path, packages):
                return None, f"passes through the module {value.__name__} ({path} is not a module of its own)"
        elif not inspect.isclass(value):
            return None, f"is not a class ({path} is a {type(value).__name__})"
        elif not _ours(str(value.__module__), packages):
            return None, f"names {value.__module__}.{value.__qualname__}, defined outside runner.* and allow_code"
        obj = value
    if not inspect.isclass(obj):
        return None, "is a module, not a class"
    return obj, ""


def instantiate(spec: Any, where: str, **kwargs: Any) -> Any:
    """`hydra.utils.instantiate` restricted to classes defined in runner.* and the packages in `allow_code`
    (`target_class`); a bad key or target names `where`. Nested `_target_`s are not built here
    (`_recursive_=False`): the classes that build their parts call this function for each of them."""
    from hydra.utils import instantiate as hydra_instantiate

    target = spec.get("_target_") if isinstance(spec, (Mapping, DictConfig)) else None
    if not target:
        raise ConfigError(f"{where}: no _target_ given; it must name a class in runner.*")
    cls, why = target_class(target)
    if cls is None:
        head = str(target).split(".")[0]
        todo = (f"to build your own classes, list their package in allow_code (e.g. allow_code=[{head}])"
                if why == "is outside runner.*" and str(target) != head else
                "name a class defined in runner.* or in a package listed in allow_code")
        raise ConfigError(f"{where}._target_: '{target}' {why}; {todo}")
    log.debug("Instantiating %s <%s>", where, target)
    try:
        # The class checked is the class built: Hydra gets the object, not the text to look up again.
        return hydra_instantiate(spec, _recursive_=False, **{**kwargs, "_target_": cls})
    except Exception as exc:  # noqa: BLE001 - Hydra wraps the real cause; unwrap it for one clear line
        cause: BaseException = exc
        while cause.__cause__ is not None:
            cause = cause.__cause__
        text = " ".join(str(cause).split())
        if isinstance(cause, TypeError) and "unexpected keyword argument" in text:
            bad = text.split("unexpected keyword argument")[-1].strip(" '\"")
            raise ConfigError(f"{where}: unknown key '{bad}' for {target}; check the spelling in its YAML "
                              "file or override") from None
        if isinstance(cause, ConfigError):
            raise cause from None
        raise ConfigError(f"{where}: cannot build {target}: {type(cause).__name__}: {text}") from None


CALLBACKS = "hydra.callbacks"


def hydra_callback_problem(args: list[str]) -> str | None:
    """Why a command-line override of `hydra.callbacks` must be refused, before Hydra builds it.

    Hydra instantiates every `hydra.callbacks.<name>` itself (recursively, nested `_target_`s too) when the
    run starts, before the runner's `instantiate` sees anything: `+hydra.callbacks.x._target_=os.system`
    or `...=omegaconf.OmegaConf.save` would run as the user. So every `_target_` an override puts under
    hydra.callbacks must be a hydra Callback class defined in runner.* or a package given by allow_code
    (on the same command line), its values must be literal (an interpolation could bring in a node with a
    `_target_` of its own) and no config group may be placed there (`+x@hydra.callbacks.y=...`). Callbacks
    in a user's own YAML files (hydra.searchpath, --config-dir) are code the user chose to run."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    parser = OverridesParser.create()
    parsed = []
    if not any("callbacks" in arg for arg in args):
        return None  # nothing to parse (9 ms of Hydra's override parser on every start)
    for arg in args:
        if arg.startswith("-") or ("=" not in arg and not arg.startswith("~")):
            continue  # a flag (-m, --config-dir=...) or a flag's value, not an override
        try:
            parsed.append((arg, parser.parse_overrides([arg])[0]))
        except HydraException:
            continue  # Hydra reports the bad override itself
    allowed = ["runner"]
    for _, o in parsed:
        value: Any = None if o.is_sweep_override() else o.value()
        if o.key_or_group == "allow_code" and isinstance(value, list):
            allowed += [str(p).rstrip(".") for p in value]
    for arg, o in parsed:
        key, package = str(o.key_or_group), str(o.package or "")
        if package == CALLBACKS or package.startswith(CALLBACKS + "."):
            return (f"'{arg}': a config group cannot be placed under {CALLBACKS}; Hydra builds callbacks before "
                    "the run starts, so they come only from the runner's config or your own YAML files")
        values: list[Any] = list(o.sweep_string_iterator()) if o.is_sweep_override() else [o.value()]
        if key == "hydra" and isinstance(values[0], dict) and "callbacks" in values[0]:  # hydra={callbacks:...}
            key, values = CALLBACKS, [values[0]["callbacks"]]
        if o.is_delete() or not (key == CALLBACKS or key.startswith(CALLBACKS + ".")):
            continue
        for value in values:
            why = _callback_value_problem(key, value, tuple(allowed))
            if why:
                return (f"'{arg}': {why}; Hydra builds callbacks itself, before the run starts: name a hydra "
                        "Callback class defined in runner.* or in a package listed in allow_code")
    return None


def _callback_value_problem(key: str, value: Any, packages: tuple[str, ...]) -> str | None:
    """What is wrong with `value` set at `key` under hydra.callbacks (every `_target_` in it, at any depth)."""
    from hydra.experimental.callback import Callback

    if isinstance(value, dict):
        for k, v in value.items():
            why = _callback_value_problem(f"{key}.{k}", v, packages)
            if why:
                return why
        return None
    if isinstance(value, list):
        return next((w for i, v in enumerate(value) if (w := _callback_value_problem(f"{key}[{i}]", v, packages))),
                    None)
    if isinstance(value, str) and "${" in value:
        return f"{key} is an interpolation; give hydra.callbacks literal values"
    if key.rsplit(".", 1)[-1] != "_target_":
        return None
    cls, why = target_class(value, packages)
    if cls is None:
        return f"{key} '{value}' {why}"
    if not issubclass(cls, Callback):
        return f"{key} '{value}' is not a hydra Callback"
    return None
