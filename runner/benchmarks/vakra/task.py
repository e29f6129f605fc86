"""One VAKRA domain as a runner task: each ground-truth dialogue is a sample (its uuid is the id), so a run
resumes per dialogue. Evaluating a sample replays the predicted and ground-truth calls and scores the
last turn. In replay mode the predictions are files and only judges are called; in agent mode the model
under test first answers the dialogue's agent input with the domain's tools (agent.py), and its answer
and calls are the prediction, scored the same way.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from runner.benchmarks.vakra.agent import Agent, AgentAborted, Trajectory
from runner.benchmarks.vakra.agent_files import agent_turn, submission
from runner.benchmarks.vakra.dialogues import RERUN, Call, DomainFiles, answer_text, gt_turns, pred_turn, read_domain
from runner.benchmarks.vakra.policy import run_policy_judge
from runner.benchmarks.vakra.replay import DATA_TOOL, Outcome, Replayer
from runner.benchmarks.vakra.report import dialogue_score, domain_result, paired
from runner.benchmarks.vakra.scoring import RESPONSE_WINDOW, TurnScore, TurnScorer, aggregate
from runner.benchmarks.vakra.servers import DomainServers, ServerUnavailable, StartLedger, server_spec
from runner.run.provenance import data_block
from runner.tasks.base import BaseTask, Context, Loaded, PlannedCall
from runner.tasks.templates import check, render
from runner.types import Sample, SampleRecord, TaskResult

log = logging.getLogger("runner")
PROMPTS = Path(__file__).resolve().parent / "prompts"


@dataclass(frozen=True)
class VakraSettings:
    """What every domain task of a run shares (set by the benchmark)."""

    capability: str
    gt_root: Path
    pred_root: Path
    domains: tuple[str, ...]
    server_entry: Mapping[str, Any] | None
    """The capability's mcp_connection_config.yaml entry; None when replay is off."""
    aggregate: str = "mean"
    policy: Callable[[dict[str, Any]], Any] | None = None
    policy_capabilities: tuple[str, ...] = ("capability_multiturn",)
    tool_timeout: float = 60.0
    start_timeout: float = 60.0
    replay_concurrency: int = 4
    limit: int | None = None
    ledger: StartLedger | None = None
    """The run's record of which domains' servers started (to tell one broken domain from none able to start)."""
    input_root: Path | None = None
    """Agent mode: the agent inputs (`<domain>.json`); None in replay mode."""
    max_steps: int = 20
    max_tools: int = 128
    shortlist: str = "bm25"
    """How tools are shortlisted past max_tools (resolved: `embedding` or `bm25`)."""
    agent_concurrency: int = 8
    """Dialogues the agent answers at once per domain (each holds a server session throughout)."""

    @property
    def agent_mode(self) -> bool:
        return self.input_root is not None

    @property
    def source(self) -> Path:
        """Where the predictions come from: the prediction files, or the agent inputs they are made from."""
        return self.input_root if self.input_root is not None else self.pred_root


