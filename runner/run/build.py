"""From a composed config to objects: benchmark, tasks, model, judge panel, tracker, embedded servers."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Collection, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from runner.benchmarks.base import Benchmark
from runner.config import allow_code, instantiate, plain
from runner.config.paths import conf_dir, name_problem
from runner.errors import ConfigError, EndpointError, RunnerError
from runner.judges.panel import Panel
from runner.models.budget import Budget, BudgetStop, request_cap, uncappable
from runner.models.cache import ResponseCache, default_cache_dir
from runner.models.entries import endpoint_from_config
from runner.models.litellm_model import Endpoint
from runner.models.local_server import LocalServer
from runner.models.prices import use_price_file
from runner.models.sent_params import REASONING_PARAMS
from runner.run.invocations import merge_usage, read_invocations
from runner.scorers.extractor import bind_extractors, extractors, wants_first_judge
from runner.tasks.base import BaseTask

log = logging.getLogger("runner")

EMBEDDED = "embedded:"
"""How an entry's `origin` starts when the embedded demo model serves it."""
PREFLIGHT = ({"role": "user", "content": "Reply with OK."},)
"""The preflight's one message: the smallest request that proves an endpoint takes this run's key."""


@dataclass
class Built:
    """Everything a run needs, plus the servers to stop at the end."""

    benchmark: Benchmark
    tasks: list[BaseTask]
    model: Endpoint | None
    panel: Panel
    tracker: Any
    cache: ResponseCache | None
    stack: ExitStack = field(default_factory=ExitStack)
    servers: list[tuple[LocalServer, list[Endpoint]]] = field(default_factory=list)
    budget: Budget | None = None
    """The run's spending limit, checked by every endpoint before each request."""
    extractors: list[Endpoint] = field(default_factory=list)
    """The choice scorers' extractors that are not the model or a judge (runner/scorers/extractor.py)."""
    demo: list[str] = field(default_factory=list)
    """Names of the entries served by the embedded demo model: their numbers prove the pipeline, not a
    model (results.json `demo`, the table's caveat)."""

    def endpoints(self) -> list[Endpoint]:
        """The model under test, every judge and every extractor."""
        return [endpoint for _, endpoint in self.roles()]

    def roles(self) -> list[tuple[str, Endpoint]]:
        """Each endpoint the run may call with its role in results.json usage: model, judge, extractor; each
        endpoint once, under its first role (the panel's first judge reading replies as the extractor is one
        endpoint). Two entries of one name stay two endpoints (runner/run/invocations.py by_name sums them)."""
        every = ([("model", self.model)] if self.model else []) + [("judge", j) for j in self.panel.judges] + \
            [("extractor", e) for e in self.extractors]
        first: dict[int, tuple[str, Endpoint]] = {}
        for role, e in every:
            first.setdefault(id(e), (role, e))
        return list(first.values())

    def check_keys(self) -> None:
        """Before any request: every endpoint whose provider needs a key it does not have, all in one line."""
        missing = [(e, variable) for e in self.endpoints() if (variable := e.missing_key())]
        if missing:
            # No "key: <value>" shape in the line: the redaction of secrets in error lines would mask the name.
            named = "; ".join(f"{e.name} ({e.model}) reads {variable}" for e, variable in missing)
            first = missing[0][1].split(" or ")[0]
            raise EndpointError(f"{len(missing)} endpoint(s) need an API key that is not set: {named}; export "
                                f"{'it' if len(missing) == 1 else 'each'} (or set the entry's api_key to "
                                f"${{oc.env:{first}}} in its YAML); no request was sent")

    def entry_keys(self) -> list[tuple[str, Endpoint]]:
        """Each endpoint the run may send requests to, with the config key of its entry (for error lines)."""
        from runner.models.replay import ReplayEndpoint

        wheres = {id(x.endpoint): x.where for x in extractors(self.tasks) if x.endpoint is not None}
        keyed = [("model", self.model)] if self.model and not isinstance(self.model, ReplayEndpoint) else []
        keyed += [(f"judges.panel[{i}]", judge) for i, judge in enumerate(self.panel.judges)]
        return keyed + [(wheres.get(id(e), e.name), e) for e in self.extractors]

    def check_budget(self, max_usd: float | None) -> None:
        """A budget needs every endpoint's worst case: a price and a max_tokens for each (the model's in each
        task that asks it); else the run stops here, before any request (ConfigError naming the keys)."""
        if max_usd is None:
            return
        problems = []
        for key, e in self.entry_keys():
            if not e.price_known():  # may import litellm (its price map): only when a budget needs it
                problems.append(f"{e.name} has no known price (set {key}.pricing={{input_per_mtok: X, "
                                "output_per_mtok: Y}, USD per million tokens)")
            asked: list[BaseTask | None] = [t for t in self.tasks if t.needs_model] if e is self.model else [None]
            open_ended = [t for t in asked if request_cap(e.request([], params=t.params if t else None)) is None]
            if open_ended:
                tasks = ", ".join(t.name for t in open_ended if t is not None)
                problems.append(f"{e.name} has no max_tokens (set {key}.params.max_tokens=N"
                                + (f", params.max_tokens=N for the whole run, or benchmark.specs.<task>.params."
                                   f"max_tokens for {tasks})" if tasks else ")"))
        uncappable(max_usd, problems)

    def start_budget(self, run_dir: Path) -> None:
        """The budget counts what earlier invocations of the run dir spent (invocations.jsonl): a resumed run
        spends only what is left. An amount it cannot know (an earlier reply without a price) stops the run."""
        if self.budget is None or not self.budget.limited:
            return
        usage = merge_usage([line.get("usage") or {} for line in read_invocations(run_dir)])
        unknown = [name for name, u in usage.items() if u.get("cost_usd", 0.0) is None]
        if unknown:
            raise ConfigError(f"budget.max_usd: earlier invocations of {run_dir} spent an unknown amount (the cost "
                              f"of {', '.join(unknown)} is null in {run_dir / 'invocations.jsonl'}), so no budget "
                              "can count it; re-run without budget.max_usd, or in a new hydra.run.dir")
        self.budget.start(sum(float(u.get("cost_usd") or 0.0) for u in usage.values()))

    def preflight_targets(self, tasks: Collection[str]) -> list[Endpoint]:
        """The endpoints the preflight asks: those the pending samples of `tasks` will call, when they are
        several (a run that calls one endpoint learns of a refused key from its first request, at the same
        price); never a replayed model (asked nothing) or the embedded model (no key to refuse, and its server
        answered when it started)."""
        from runner.models.replay import ReplayEndpoint

        chosen = [t for t in self.tasks if t.name in tasks]
        # A replayed model (rejudge) is asked nothing, so it is no endpoint the run calls: a one-judge rejudge
        # calls one endpoint and needs no preflight.
        called: list[Endpoint] = [self.model] if self.model is not None and \
            not isinstance(self.model, ReplayEndpoint) and any(t.needs_model for t in chosen) else []
        judged = any(t.needs_judges for t in chosen)
        called += self.panel.judges if judged else []
        called += [x.endpoint for x in extractors(chosen) if x.endpoint is not None]
        called = list({id(e): e for e in called}.values())
        if len(called) < 2:
            return []
        keyed = {id(e) for _, e in self.entry_keys()}
        return [e for e in called if id(e) in keyed and not (e.origin or "").startswith(EMBEDDED)]

    async def preflight(self, targets: Sequence[Endpoint]) -> None:
        """One `max_tokens: 1` request to each of `targets`, all at once and cached like any other request: a
        refused key stops the run (EndpointError, exit 3) before the model's first sample, having spent at most
        one tiny request per endpoint. Other failures are left to the samples (a 400 may only say that 1 token
        is too few for this model); a budget too small even for these stops the run as any request would."""
        async def probe(endpoint: Endpoint) -> None:
            # Without reasoning params: a thinking budget above one token of max_tokens is a 400 of its own.
            req = {k: v for k, v in endpoint.request(list(PREFLIGHT)).items() if k not in REASONING_PARAMS}
            caps = [k for k in ("max_tokens", "max_completion_tokens") if k in req] or ["max_tokens"]
            await endpoint.send({**req, **dict.fromkeys(caps, 1)})

        outcomes = await asyncio.gather(*(probe(e) for e in targets), return_exceptions=True)
        for endpoint, outcome in zip(targets, outcomes, strict=True):
            if outcome is None or isinstance(outcome, BudgetStop):
                continue  # proven; or the budget stopped the run, as any request would (exit 4)
            if isinstance(outcome, RunnerError) or not isinstance(outcome, Exception):
                raise outcome  # a refused key, nothing reachable; or Ctrl-C
            log.warning("preflight: the one-token request to %s failed (%s); the run goes on", endpoint.name,
                            " ".join(str(outcome).split())[:300])

    def start_servers(self, run_dir: Path) -> None:
        """Start the embedded servers (stopped by `stack`) and point their endpoints at them."""
        for server, endpoints in self.servers:
            log.info("Starting the embedded model server for %s (%s)", ", ".join(e.name for e in endpoints),
                     server.gguf)
            self.stack.callback(server.stop)
            server.start(log_path=run_dir / "local_server.log")
            for endpoint in endpoints:
                endpoint.api_base = server.api_base


