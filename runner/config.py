"""The config side of the runner: the structured-config schema Hydra validates every composed config
against (a typo names its key), and `instantiate`, which builds `_target_`s inside `runner.*` only and
turns anything wrong into a ConfigError naming the key."""

from __future__ import annotations

import dataclasses
import difflib
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import (  # noqa: UP035 - OmegaConf needs typing generics
    Any,
)

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, DictConfig, OmegaConf

from runner.errors import ConfigError
from runner.paths import PACKAGE

log = logging.getLogger("runner")


@dataclass
class ModelConfig:
    """A litellm endpoint: the model under test, or one judge of a panel."""

    name: str = MISSING
    """Short display name, used in results and file names."""
    model: str = MISSING
    """A litellm model string, e.g. `openai/gpt-4o-mini`."""
    api_base: str | None = None
    api_key: str | None = None
    """Leave null to use the provider's usual env var; else `${oc.env:VAR}` (never a literal key)."""
    concurrency: int = 16
    """Most requests in flight for this entry (a ceiling: see `adaptive`)."""
    adaptive: bool = True
    """Requests in flight follow the provider: start below `concurrency`, grow while calls succeed, halve on
    a 429 or an exhausted rate-limit window (runner/models/limiter.py); false keeps them at `concurrency`."""
    params: dict[str, Any] = field(default_factory=dict)
    """Passed to the provider (temperature, max_tokens, ...)."""
    timeout: float = 120.0
    """Seconds per attempt."""
    max_retries: int = 5
    """Retries after the first attempt, for 429/5xx/timeouts/broken bodies."""
    backoff: float = 1.0
    """Seconds before the first retry; doubles each retry (with jitter), unless Retry-After says otherwise."""
    server: dict[str, Any] | None = None
    """An embedded server to start for this entry (`_target_` into runner.models.local_server)."""
    rubrics: dict[str, Any] = field(default_factory=dict)
    """As a judge: the rubrics it asks in place of a task's own, by file name, e.g. `{judge_refusal.j2:
    {rubric: judge_refusal_small.j2, structured: false}}` (keys of the task's judged scorer). The embedded
    demo judge needs questions a 135M model can answer (runner/build.py `panel_rubrics`)."""
    pricing: Any = None
    """`{input_per_mtok: X, output_per_mtok: Y}` (USD per million tokens): overrides litellm's prices.
    Typed Any because OmegaConf cannot merge a `model.pricing={...}` override into a null Optional[Dict];
    runner/accounting.py `parse_pricing` checks it."""


@dataclass
class JudgesConfig:
    """A judge panel: who grades."""

    panel: list[ModelConfig] = field(default_factory=list)


@dataclass
class CacheConfig:
    """The persistent response cache shared by all runs."""

    enabled: bool = True
    dir: str | None = None
    """Default: `$RUNNER_CACHE_DIR`, else `$XDG_CACHE_HOME/runner`, else `~/.cache/runner`."""


@dataclass
class StatsConfig:
    """How intervals and judge statistics are computed."""

    n_boot: int = 1000
    """Bootstrap resamples (seeded with the run's `seed`)."""


@dataclass
class BudgetConfig:
    """A hard limit on what one run spends."""

    max_usd: float | None = None
    """Once the cost this run spent (model and judges; cache hits are free) reaches it, no new request is
    sent; results.json says "stopped": "budget" and the exit status is 4; a re-run resumes."""


@dataclass
class AuditConfig:
    """Compare the judges with human labels at the end of the run (audit.json and audit.md)."""

    labels: str | None = None
    """A JSONL or CSV file of `id`, `task`, `label` rows (runner/audit.py)."""


