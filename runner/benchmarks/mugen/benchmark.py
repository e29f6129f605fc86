"""MUGEN: 35 multi-audio tasks in 7 dimensions; generate and judge, or judge a prediction folder.

Without `prediction_dir` every selected task loads `MUGEN-Benchmark/<Task>` (split `test`, or
`test_2`..`test_4` for the candidate-scaling study) through `datasets`, or `data_dir/<Task>.jsonl`
with audio files next to it (or a hub-layout folder `data_dir/<Task>/`); the model answers, the judge
grades. With `prediction_dir` the tasks are the MUGEN task folders found there, and only the judge runs.
The summary is MUGEN's: `accuracy` is the micro average over all judged samples (the paper's
Overall), `dimensions[<full name>]` the micro average over each dimension's tasks present.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from runner.benchmarks.base import Benchmark
from runner.benchmarks.mugen.predictions import TaskPredictions, check_record, own_id, prediction_ids, scan
from runner.benchmarks.mugen.scores import tally
from runner.benchmarks.mugen.task import MugenTask
from runner.errors import ConfigError, DataError
from runner.metrics.intervals import wilson
from runner.run.provenance import data_block
from runner.run.store import record_key
from runner.tasks.base import BaseTask, Loaded, UniqueIds, require
from runner.tasks.sources import (
    BAD_ROW,
    MissingSplit,
    hub_offline,
    hub_unreachable,
    local_task_file,
    open_dataset,
    read_jsonl,
)
from runner.types import Sample, TaskResult

log = logging.getLogger("runner")
_SPLIT = re.compile(r"test(?:_[2-4])?")


def row_id(row: Mapping[str, Any], index: int) -> Any:
    """MUGEN's id rule for dataset rows: `id`, else `qid`, else the 0-based row index."""
    own = own_id(row)
    return index if own is None else own