def build(cfg: DictConfig, run_dir: Path) -> Built:
    """Build the run's objects and check them before any request is sent; start nothing, write nothing.

    Embedded servers are attached to the entries the selected tasks use; `Built.start_servers` starts them.
    """
    allow_code(list(cfg.get("allow_code") or []))
    use_price_file(cfg.get("pricing_file"))  # checked now; merged over litellm's prices once it is loaded
    entries = [plain(j) for j in cfg.judges.panel]
    benchmark = instantiate(panel_rubrics(cfg.benchmark, _shared_rubrics(entries)), "benchmark")
    tasks = benchmark.build_tasks()
    run_params = _run_params(cfg.get("params"), tasks)
    needs_model = any(t.needs_model for t in tasks)
    needs_judges = any(t.needs_judges for t in tasks)
    # An extractor asking the first judge (`extractor: judges`) puts it in the panel, which judges nothing then.
    judge_entries = entries if needs_judges else entries[:1] if wants_first_judge(tasks) else []
    if needs_judges and not judge_entries:
        judged = ", ".join(t.name for t in tasks if t.needs_judges)
        raise ConfigError(f"judges.panel is empty but task(s) {judged} need judges; pick a panel with "
                          f"judges=NAME ({', '.join(_panels())}), or drop them with benchmark.tasks=[...]")
    names = [j["name"] for j in judge_entries]
    if len(set(names)) != len(names):
        raise ConfigError(f"judges.panel: judge names must be unique (got {', '.join(names)})")
    model_entry = plain(cfg.model) if needs_model else None
    _check_names(benchmark, tasks, model_entry, judge_entries)
    if model_entry and not model_entry.get("server") and any(j.get("server") for j in judge_entries):
        raise ConfigError(f"model {model_entry['name']} would be graded by the embedded demo judge, which "
                          "only grades the embedded demo model; choose a real panel with judges=NAME "
                          f"({', '.join(p for p in _panels() if p != 'local')}) or your own judges file")
    audio = [t.name for t in tasks if t.needs_audio]
    if model_entry and model_entry.get("server") and audio:
        more = f" (and {len(audio) - 1} more task(s))" if len(audio) > 1 else ""
        raise ConfigError(f"the model under test, {model_entry['name']}, is the embedded demo model and reads "
                          f"text only, but {audio[0]}{more} plays it audio clips; pick an audio model "
                          "(model=gpt-4o-audio-preview or model=gemini-2.5-pro) or judge existing replies with "
                          "benchmark.prediction_dir=DIR")
    cache = ResponseCache(cfg.cache.dir or default_cache_dir()) if cfg.cache.enabled else None
    servers: dict[Any, tuple[LocalServer, list[dict[str, Any]]]] = {}
    for where, entry in [("model", model_entry)] + [(f"judges.panel[{i}]", e)
                                                      for i, e in enumerate(judge_entries)]:
        if entry and entry.get("server"):
            _attach_server(entry, where, servers)
    model = endpoint_from_config(model_entry, cache, run_params) if model_entry else None
    if model is not None and cfg.get("rejudge"):
        from runner.models.replay import ReplayEndpoint

        model = ReplayEndpoint(model, Path(cfg.rejudge))
        for _, entries in servers.values():  # the replayed model needs no server
            entries[:] = [e for e in entries if e is not model_entry]
        servers = {k: v for k, v in servers.items() if v[1]}
        model_entry = None
    judges = [endpoint_from_config(e, cache) for e in judge_entries]
    by_entry = {id(e): ep for e, ep in zip(judge_entries, judges, strict=True)}
    if model_entry is not None and model is not None:
        by_entry[id(model_entry)] = model
    extractors = bind_extractors(tasks, judge_entries, ([model] if model else []) + judges, cache)
    tracker = instantiate(cfg.tracker, "tracker")
    endpoints = ([model] if model else []) + judges + extractors
    budget = Budget(cfg.budget.max_usd)
    for endpoint in endpoints:
        endpoint.budget = budget
    demo = [e.name for e in endpoints if (e.origin or "").startswith(EMBEDDED)]
    return Built(benchmark=benchmark, tasks=tasks, model=model, panel=Panel(judges), tracker=tracker,
                 cache=cache, budget=budget, demo=demo, servers=[(server, [by_entry[id(e)] for e in entries])
                                                   for server, entries in servers.values()],
                 extractors=extractors)


