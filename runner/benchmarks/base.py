"""`Benchmark`: turns a benchmark's data into each task's samples (`load`), builds its tasks from their specs
and makes the run's summary. Constructors stay light (they only keep config); data is read in `load`."""

from __future__ import annotations

import difflib
import logging
from array import array
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from runner.config import instantiate
from runner.errors import ConfigError, DataError, RunnerError
from runner.run.provenance import RowsDigest
from runner.tasks.base import BaseTask, Loaded, UniqueIds, sample_id
from runner.tasks.lazy_samples import LazySamples
from runner.tasks.sources import BAD_ROW, load_rows, local_task_file
from runner.types import Sample, TaskResult

log = logging.getLogger("runner")


class Benchmark:
    """A named set of tasks over datasets (hub names in the task specs, or `data_dir/<task>.jsonl`)."""

    reporters: list[Any] = []
    """What writes the benchmark's own files after aggregation (runner/reporters); set from YAML."""

    def __init__(self, name: str, specs: Mapping[str, Any], data_dir: str | None = None,
                 limit: int | None = None, tasks: Sequence[str] | None = None,
                 num_fewshot: int | None = None, reporters: Sequence[Mapping[str, Any]] = ()) -> None:
        self.name = name
        self.reporters = [instantiate(r, f"benchmark.reporters[{i}]") for i, r in enumerate(reporters or ())]
        self.specs = dict(specs)
        self.data_dir = data_dir
        self.limit = None if limit is None else int(limit)
        self.num_fewshot = None if num_fewshot is None else int(num_fewshot)
        self.selected = list(tasks) if tasks else list(self.specs)
        unknown = [t for t in self.selected if t not in self.specs]
        if unknown:
            hint = difflib.get_close_matches(unknown[0], list(self.specs), n=1)
            raise ConfigError(f"benchmark.tasks: unknown task '{unknown[0]}' for benchmark {name}"
                              + (f" (did you mean '{hint[0]}'?)" if hint else "")
                              + f"; choose from: {', '.join(self.specs)}")
        if self.limit is not None and self.limit < 0:
            raise ConfigError(f"benchmark.limit: must be a positive number of samples, got {self.limit}")

    def build_tasks(self) -> list[BaseTask]:
        """Instantiate the selected task specs (each spec's `_target_` names its Task class)."""
        tasks: list[BaseTask] = []
        for t in self.selected:
            task = instantiate(self.specs[t], f"benchmark.specs.{t}", name=t)
            spec = self.specs[t]
            task.spec = OmegaConf.to_container(spec, resolve=True) if isinstance(spec, DictConfig) else spec
            task.prepare([Path(self.data_dir)] if self.data_dir else [])
            tasks.append(task)
        return tasks

    def load(self, task: BaseTask) -> Loaded:
        """Read the task's rows and split them into shots (the first K good rows) and samples."""
        rows = load_rows(task.name, task.dataset, task.split, self.data_dir, task.revision)
        k = task.num_fewshot if self.num_fewshot is None else self.num_fewshot
        shots: list[Sample] = []
        samples: list[Sample] = []
        bad: list[tuple[Any, str]] = []
        places = array("q")  # the row of each sample
        used = RowsDigest()
        where = f"{self.data_dir}/{task.name}.jsonl" if self.data_dir else f"{task.dataset} ({task.split})"
        ids = UniqueIds(f"task {task.name}, {where}")
        for index, row in enumerate(rows):
            if len(shots) >= k and self.limit is not None and len(samples) + len(bad) >= self.limit:
                break
            used.add(row)
            if BAD_ROW in row:
                bad.append((index, row[BAD_ROW]))
                ids.add(index, index)
                continue
            try:
                sample = task.to_sample(row, index)
            except (ValueError, KeyError, TypeError, IndexError) as exc:
                bad.append((sample_id(row, index), f"row {index}: {exc}"))
                ids.add(bad[-1][0], index)
                continue
            if len(shots) < k:
                shots.append(sample)  # never scored, so never a record: its id may repeat a sample's
            else:
                samples.append(sample)
                places.append(index)
                ids.add(sample.id, index)
        if bad and not samples and not shots:
            raise DataError(f"{where}: none of its {len(bad)} row(s) can be used by task {task.name} "
                            f"({bad[0][1]}); check that the file has the public dataset's columns")
        ids.check()
        source = str(local_task_file(self.data_dir, task.name)) if self.data_dir else \
            f"{task.dataset} (split {task.split})"
        revision = None if self.data_dir else task.revision
        return Loaded(shots=shots, samples=samples, bad=bad, data=used.block(source, revision),
                      later=LazySamples(task, rows, places))

    WARNINGS: tuple[tuple[str, str], ...] = (
        ("n_errors", "{} sample(s) failed and are left out of the metrics (error_ids in results.json); re-run "
                     "with the same hydra.run.dir to retry only them"),
        ("n_invalid", "{} sample(s) had a judge reply that could not be parsed, counted as a fail (invalid_ids "
                      "in results.json; the raw replies are in the samples files)"))
    """(summary count, the line printed when it is not 0): what the run says after its table went wrong; a
    benchmark adds its own (VAKRA: predictions missing or matching nothing)."""

    def warnings(self, summary: Mapping[str, Any]) -> list[str]:
        """The `WARNINGS` lines whose count the summary gives."""
        return [text.format(summary[key]) for key, text in self.WARNINGS if summary.get(key)]

    def summary(self, tasks: Sequence[BaseTask], results: Mapping[str, TaskResult]) -> dict[str, Any]:
        """The `summary` block of results.json: each task's headline metric and their macro mean."""
        headline = {t.name: results[t.name].metrics.get(t.headline) for t in tasks if t.name in results}
        present = [v for v in headline.values() if v is not None]
        return {
            "n_samples": sum(r.n for r in results.values()),
            "n_invalid": sum(r.n_invalid for r in results.values()),
            "n_errors": sum(r.n_errors for r in results.values()),
            "headline": headline,
            # Over the tasks that have a value; null when none has (never a 0 made of nothing).
            "macro_avg": sum(present) / len(present) if present else None,
        }


def summarize(benchmark: Benchmark, tasks: Sequence[BaseTask], results: Mapping[str, TaskResult]) -> dict[str, Any]:
    """The run's `summary` block over the tasks whose metrics were computed (a task whose aggregation failed is
    named in `tasks_failed`, never summed as if it had none); when the summary itself cannot be computed, a block
    saying why (`failed`), so the tasks' results are still written. A RunnerError (bad config) still stops."""
    done = {name: r for name, r in results.items() if r.failed is None}
    failed = [name for name, r in results.items() if r.failed is not None]
    try:
        out = benchmark.summary(tasks, done)
    except RunnerError:
        raise
    except Exception as exc:  # noqa: BLE001 - named in results.json and the closing line, never a lost run
        why = f"{type(exc).__name__}: {exc}"
        log.error("the summary of the run could not be computed (%s); the tasks' results are written", why)
        return {"failed": why, **({"tasks_failed": failed} if failed else {})}
    return {**out, "tasks_failed": failed} if failed else out