class MugenBenchmark(Benchmark):
    """The MUGEN benchmark (see the module docstring); task specs come from conf/task/mugen/."""

    def __init__(self, name: str, specs: Mapping[str, Any], data_dir: str | None = None,
                 limit: int | None = None, tasks: Sequence[str] | None = None, num_fewshot: int | None = None,
                 split: str = "test", prediction_dir: str | None = None, prediction_file: str = "output.json",
                 strict: bool = False, self_consistency: int = 1, answer_hint: bool = False,
                 judge_prompt: str | None = None, reporters: Sequence[Mapping[str, Any]] = ()) -> None:
        if num_fewshot is not None:
            raise ConfigError(f"benchmark.num_fewshot={num_fewshot}: mugen has no few-shot examples (each sample "
                              "is its instruction and audio clips, asked zero-shot); leave num_fewshot null")
        super().__init__(name, specs, data_dir=data_dir, limit=limit, tasks=tasks, reporters=reporters)
        if not _SPLIT.fullmatch(str(split)):
            raise ConfigError(f"benchmark.split: '{split}' is not a MUGEN split; use test (5 candidates) or "
                              "test_2, test_3, test_4 (2 to 4 candidates)")
        if int(self_consistency) < 1:
            raise ConfigError(f"benchmark.self_consistency: must be 1 (off) or more replies, got {self_consistency}")
        if prediction_dir and data_dir:
            raise ConfigError("benchmark.prediction_dir and benchmark.data_dir are both set; judging a "
                              "prediction folder reads no dataset, so set only one of them")
        if prediction_dir and int(self_consistency) > 1:
            raise ConfigError("benchmark.self_consistency needs generation; it cannot apply to the replies "
                              "in benchmark.prediction_dir")
        self.explicit_tasks = bool(tasks)
        self.split = str(split)
        self.prediction_dir = prediction_dir
        self.prediction_file = prediction_file
        self.task_options = {"strict": bool(strict), "self_consistency": int(self_consistency),
                             "answer_hint": bool(answer_hint), "judge_prompt": judge_prompt,
                             "predictions": bool(prediction_dir)}
        self.problems: list[str] = []
        """One line per task folder, file or split that was skipped; also in the summary."""
        self._predictions: dict[str, TaskPredictions] = {}

    def build_tasks(self) -> list[BaseTask]:
        """The selected tasks; judging a prediction folder, those of them that have a readable file there."""
        from runner.config import instantiate, plain

        names = list(self.selected)
        if self.prediction_dir:
            found, problems = scan(self.prediction_dir, self.prediction_file, names)
            have = {p.task for p in found} | {t for t in names if (Path(self.prediction_dir) / t).exists()}
            if self.explicit_tasks:  # a task the user asked for by name but left out of the folder
                problems += [f"{t}: no folder {t}/ in {self.prediction_dir}; not judged" for t in names
                             if t not in have]
            self._problem(*problems)
            if not found:
                raise DataError(f"benchmark.prediction_dir: nothing to judge in {self.prediction_dir}: no "
                                f"readable <Task_Name>/{self.prediction_file} for the selected tasks"
                                + (f" ({len(problems)} item(s) skipped, see above)" if problems else ""))
            self._predictions = {p.task: p for p in found}
            names = [t for t in names if t in self._predictions]
        tasks: list[BaseTask] = []
        for t in names:
            task = instantiate(self.specs[t], f"benchmark.specs.{t}", name=t, split=self.split, **self.task_options)
            # What decides its records (part of their fingerprints): its entry and the benchmark's options.
            task.spec = {**plain(self.specs[t]), "split": self.split, **self.task_options}
            tasks.append(task)
        return tasks

    def _problem(self, *lines: str) -> None:
        for line in lines:
            log.warning(line)
            self.problems.append(line)

    # ------------------------------------------------------------------ data

    def load(self, task: BaseTask) -> Loaded:
        assert isinstance(task, MugenTask)
        if self.prediction_dir:
            return self._load_predictions(task)
        return self._load_dataset(task)

    def _full(self, samples: list[Sample], bad: list[Any]) -> bool:
        return self.limit is not None and len(samples) + len(bad) >= self.limit

    def _load_predictions(self, task: MugenTask) -> Loaded:
        preds = self._predictions[task.name]
        samples: list[Sample] = []
        bad: list[tuple[Any, str]] = []
        ids, renamed = prediction_ids(preds.records)
        if renamed:
            shown = "; ".join(renamed[:3]) + (f"; and {len(renamed) - 3} more" if len(renamed) > 3 else "")
            log.warning("%s: %d record(s) repeat an earlier record's id, each judged under an id of its own (%s); "
                        "see runner/benchmarks/mugen/README.md, 'Ids'", preds.path, len(renamed), shown)
        used = len(preds.records)
        for index, (rec, sid) in enumerate(zip(preds.records, ids, strict=True)):
            if self._full(samples, bad):
                used = index
                break
            problem = check_record(rec, index, preds.path)
            task.order.append(sid)
            task.sources[record_key(sid)] = rec
            if problem:
                self._problem(problem + "; record not judged")
                bad.append((sid, problem))
                continue
            if rec.get("response") is None:
                log.warning("%s record %d (id %r): %s; counted as incorrect (no option chosen)", preds.path,
                            index, sid, "response is null" if "response" in rec else "no response field")
            task.responses[record_key(sid)] = rec.get("response")
            samples.append(Sample(id=sid, input=rec["instruction"], target=rec["answer"], metadata={"record": rec}))
        return Loaded(shots=[], samples=samples, bad=bad,
                      data=data_block(str(preds.path), None, preds.records[:used]))

    def _load_dataset(self, task: MugenTask) -> Loaded:
        """Rows without their audio (fetched per sample when asked, so no task sits in memory whole)."""
        base_dir: Path | None = None
        try:
            if self.data_dir:
                root = Path(self.data_dir).expanduser()
                if (root / task.name).is_dir() and not (root / f"{task.name}.jsonl").is_file():
                    rows, fetch = self._dataset_rows(str(root / task.name), task.split)
                else:
                    base_dir = local_task_file(root, task.name).parent
                    rows = read_jsonl(base_dir / f"{task.name}.jsonl")
                    fetch = rows.__getitem__
            else:
                assert task.dataset is not None
                rows, fetch = self._dataset_rows(task.dataset, task.split)
        except MissingSplit as exc:
            self._problem(f"{task.name}: {exc}; task skipped (not every task has every scaling split)")
            return Loaded(shots=[], samples=[], bad=[], skipped=str(exc))
        samples: list[Sample] = []
        bad: list[tuple[Any, str]] = []
        source = f"{self.data_dir}/{task.name}" if self.data_dir else f"{task.dataset} (split {task.split})"
        ids = UniqueIds(f"task {task.name}, {source}")  # the hub data has one row per id: a repeat is bad data
        used: list[Any] = []  # the rows read (without their audio, which is fetched per sample)
        for index, row in enumerate(rows):
            if self._full(samples, bad):
                break
            used.append(row)
            if BAD_ROW in row:
                bad.append((index, row[BAD_ROW]))
                task.order.append(index)
                ids.add(index, index)
                continue
            sid = row_id(row, index)
            ids.add(sid, index)
            task.order.append(sid)
            try:
                require(row, "instruction", "answer")
            except ValueError as exc:
                bad.append((sid, f"row {index}: {exc}"))
                continue
            samples.append(Sample(id=sid, input=str(row["instruction"]), target=str(row["answer"]).strip(),
                                  metadata={"fetch": functools.partial(fetch, index), "base_dir": base_dir}))
        ids.check()
        return Loaded(shots=[], samples=samples, bad=bad, data=data_block(source, task.revision, used))

    @staticmethod
    def _dataset_rows(dataset: str, split: str) -> tuple[Any, Any]:
        """(rows without audio columns to iterate, row access by index with the audio undecoded)."""
        if Path(dataset).exists():  # a hub-layout folder on disk
            ds = open_dataset(dataset, split, decode_media=False)
        else:
            ds = hub_dataset_or_stop(dataset, split)
        audio = [c for c, f in ds.features.items() if type(f).__name__ == "Audio"]
        view = ds.select_columns([c for c in ds.column_names if c not in audio]) if audio else ds
        return view, ds.__getitem__

    # ------------------------------------------------------------------ summary

    def summary(self, tasks: Sequence[BaseTask], results: Mapping[str, TaskResult]) -> dict[str, Any]:
        """The base summary plus MUGEN's: micro `accuracy` over all judged samples, per-dimension micro
        averages keyed by full dimension name (dimensions with no task present are left out; one whose
        tasks judged nothing is null, as is `accuracy` when nothing was judged), the correct/judged counts
        behind them, and the skipped items."""
        out = super().summary(tasks, results)
        counts = tally(results)
        out.update({
            "accuracy": counts.accuracy,
            "dimensions": {d: counts.rate(d) for d in counts.dimensions},
            "n_correct": counts.n_correct,
            "n_judged": counts.n_judged,
            "dimension_counts": {d: {"correct": counts.correct[d], "n": counts.judged[d]}
                                 for d in counts.dimensions},
            "problems": list(self.problems),
            # Each judged item is one independent 0/1 score: Wilson intervals for the micro averages.
            "ci": {"accuracy": _wilson(counts.n_correct, counts.n_judged),
                   "dimensions": {d: _wilson(counts.correct[d], counts.judged[d]) for d in counts.dimensions}},
        })
        return out