def _run_params(given: Any, tasks: Sequence[BaseTask]) -> dict[str, Any]:
    """The run's `params.<key>=value`: they win over every task's and the model entry's params. One that
    contradicts a value a task requires (`requires:` in its YAML) stops the run here, before any request."""
    params = plain(given) if given is not None else {}
    if not isinstance(params, dict):
        raise ConfigError(f"params: {given!r} is no map of request params; set each key, e.g. params.max_tokens=4096")
    for task in tasks:
        for key, value in task.requires.items() if task.needs_model else ():
            if key in params and params[key] != value:
                raise ConfigError(f"params.{key}={params[key]!r} (the run's) contradicts benchmark.specs.{task.name}"
                                  f".requires.{key}={value!r} (the task needs it); drop params.{key}, or leave the "
                                  f"task out with benchmark.tasks=[...]")
    return params


def _check_names(benchmark: Benchmark, tasks: list[BaseTask], model: dict[str, Any] | None,
                 judges: list[dict[str, Any]]) -> None:
    """Names become file names in the run dir (samples/<task>.jsonl, MUGEN's <Task_Name>/, win_rate/...), so
    one that could lead out of it (`../../x`) or out of sight (`.x`) stops the run here, naming its key."""
    named: list[tuple[str, str, Any]] = [("benchmark.name", "benchmark name", benchmark.name)]
    named += [("benchmark.specs", "task name", t.name) for t in tasks]
    named += [("model.name", "model name", model.get("name"))] if model else []
    named += [(f"judges.panel[{i}].name", "judge name", j.get("name")) for i, j in enumerate(judges)]
    for key, what, name in named:
        problem = name_problem(name)
        if problem:
            shown = str(name).replace("\0", "\\0")
            raise ConfigError(f"{key}: the {what} '{shown}' {problem}; names are used as file and folder names in "
                              "the run dir, so they may not contain '/', '\\' or NUL nor start with '.': rename it")


