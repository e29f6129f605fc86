"""From a composed config to objects: benchmark, tasks, model, judge panel, tracker, embedded servers.

Only `_target_`s inside `runner.*` are instantiated; anything wrong becomes a ConfigError naming the key.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from runner.benchmarks.base import Benchmark, Task
from runner.errors import ConfigError
from runner.judges.panel import Panel
from runner.models.cache import ResponseCache, default_cache_dir
from runner.models.litellm_model import Endpoint, endpoint_from_config
from runner.models.local_server import LocalServer

log = logging.getLogger("runner")


def _plain(cfg: Any) -> Any:
    return OmegaConf.to_container(cfg, resolve=True) if isinstance(cfg, DictConfig) else cfg


def instantiate(spec: Any, where: str, **kwargs: Any) -> Any:
    """`hydra.utils.instantiate` restricted to runner.*; a bad key or target names `where`."""
    from hydra.utils import instantiate as hydra_instantiate

    target = spec.get("_target_") if isinstance(spec, (Mapping, DictConfig)) else None
    if not target:
        raise ConfigError(f"{where}: no _target_ given; it must name a class in runner.*")
    if not str(target).startswith("runner."):
        raise ConfigError(f"{where}._target_: '{target}' is outside runner.*; only runner classes are built")
    log.debug("Instantiating %s <%s>", where, target)
    try:
        return hydra_instantiate(spec, _recursive_=False, **kwargs)
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


@dataclass
class Built:
    """Everything a run needs, plus the servers to stop at the end."""

    benchmark: Benchmark
    tasks: list[Task]
    model: Endpoint | None
    panel: Panel
    tracker: Any
    cache: ResponseCache | None
    stack: ExitStack = field(default_factory=ExitStack)

    def endpoints(self) -> list[Endpoint]:
        """The model under test and every judge."""
        return ([self.model] if self.model else []) + list(self.panel.judges)


def build(cfg: DictConfig, run_dir: Path, *, start_servers: bool = True) -> Built:
    """Build the run's objects and check capabilities before any request is sent.

    Embedded servers are started only for entries the selected tasks use, and stopped by `Built.stack`.
    """
    benchmark = instantiate(cfg.benchmark, "benchmark")
    tasks = benchmark.build_tasks()
    cache = None
    if cfg.cache.enabled:
        cache = ResponseCache(cfg.cache.dir or default_cache_dir())
    needs_model = any(t.needs_model for t in tasks)
    needs_judges = any(t.needs_judges for t in tasks)
    judge_entries = [_plain(j) for j in cfg.judges.panel] if needs_judges else []
    if needs_judges and not judge_entries:
        judged = ", ".join(t.name for t in tasks if t.needs_judges)
        raise ConfigError(f"judges.panel is empty but task(s) {judged} need judges; pick judges=local, "
                          "judges=one or judges=three, or drop them with benchmark.tasks=[...]")
    names = [j["name"] for j in judge_entries]
    if len(set(names)) != len(names):
        raise ConfigError(f"judges.panel: judge names must be unique (got {', '.join(names)})")
    model_entry = _plain(cfg.model) if needs_model else None
    stack = ExitStack()
    try:
        servers: dict[Any, LocalServer] = {}
        for where, entry in [("model", model_entry)] + [(f"judges.panel[{i}]", e)
                                                          for i, e in enumerate(judge_entries)]:
            if entry and entry.get("server"):
                _attach_server(entry, where, servers, stack, run_dir, start_servers)
        model = endpoint_from_config(model_entry, cache) if model_entry else None
        panel = Panel([endpoint_from_config(e, cache) for e in judge_entries])
        tracker = instantiate(cfg.tracker, "tracker")
    except BaseException:
        stack.close()
        raise
    return Built(benchmark=benchmark, tasks=tasks, model=model, panel=panel, tracker=tracker,
                 cache=cache, stack=stack)


def _attach_server(entry: dict[str, Any], where: str, servers: dict[Any, LocalServer], stack: ExitStack,
                   run_dir: Path, start: bool) -> None:
    server: LocalServer = instantiate(entry["server"], f"{where}.server")
    shared = servers.get(server.key)
    if shared is None:
        servers[server.key] = shared = server
        if start:
            log.info("Starting the embedded model server for %s (%s)", where, server.gguf)
            stack.callback(server.stop)
            shared.start(log_path=run_dir / "local_server.log")
    # The embedded server takes any key; litellm's openai provider insists on having one.
    entry["api_base"] = shared.api_base
    entry["api_key"] = entry.get("api_key") or "local"
    entry.pop("server", None)