@dataclass
class RunnerConfig:
    """The root config composed from conf/config.yaml."""

    benchmark: Any = MISSING
    model: ModelConfig = MISSING
    judges: JudgesConfig = MISSING
    tracker: Any = MISSING
    cache: CacheConfig = field(default_factory=CacheConfig)
    stats: StatsConfig = field(default_factory=StatsConfig)
    audit: AuditConfig = field(default_factory=AuditConfig)
    budget: BudgetConfig = field(default_factory=BudgetConfig)
    seed: int = 0
    epochs: int = 1
    """Ask every sample this many times, as independent requests (records carry `epoch`; providers that
    take a `seed` get seed + epoch); metrics are over all epochs, intervals clustered by sample."""
    workers: int | None = None
    """Processes that share one run's pending samples (each with its own event loop and connections);
    null picks from the cores and the work, 1 keeps everything in this process."""
    progress: bool = True
    """Show rich progress bars (they turn off by themselves when stderr is not a terminal)."""
    resume: str = "auto"
    """`auto`: a re-run into the same run dir keeps finished samples whose fingerprint matches and stops
    if any differs; `refresh`: ask exactly the samples whose fingerprint differs again."""
    fail_on_error: float = 0.0
    """The share of samples (in [0, 1]) that may end as errors with exit status 0."""
    allow_code: list[str] = field(default_factory=list)
    """Packages besides runner.* whose classes `_target_` may name (your own solvers, scorers, trackers)."""
    rejudge: str | None = None
    """Set by `python -m runner.rejudge SRC`: the model's replies come from SRC's records, not the model."""
    dry_run: bool = False
    """Send nothing: print what the run would send and cost, and write only plan.json (runner/dry_run.py)."""
    pricing_file: str | None = None
    """A JSON file in litellm's model-prices format, merged over litellm's price map for this run
    (accounting, dry runs, budgets); an entry's own `pricing` still wins (runner/models/prices.py)."""


def package_dir(relative: str) -> str:
    """`${runner.package_dir:benchmarks/eve/sample}`: a folder shipped inside the runner package."""
    return str(PACKAGE / relative)


def swept(sweep_dir: str | Path, job_overrides: list[str]) -> str:
    """What this job of a -m sweep was given of what the sweep varies, e.g. `openai-a` for the job
    `model.model=openai/a` of `-m model.model=openai/a,openai/b`: the values of the sweep's swept keys
    (read from the sweep's `multirun.yaml`), joined by `,`, safe as a folder name; "" when none."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        saved = OmegaConf.load(Path(sweep_dir) / "multirun.yaml")
        parser = OverridesParser.create()
        keys = [o.key_or_group for o in parser.parse_overrides(list(saved.hydra.overrides.task))
                if o.is_sweep_override()]
        mine = {o.key_or_group: o.get_value_element_as_str() for o in parser.parse_overrides(job_overrides)}
    except Exception:  # noqa: BLE001 - no sweep file (a job run by hand): nothing is known to vary
        return ""
    values = [_safe(mine[k]) for k in keys if k in mine]
    return ",".join(v for v in values if v)[:80]


def _safe(value: str) -> str:
    return re.sub(r"[^\w.,=+-]+", "-", value).strip("-")


def job_dir(*, _root_: Any) -> str:
    """`hydra.sweep.subdir` (conf/config.yaml): the job number and what the sweep varies, so two jobs of
    `-m model=openai-compatible model.model=a,b` are `0_a` and `1_b`; the model choice when nothing varies."""
    hydra = _root_.hydra
    varied = swept(str(hydra.sweep.dir), list(hydra.overrides.task))
    return f"{hydra.job.num}_{varied or hydra.runtime.choices.get('model')}"


def register() -> None:
    """Make the schema and resolvers known to Hydra (idempotent); conf/config.yaml lists the schema first."""
    ConfigStore.instance().store(name="runner_schema", node=RunnerConfig)
    if not OmegaConf.has_resolver("runner.package_dir"):
        OmegaConf.register_new_resolver("runner.package_dir", package_dir)
    if not OmegaConf.has_resolver("runner.job_dir"):
        OmegaConf.register_new_resolver("runner.job_dir", job_dir)


def plain(cfg: Any) -> Any:
    """A config node as plain Python (resolved); anything else as it is."""
    return OmegaConf.to_container(cfg, resolve=True) if isinstance(cfg, DictConfig) else cfg


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

    A prefix check on the text is not enough: `runner.store.os.open` starts with `runner.` and is os.open,
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
    return (f"{where}{missing} is not a key of the runner's config"
            + (f" (did you mean {parent + '.' if parent else ''}{hint}?)" if hint else "")
            + f"; the keys{' of ' + parent if parent else ''} are: {', '.join(known)}")