def _shared_rubrics(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """The rubrics the panel's judges ask in place of a task's own (their entries' `rubrics`); a panel asks
    every judge the same prompt, so its judges must agree on them."""
    maps = [e.get("rubrics") or {} for e in entries]
    if any(m != maps[0] for m in maps[1:]):
        names = ", ".join(f"{e.get('name')}: {m or 'none'}" for e, m in zip(entries, maps, strict=True))
        raise ConfigError(f"judges.panel: the judges ask different rubrics ({names}); a panel asks each sample "
                          "one prompt, so give every judge the same `rubrics` (or none)")
    return maps[0] if maps else {}


def panel_rubrics(benchmark: Any, rubrics: dict[str, Any]) -> Any:
    """The benchmark config with every judged scorer whose `rubric` the panel replaces (its judges' `rubrics`,
    keyed by the rubric's file name) set to the panel's own; the config itself when nothing is replaced.

    The embedded 135M judge passes every reply it is shown under EVE's rubrics, "I don't know." and
    invented answers alike; it needs questions it can answer (conf/judges/local.yaml, docs/performance.md).
    """
    if not rubrics:
        return benchmark
    spec = OmegaConf.to_container(benchmark, resolve=True) if isinstance(benchmark, DictConfig) else benchmark
    replaced = 0

    def walk(node: Any) -> None:
        nonlocal replaced
        if isinstance(node, dict):
            rubric = node.get("rubric")
            if isinstance(rubric, str) and Path(rubric).name in rubrics:
                swap = rubrics[Path(rubric).name]
                node.update(swap if isinstance(swap, dict) else {"rubric": swap})
                replaced += 1
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(spec)
    return OmegaConf.create(spec) if replaced else benchmark


def _panels() -> list[str]:
    """The judge panels shipped in conf/judges (a user's own come through hydra.searchpath)."""
    folder = conf_dir() / "judges"
    return sorted(p.stem for p in folder.glob("*.yaml") if p.stem != "none")


def _attach_server(entry: dict[str, Any], where: str,
                   servers: dict[Any, tuple[LocalServer, list[dict[str, Any]]]]) -> None:
    if entry.get("api_base"):  # else the run would quietly ask the embedded model, not the server named
        key = where.replace("[", ".").replace("]", "")
        other = "model=openai-compatible" if where == "model" else "a judges file of your own"
        raise ConfigError(f"{where} sets both api_base and an embedded server (server:), so its requests would go to "
                          f"the embedded model, not to that api_base; to use that address add {key}.server=null "
                          f"(or use {other}), else drop the api_base")
    server: LocalServer = instantiate(entry["server"], f"{where}.server")
    if server.key not in servers:
        servers[server.key] = (server, [])
    servers[server.key][1].append(entry)
    # The embedded server takes any key; litellm's openai provider insists on having one. Its address
    # is new every run, so caches and fingerprints know it by what it serves.
    entry["api_key"] = entry.get("api_key") or "local"
    entry["origin"] = f"{EMBEDDED}{server.gguf}"
    # It runs on this machine: its calls cost nothing (a known price of 0, not an unknown one).
    entry["pricing"] = entry.get("pricing") or {"input_per_mtok": 0.0, "output_per_mtok": 0.0}
    entry.pop("server", None)
