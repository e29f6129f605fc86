"""One VAKRA domain as a runner task: each ground-truth dialogue is a sample (its uuid is the id), so a run
resumes per dialogue. Evaluating a sample replays the predicted and ground-truth calls and scores the
last turn; there is no model under test (the predictions are files), only judges.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.benchmarks.base import Context, Loaded, Task
from runner.benchmarks.vakra.dialogues import RERUN, DomainFiles, answer_text, gt_turns, pred_turn, read_domain
from runner.benchmarks.vakra.policy import run_policy_judge
from runner.benchmarks.vakra.replay import Outcome, Replayer
from runner.benchmarks.vakra.report import domain_result
from runner.benchmarks.vakra.scoring import RESPONSE_WINDOW, TurnScore, TurnScorer, aggregate
from runner.benchmarks.vakra.servers import DomainServers, ServerUnavailable, StartLedger, server_spec
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


class DomainTask(Task):
    """The dialogues of one domain (`<domain>.json` in gt_root and pred_root)."""

    needs_model = False
    needs_judges = True
    headline = "mean_dialogue_score"

    def __init__(self, name: str, correctness_prompt: str = "correctness.j2",
                 groundedness_prompt: str = "groundedness.j2", response_window: int = RESPONSE_WINDOW,
                 **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self.scorer = TurnScorer(PROMPTS, correctness_prompt, groundedness_prompt, int(response_window))
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

    def load(self) -> Loaded:
        """Read and pair the domain's files: one sample per ground-truth dialogue, problems as bad rows."""
        s = self._settings()
        files = self.files = read_domain(self.name, s.gt_root, s.pred_root, s.limit)
        gt_file, pred_file = s.gt_root / f"{self.name}.json", s.pred_root / f"{self.name}.json"
        if not files.pred_file_found:
            log.warning("vakra: %s has no prediction file %s; all %d dialogues count as missing predictions",
                        self.name, pred_file, len(files.gt))
        for side, dupes in (("ground-truth", files.gt_duplicates), ("prediction", files.pred_duplicates)):
            if dupes:
                log.warning("vakra: %s: duplicate uuid(s) in the %s file, the last occurrence of each is used: %s",
                            self.name, side, ", ".join(dupes))
        if files.pred_rows_without_uuid:
            log.warning("vakra: %s: %d prediction row(s) in %s have no uuid and are ignored", self.name,
                        files.pred_rows_without_uuid, pred_file)
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
                turn = pred_turn(prediction, turns) if prediction is not None else None
            except ValueError as exc:
                bad.append((uuid, f"prediction {uuid} in {pred_file}: {exc}; fix it and {RERUN}"))
                continue
            duplicate = [side for side, d in (("groundtruth", files.gt_duplicates),
                                              ("prediction", files.pred_duplicates)) if uuid in d]
            samples.append(Sample(id=uuid, input=str(turns[-1].get("query") or ""), target=turns[-1].get("answer"),
                                  metadata={"gt": gt, "turns": turns, "pred": prediction, "pred_turn": turn,
                                            "duplicate": duplicate}))
        if s.ledger is not None and self.servers is not None and any(x.metadata["pred"] is not None for x in samples):
            s.ledger.expect(self.name)
        return Loaded(shots=[], samples=samples, bad=bad)

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
                                       "note": f"no prediction for uuid {sample.id} in "
                                               f"{s.pred_root / (self.name + '.json')}"})
        if self.servers is not None and self.servers.log_path is None and ctx.run_dir is not None:
            self.servers.log_path = ctx.run_dir / "mcp_logs" / f"{self.name}.log"
        uuid, turns, turn = str(sample.id), meta["turns"], meta["pred_turn"]
        assert self.replayer is not None and ctx.panel is not None
        try:
            async with self._replay_slot():
                predicted = await self.replayer.prediction(uuid, turn)
                ground_truth = await self.replayer.ground_truth(uuid, turns)
        except ServerUnavailable as exc:
            return SampleRecord(id=sample.id, task=self.name, prompt=sample.input, reference=sample.target,
                                status="error", error=str(exc), extra={"paired": True})
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
            status="invalid" if scored.invalid else "ok", usage={"judges": scored.usage},
            extra={"paired": True, "capability": s.capability, "aggregate": s.aggregate,
                   "replayed": self.servers is not None, "num_turns": len(turns), "duplicate": meta["duplicate"],
                   "ground_truth_errors": len(gt_failed),
                   "per_turn": [_turn_details(last, sample.input, pred_answer, scored, predicted, ground_truth[-1])],
                   "tool_calls": {"prediction": [o.to_dict() for o in predicted],
                                  "ground_truth": [[o.to_dict() for o in t] for t in ground_truth]}})

    def rubric_texts(self) -> list[str]:
        return [(self.scorer.prompt_dir / name).read_text(encoding="utf-8")
                for name in (self.scorer.correctness_prompt, self.scorer.groundedness_prompt)]

    def finished(self, record: Mapping[str, Any]) -> bool:
        """Done unless an error, or a missing prediction (re-checked on resume: it costs no request)."""
        return super().finished(record) and not (record.get("extra") or {}).get("missing_prediction")

    def aggregate(self, records: Sequence[Mapping[str, Any]]) -> TaskResult:
        return domain_result(records, self.pairing())

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
            self.files = read_domain(self.name, self.settings.gt_root, self.settings.pred_root, self.settings.limit)
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