class DomainTask(BaseTask):
    """The dialogues of one domain (`<domain>.json` in gt_root and pred_root)."""

    needs_model = False
    needs_judges = True
    headline = "mean_dialogue_score"

    def __init__(self, name: str, correctness_prompt: str = "correctness.j2",
                 groundedness_prompt: str = "groundedness.j2", response_window: int = RESPONSE_WINDOW,
                 agent_prompt: str = "agent_system.j2", **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        for key, prompt in (("correctness_prompt", correctness_prompt), ("groundedness_prompt", groundedness_prompt),
                            ("agent_prompt", agent_prompt)):  # compiled now: a broken one stops the run at once
            check(PROMPTS, prompt, f"vakra domain {name}: {key}")
        self.scorer = TurnScorer(PROMPTS, correctness_prompt, groundedness_prompt, int(response_window))
        self.agent_prompt = agent_prompt
        self.agent: Agent | None = None
        self._agent_slots: asyncio.Semaphore | None = None
        self.settings: VakraSettings | None = None
        self.files: DomainFiles | None = None
        self.servers: DomainServers | None = None
        self.replayer: Replayer | None = None
        self._slots: asyncio.Semaphore | None = None
        self._warned_gt = False

    def bind(self, settings: VakraSettings) -> None:
        """Attach the run's settings; nothing is started until the first dialogue is evaluated."""
        self.settings = settings
        if settings.server_entry is not None:
            self.servers = DomainServers(server_spec(settings.server_entry, self.name),
                                         fresh=settings.capability == "capability_bi_apis",
                                         start_timeout=settings.start_timeout, call_timeout=settings.tool_timeout,
                                         domain=self.name, ledger=settings.ledger)
        self.replayer = Replayer(self.servers, settings.capability, settings.tool_timeout)
        if settings.agent_mode:
            self.needs_model = True
            self.agent = Agent(self.replayer, system_prompt=render(PROMPTS, self.agent_prompt, domain=self.name),
                               max_steps=settings.max_steps, max_tools=settings.max_tools,
                               shortlist_method=settings.shortlist)

    def load(self) -> Loaded:
        """Read and pair the domain's files: one sample per ground-truth dialogue, problems as bad rows."""
        s = self._settings()
        files = self.files = read_domain(self.name, s.gt_root, s.source, s.limit)
        gt_file, pred_file = s.gt_root / f"{self.name}.json", s.source / f"{self.name}.json"
        what = "agent input" if s.agent_mode else "prediction"
        if not files.pred_file_found:
            log.warning("vakra: %s has no %s file %s; all %d dialogues count as missing predictions",
                        self.name, what, pred_file, len(files.gt))
        for side, dupes in (("ground-truth", files.gt_duplicates), (what, files.pred_duplicates)):
            if dupes:
                log.warning("vakra: %s: duplicate uuid(s) in the %s file, the last occurrence of each is used: %s",
                            self.name, side, ", ".join(dupes))
        if files.pred_rows_without_uuid:
            log.warning("vakra: %s: %d %s row(s) in %s have no uuid and are ignored", self.name,
                        files.pred_rows_without_uuid, what, pred_file)
        samples: list[Sample] = []
        bad: list[tuple[Any, str]] = list(files.gt_problems)
        for uuid, gt in files.gt.items():
            prediction = files.pred.get(uuid)
            try:
                turns = gt_turns(gt)
            except ValueError as exc:
                bad.append((uuid, f"ground truth {uuid} in {gt_file}: {exc}; fix it and {RERUN}"))
                continue
            if files.pred_problem:
                bad.append((uuid, files.pred_problem))
                continue
            try:
                turn = None if prediction is None else \
                    pred_turn({"output": [agent_turn(prediction)]} if s.agent_mode else prediction, turns)
            except ValueError as exc:
                bad.append((uuid, f"{what} {uuid} in {pred_file}: {exc}; fix it and {RERUN}"))
                continue
            duplicate = [side for side, d in (("groundtruth", files.gt_duplicates),
                                              ("prediction", files.pred_duplicates)) if uuid in d]
            samples.append(Sample(id=uuid, input=str(turns[-1].get("query") or ""), target=turns[-1].get("answer"),
                                  metadata={"gt": gt, "turns": turns, "pred": prediction, "pred_turn": turn,
                                            "duplicate": duplicate}))
        if s.ledger is not None and self.servers is not None and any(x.metadata["pred"] is not None for x in samples):
            s.ledger.expect(self.name)
        used = [{"groundtruth": gt, what.replace(" ", "_"): files.pred.get(uuid)} for uuid, gt in files.gt.items()]
        return Loaded(shots=[], samples=samples, bad=bad,
                      data=data_block(f"{gt_file} + {pred_file}", None, used))

    async def evaluate(self, sample: Sample, shots: Sequence[Sample], ctx: Context) -> SampleRecord:
        """Replay the dialogue's calls and score its last turn."""
        s = self._settings()
        meta = sample.metadata
        if meta["pred"] is None:
            # A missing prediction is what VAKRA scores 0, not an error: nothing failed, so the exit status
            # does not change. It is left out of the domain mean (over paired dialogues), counts 0 in the
            # summary mean, and a resumed run looks for the prediction again (see `finished`).
            return SampleRecord(id=sample.id, task=self.name, prompt=sample.input, reference=sample.target,
                                scores={"dialogue_score": 0.0}, status="ok",
                                extra={"paired": False, "missing_prediction": True,
                                       "note": f"no {'agent input' if s.agent_mode else 'prediction'} for uuid "
                                               f"{sample.id} in {s.source / (self.name + '.json')}"})
        if self.servers is not None and self.servers.log_path is None and ctx.run_dir is not None:
            self.servers.log_path = ctx.run_dir / "mcp_logs" / f"{self.name}.log"
        uuid, turns, turn = str(sample.id), meta["turns"], meta["pred_turn"]
        assert self.replayer is not None and ctx.panel is not None
        agent: dict[str, Any] = {}
        usage: dict[str, Any] = {}
        reply: dict[str, Any] = {}  # the agent's final reply: how it ended, what it reasoned, who served it
        try:
            if self.agent is not None:
                trajectory = await self._ask(sample, ctx)
                reply = {"finish_reason": trajectory.finish_reason, "reasoning": trajectory.reasoning,
                         "served_model": trajectory.served_model}
                turn = {**turn, "answer": trajectory.answer, "sequence": {"tool_call": trajectory.tool_calls()}}
                agent = {"agent": trajectory.to_dict(), "prediction": submission(sample, self.name, trajectory, turn)}
                usage = {"model": {**trajectory.usage.__dict__, "served_model": trajectory.served_model}}
            async with self._replay_slot():
                predicted = await self.replayer.prediction(uuid, turn)
                ground_truth = await self.replayer.ground_truth(uuid, turns)
        except (ServerUnavailable, AgentAborted) as exc:
            if isinstance(exc, AgentAborted):
                agent = {"agent": exc.trajectory.to_dict(),
                         "prediction": submission(sample, self.name, exc.trajectory, turn, error=str(exc))}
            return SampleRecord(id=sample.id, task=self.name, prompt=sample.input, reference=sample.target,
                                status="error", error=str(exc), model=ctx.model.name if self.agent and ctx.model
                                else None, extra={"paired": True, **agent})
        gt_failed = [o for t in ground_truth for o in t if o.error]
        if gt_failed and not self._warned_gt:
            self._warned_gt = True  # once per domain: it is about the environment, not one dialogue
            log.warning("vakra: %s: %d ground-truth call(s) of %s failed on replay (first: %s -> %s); check that "
                        "the MCP server matches the ground truth (tool names, data)", self.name, len(gt_failed),
                        uuid, gt_failed[0].name, gt_failed[0].response[:200])
        last = turns[-1]
        pred_answer = answer_text(turn.get("answer"))
        policy = None
        judge_policy = s.policy
        if judge_policy is not None and s.capability in s.policy_capabilities:
            item = self._policy_input(sample, turn, pred_answer, predicted, ground_truth[-1])
            policy = lambda: run_policy_judge(judge_policy, item)  # noqa: E731 - called only if reached
        scored = await self.scorer.score(
            ctx.panel, query=sample.input, gt_answer=answer_text(last.get("answer")), pred_answer=pred_answer,
            gt_responses=[o.response for o in ground_truth[-1]], pred_responses=[o.response for o in predicted],
            policy=policy)
        dialogue_score = aggregate([scored.score], s.aggregate)  # VAKRA scores the last turn only
        return SampleRecord(
            id=sample.id, task=self.name, prompt=sample.input, reference=last.get("answer"), response=pred_answer,
            judgements=scored.judgements, scores={"dialogue_score": dialogue_score, **scored.scores()},
            status="invalid" if scored.invalid else "ok", usage={**usage, "judges": scored.usage},
            model=ctx.model.name if self.agent is not None and ctx.model is not None else None,
            extra={**agent, "paired": True, "capability": s.capability, "aggregate": s.aggregate,
                   "replayed": self.servers is not None, "num_turns": len(turns), "duplicate": meta["duplicate"],
                   "ground_truth_errors": len(gt_failed),
                   "per_turn": [_turn_details(last, sample.input, pred_answer, scored, predicted, ground_truth[-1])],
                   "tool_calls": {"prediction": [o.to_dict() for o in predicted],
                                  "ground_truth": [[o.to_dict() for o in t] for t in ground_truth]}}, **reply)

    async def _ask(self, sample: Sample, ctx: Context) -> Trajectory:
        """The model under test answers the dialogue's agent input on a leased server (capability 1: its
        own fresh server, its data loaded by the runner first, as VAKRA's runner does)."""
        assert self.agent is not None and self.servers is not None and ctx.model is not None
        uuid = str(sample.id)
        prelude = [Call(DATA_TOOL, {"tool_universe_id": uuid})] if self.replayer and self.replayer.stateful else []
        if self._agent_slots is None:
            self._agent_slots = asyncio.Semaphore(max(1, self._settings().agent_concurrency))
        async with self._agent_slots, self.servers.session() as session:
            return await self.agent.run(ctx.model, session, sample.metadata["pred"], params=self.params,
                                        prelude=prelude)

    def planned_calls(self, sample: Sample, shots: Sequence[Sample], judges: Sequence[str], reply: str | None,
                      seed: int) -> list[PlannedCall]:
        """In agent mode the model's steps (max_steps at most, the question as their text: inexact), then
        the judges' rubrics; a missing prediction scores 0 without a judge."""
        if self.agent is None and sample.metadata.get("pred") is None:
            return []
        calls = super().planned_calls(sample, shots, judges, reply, seed)
        return [replace(c, calls=self.agent.max_steps) if c.role == "model" and self.agent is not None else c
                for c in calls]

    def fingerprint_parts(self, sample: Sample, shots: Sequence[Sample], ctx: Context) -> dict[str, Any]:
        parts = super().fingerprint_parts(sample, shots, ctx)
        if self.agent is not None:  # how the agent is asked decides its records too
            parts["agent"] = {"prompt": self.agent.system_prompt, "max_steps": self.agent.max_steps,
                              "max_tools": self.agent.max_tools, "shortlist": self.agent.shortlist_method}
        return parts

    def rubric_texts(self) -> list[str]:
        return [(self.scorer.prompt_dir / name).read_text(encoding="utf-8")
                for name in (self.scorer.correctness_prompt, self.scorer.groundedness_prompt)]

    def finished(self, record: Mapping[str, Any]) -> bool:
        """Done unless an error, or a missing prediction (re-checked on resume: it costs no request)."""
        return super().finished(record) and not (record.get("extra") or {}).get("missing_prediction")

    def aggregate(self, records: Sequence[Mapping[str, Any]]) -> TaskResult:
        return domain_result(records, self.pairing())

    def sample_scores(self, record: Mapping[str, Any]) -> dict[str, float | None]:
        """`mean_dialogue_score` is the mean over paired dialogues: a dialogue without a prediction has no value
        of it (None, left out of its interval and a sweep's pairs), though VAKRA's overall mean counts it 0."""
        if not paired([record]):
            return {"mean_dialogue_score": None}
        return {"mean_dialogue_score": dialogue_score(record)}

    async def close(self) -> None:
        if self.servers is not None:
            await self.servers.close()

    def _settings(self) -> VakraSettings:
        if self.settings is None:
            raise RuntimeError(f"vakra task {self.name} was not bound to a benchmark")
        return self.settings

    def pairing(self) -> dict[str, Any]:
        """What pairing the domain's two files found (counts, extra and duplicate uuids); read once."""
        if self.files is None and self.settings is not None:  # rescoring: the files were not loaded
            s = self.settings
            self.files = read_domain(self.name, s.gt_root, s.source, s.limit)
        return self.files.pairing() if self.files is not None else {}

    def _replay_slot(self) -> asyncio.Semaphore:
        if self._slots is None:
            self._slots = asyncio.Semaphore(max(1, self._settings().replay_concurrency))
        return self._slots

    def _policy_input(self, sample: Sample, turn: Mapping[str, Any], pred_answer: str, predicted: list[Outcome],
                      ground_truth: list[Outcome]) -> dict[str, Any]:
        s = self._settings()
        return {"uuid": str(sample.id), "domain": self.name, "capability": s.capability,
                "additional_instructions": str(sample.metadata["gt"].get("additional_instructions") or ""),
                "query": sample.input, "answer": pred_answer, "ground_truth_answer": sample.target,
                "tool_calls": [o.to_dict() for o in predicted],
                "ground_truth_tool_calls": [o.to_dict() for o in ground_truth]}


def _turn_details(gt_turn: Mapping[str, Any], query: str, pred_answer: str, scored: TurnScore,
                  predicted: list[Outcome], ground_truth: list[Outcome]) -> dict[str, Any]:
    """The scored turn as VAKRA's report lists it."""
    return {"turn_id": gt_turn.get("turn_id"), "query": query, "pred_answer": pred_answer, "score": scored.score,
            "metadata": {"exactmatch_score": scored.exactmatch, "answer_score": scored.correctness,
                         "groundedness_score": scored.groundedness, "policy_score": scored.policy,
                         "gt_steps": len(ground_truth), "pred_steps": len(predicted),
                         "extra_steps": max(0, len(predicted) - len(ground_truth)),
                         "score_explanation": scored.explanations}}
