"""`benchmark=vakra`: judge recorded VAKRA trajectories by replaying their tool calls against MCP servers.

Every `<domain>.json` in `gt_root` (or the `domains` asked for) is one task, built from the `task` spec
(`specs.<domain>` overrides it for one domain). The predictions are files in `pred_root`; the servers
come from `mcp_config` (VAKRA's mcp_connection_config.yaml). Bad config stops the run with one line,
and so does no MCP server able to start (exit 3); bad data, or one domain's server, fails only the dialogue
or domain it is in. A ground-truth dialogue without a prediction is a missing prediction (scored 0 as VAKRA
does), not an error.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from runner.benchmarks.base import Benchmark
from runner.benchmarks.vakra.dialogues import CAPABILITIES
from runner.benchmarks.vakra.policy import load_policy_judge
from runner.benchmarks.vakra.report import summary
from runner.benchmarks.vakra.scoring import AGGREGATES
from runner.benchmarks.vakra.servers import StartLedger, preflight, server_entry
from runner.benchmarks.vakra.shortlist import METHODS, resolve
from runner.benchmarks.vakra.task import DomainTask, VakraSettings
from runner.errors import ConfigError
from runner.tasks.base import BaseTask, Loaded
from runner.types import TaskResult

MODES = ("replay", "agent")


def _choice(key: str, value: str, options: Sequence[str]) -> None:
    if value not in options:
        hint = difflib.get_close_matches(str(value), list(options), n=1)
        did_you_mean = f" (did you mean '{hint[0]}'?)" if hint else ""
        raise ConfigError(f"benchmark.{key}: unknown value '{value}'{did_you_mean}; choose from: {', '.join(options)}")


def _directory(key: str, value: str | None) -> Path:
    if not value:
        raise ConfigError(f"benchmark.{key}: not set; give the directory holding one <domain>.json per domain")
    path = Path(str(value)).expanduser()
    if not path.is_dir():
        raise ConfigError(f"benchmark.{key}={value}: no such directory; give the directory holding one "
                          "<domain>.json per domain")
    return path


class VakraBenchmark(Benchmark):
    """VAKRA's evaluator as a benchmark: one task per domain, one sample per ground-truth dialogue."""

    def __init__(self, name: str = "vakra", capability: str = "capability_dashboard_apis",
                 gt_root: str | None = None, pred_root: str | None = None, mcp_config: str | None = None,
                 domains: Sequence[str] | None = None, replay: bool = True, policy_judge: str | None = None,
                 policy_capabilities: Sequence[str] = ("capability_multiturn",), aggregate: str = "mean",
                 tool_timeout: float = 60.0, start_timeout: float = 60.0, replay_concurrency: int = 4,
                 task: Mapping[str, Any] | None = None, specs: Mapping[str, Any] | None = None,
                 tasks: Sequence[str] | None = None, limit: int | None = None, data_dir: str | None = None,
                 num_fewshot: int | None = None, reporters: Sequence[Mapping[str, Any]] = (),
                 mode: str = "replay", input_root: str | None = None, max_steps: int = 20, max_tools: int = 128,
                 shortlist: str = "auto", agent_concurrency: int = 8) -> None:
        if data_dir is not None:
            raise ConfigError(f"benchmark.data_dir={data_dir}: vakra reads benchmark.gt_root and benchmark.pred_root "
                              "(one <domain>.json each), not data_dir; leave data_dir null")
        if num_fewshot is not None:
            raise ConfigError(f"benchmark.num_fewshot={num_fewshot}: vakra scores the recorded predictions in "
                              "benchmark.pred_root and has no few-shot examples; leave num_fewshot null")
        if limit is not None and int(limit) < 0:
            raise ConfigError(f"benchmark.limit: must be a positive number of dialogues, got {limit}")
        # The tasks are the domains found on disk, so `tasks` is checked in domain_names(), not against specs.
        super().__init__(name, dict(specs or {}), limit=limit, reporters=reporters)
        self.task_spec = task
        _choice("capability", capability, list(CAPABILITIES))
        _choice("aggregate", aggregate, AGGREGATES)
        for cap in policy_capabilities or ():
            _choice("policy_capabilities", cap, list(CAPABILITIES))
        for key, value in (("tool_timeout", tool_timeout), ("start_timeout", start_timeout),
                           ("replay_concurrency", replay_concurrency)):
            if not float(value) > 0:
                raise ConfigError(f"benchmark.{key}: must be a positive number, got {value}")
        _choice("mode", mode, MODES)
        _choice("shortlist", shortlist, METHODS)
        for key, number in (("max_steps", max_steps), ("max_tools", max_tools),
                            ("agent_concurrency", agent_concurrency)):
            if int(number) < 1:
                raise ConfigError(f"benchmark.{key}: must be a positive whole number, got {number}")
        if mode == "agent" and not replay:
            raise ConfigError("benchmark.replay=false: agent mode runs the model on live MCP servers; leave replay "
                              "true and give benchmark.mcp_config")
        if replay and not mcp_config:
            raise ConfigError("benchmark.mcp_config: not set; give an mcp_connection_config.yaml, or set "
                              "benchmark.replay=false to score the tool responses stored in the files")
        self.capability = capability
        self.gt_root = _directory("gt_root", gt_root)
        self.mode = mode
        # Agent mode makes its predictions, so pred_root is not read; the agent inputs are.
        self.input_root = _directory("input_root", input_root) if mode == "agent" else None
        self.pred_root = Path(str(pred_root)) if mode == "agent" else _directory("pred_root", pred_root)
        self.max_steps, self.max_tools, self.shortlist = int(max_steps), int(max_tools), shortlist
        self.agent_concurrency = int(agent_concurrency)
        self.mcp_config = mcp_config
        self.replay = bool(replay)
        self.policy_judge = policy_judge
        self.policy_capabilities = tuple(policy_capabilities or ())
        self.aggregate = aggregate
        self.tool_timeout = float(tool_timeout)
        self.start_timeout = float(start_timeout)
        self.replay_concurrency = int(replay_concurrency)
        self.wanted = [str(d) for d in (domains or tasks or [])]
        self.selected = self.wanted

    def domain_names(self) -> list[str]:
        """The domains to evaluate: those asked for, else every `<domain>.json` in gt_root (sorted)."""
        found = sorted(p.stem for p in self.gt_root.glob("*.json"))
        if not found:
            raise ConfigError(f"benchmark.gt_root={self.gt_root}: holds no <domain>.json file; point it at "
                              f"VAKRA's ground truth for {self.capability} (e.g. data/test/<capability>/output)")
        unknown = [d for d in self.wanted if d not in found]
        if unknown:
            hint = difflib.get_close_matches(unknown[0], found, n=1)
            raise ConfigError(f"benchmark.domains: no ground truth for domain '{unknown[0]}' in {self.gt_root}"
                              + (f" (did you mean '{hint[0]}'?)" if hint else "") + f"; domains: {', '.join(found)}")
        return self.wanted or found

    def build_tasks(self) -> list[BaseTask]:
        """One DomainTask per domain, bound to the run's settings (nothing starts yet)."""
        from runner.config import instantiate, plain

        domains = self.domain_names()
        self.selected = domains
        entry = server_entry(str(self.mcp_config), self.capability, CAPABILITIES[self.capability]) \
            if self.replay else None
        if entry is not None:
            preflight(entry)  # a command that does not exist can start no server: exit 3 before anything runs
        settings = VakraSettings(
            capability=self.capability, gt_root=self.gt_root, pred_root=self.pred_root, domains=tuple(domains),
            server_entry=entry, aggregate=self.aggregate,
            policy=load_policy_judge(self.policy_judge) if self.policy_judge else None,
            policy_capabilities=self.policy_capabilities, tool_timeout=self.tool_timeout,
            start_timeout=self.start_timeout, replay_concurrency=self.replay_concurrency, limit=self.limit,
            ledger=StartLedger() if entry is not None else None, input_root=self.input_root,
            max_steps=self.max_steps, max_tools=self.max_tools, shortlist=resolve(self.shortlist),
            agent_concurrency=self.agent_concurrency)
        tasks: list[BaseTask] = []
        for domain in domains:
            spec, where = (self.specs[domain], f"benchmark.specs.{domain}") if domain in self.specs else \
                (self.task_spec, "benchmark.task")
            if spec is None:
                raise ConfigError("benchmark.task: missing; it is the task spec every domain is built from")
            task = instantiate(spec, where, name=domain)
            if not isinstance(task, DomainTask):
                raise ConfigError(f"{where}._target_: must be a runner.benchmarks.vakra.task.DomainTask")
            task.bind(settings)
            # What decides its records besides the dialogues (part of their fingerprints).
            task.spec = {**plain(spec),
                         "capability": self.capability, "replay": self.replay, "aggregate": self.aggregate,
                         "policy_judge": self.policy_judge, "policy_capabilities": list(self.policy_capabilities),
                         **({"mode": "agent"} if self.mode == "agent" else {})}
            tasks.append(task)
        return tasks

    def load(self, task: BaseTask) -> Loaded:
        """The domain's dialogues (read and paired by the task itself)."""
        assert isinstance(task, DomainTask)
        return task.load()

    WARNINGS = (*Benchmark.WARNINGS,
                ("n_missing_predictions", "{} ground-truth dialogue(s) have no prediction: scored 0 in the summary "
                                          "mean, left out of the domain means (missing_prediction_uuids in "
                                          "results.json)"),
                ("n_extra_predictions", "{} prediction(s) match no ground-truth dialogue and were not scored "
                                        "(extra_prediction_uuids in results.json)"))

    def summary(self, tasks: Sequence[BaseTask], results: Mapping[str, TaskResult]) -> dict[str, Any]:
        """VAKRA's overall figures (missing predictions count as 0), plus error and invalid counts."""
        return summary({t.name: results[t.name] for t in tasks if t.name in results})