FIXTURE = ("python -m runner.benchmarks.mugen.fixture DIR, then python -m runner benchmark=mugen "
           "benchmark.data_dir=DIR model=gpt-4o-audio-preview judges=mugen (or benchmark.prediction_dir=DIR to judge "
           "existing predictions)")
"""What to do without the hub: MUGEN's own offline data dir, generated on this machine."""


def hub_dataset_or_stop(dataset: str, split: str) -> Any:
    """A hub dataset, from the hub or the local cache; stops at once (DataError naming MUGEN's offline fixture)
    when neither has it, instead of the hub client's retries (~30 s, each message twice, per task)."""
    reason = hub_unreachable()
    try:
        return open_dataset(dataset, split, decode_media=False)
    except MissingSplit:
        raise
    except DataError as exc:
        if not (reason or hub_offline()):
            raise
        raise DataError(f"benchmark=mugen: {dataset} (split {split}) is not in the local cache and the Hugging "
                        f"Face hub {reason or 'is switched off (HF_HUB_OFFLINE / HF_DATASETS_OFFLINE)'}; to run "
                        f"MUGEN offline: {FIXTURE}") from exc


def _wilson(correct: int, n: int) -> list[float] | None:
    interval = wilson(correct, n)
    return None if interval is None else [interval[0], interval[1]]
