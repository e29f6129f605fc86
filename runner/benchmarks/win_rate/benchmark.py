"""`benchmark=win_rate`: one pairwise task per model_a × model_b pair, over earlier outputs of both models.

No model under test is called; the judge panel compares the two answers to each question both files
share. The pairing (inner join on the question) is reported: counts in `results.json` under
`summary.pairs.<task>`, one log line, and every dropped row in `win_rate/dropped_<task>.csv` (written with
the other CSVs and the chart by runner/benchmarks/win_rate/reporter.py).
"""

from __future__ import annotations

import difflib
import logging
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from runner.benchmarks.base import Benchmark
from runner.benchmarks.win_rate.data import Outputs, pair_outputs, read_outputs
from runner.benchmarks.win_rate.metrics import TIE
from runner.benchmarks.win_rate.task import ORDERS, PairwiseTask
from runner.errors import ConfigError
from runner.run.provenance import data_block
from runner.tasks.base import BaseTask, Loaded
from runner.types import Sample, TaskResult

log = logging.getLogger("runner")

_NAME = re.compile(r"^[\w.+-]+$")
_TASK_TARGET = f"{PairwiseTask.__module__}.{PairwiseTask.__name__}"


def _entries(value: Any, key: str) -> list[tuple[str, str]]:
    """(name, file) of each entry of `benchmark.model_a` / `benchmark.model_b`."""
    if isinstance(value, Mapping):  # EVE's script also takes a single {name, file}
        value = [value]
    out = []
    for i, entry in enumerate(value or []):
        where = f"benchmark.{key}[{i}]"
        if not isinstance(entry, Mapping) or not entry.get("name") or not entry.get("file"):
            raise ConfigError(f"{where}: each entry needs a name and a file, e.g. {{name: my-model, "
                              f"file: /path/outputs.csv}}; got {entry!r}")
        name = str(entry["name"])
        if not _NAME.match(name) or name == TIE:
            raise ConfigError(f"{where}.name: '{name}' cannot name a model in metric and file names; use "
                              "letters, digits and . _ + - only (and not 'tie')")
        out.append((name, str(entry["file"])))
    return out


class WinRateBenchmark(Benchmark):
    """Pairs every model_a entry with every model_b entry; each pair is the task `<model_a>_vs_<model_b>`."""

    def __init__(self, name: str, model_a: Any = None, model_b: Any = None, orders: str = "one",
                 with_reference: bool = False, prompt: str = "judge_pairwise.j2", limit: int | None = None,
                 tasks: Sequence[str] | None = None, specs: Mapping[str, Any] | None = None,
                 data_dir: str | None = None, num_fewshot: int | None = None,
                 reporters: Sequence[Mapping[str, Any]] = ()) -> None:
        for key, value, unset in (("data_dir", data_dir, None), ("num_fewshot", num_fewshot, None),
                                  ("specs", specs, {})):
            if value is not None and value != unset:
                raise ConfigError(f"benchmark.{key}={value}: win_rate reads the files named in benchmark.model_a "
                                  f"and benchmark.model_b and pairs them itself, not {key}; leave {key} "
                                  f"{'empty' if key == 'specs' else 'null'}")
        if orders not in ORDERS:
            hint = difflib.get_close_matches(str(orders), ORDERS, n=1)
            raise ConfigError(f"benchmark.orders: '{orders}' is not one of {', '.join(ORDERS)}"
                              + (f" (did you mean '{hint[0]}'?)" if hint else ""))
        a, b = _entries(model_a, "model_a"), _entries(model_b, "model_b")
        files: dict[str, str] = {}
        for model, file in a + b:
            if files.setdefault(model, file) != file:
                raise ConfigError(f"benchmark.model_a/model_b: model '{model}' is given two files "
                                  f"({files[model]} and {file}); give each model one name")
        pairs: dict[str, dict[str, Any]] = {}
        for name_a, file_a in a:
            for name_b, file_b in b:
                if name_a == name_b:
                    log.info("win_rate: skipping %s vs itself", name_a)
                    continue
                task = f"{name_a}_vs_{name_b}"
                if task in pairs:
                    raise ConfigError(f"benchmark.model_a/model_b: two pairs are both named '{task}'; "
                                      "rename a model")
                pairs[task] = {"_target_": _TASK_TARGET, "model_a": name_a, "model_b": name_b,
                               "file_a": file_a, "file_b": file_b, "orders": orders,
                               "with_reference": bool(with_reference), "prompt": prompt}
        if (a or b) and not pairs:
            raise ConfigError("benchmark.model_a/model_b: no pair to compare; give at least one model in "
                              "each list, with different names")
        super().__init__(name, specs=pairs, limit=limit, tasks=tasks, reporters=reporters)
        self._outputs: dict[str, Outputs] = {}

    def _read(self, file: str) -> Outputs:
        """A model's file, read once even when it takes part in several pairs."""
        key = str(Path(file).expanduser().resolve())
        if key not in self._outputs:
            self._outputs[key] = read_outputs(file)
        return self._outputs[key]

    def load(self, task: BaseTask) -> Loaded:
        """Read both files, pair their rows by question, and log what the pairing dropped."""
        assert isinstance(task, PairwiseTask)
        pairing = pair_outputs(self._read(task.file_a), self._read(task.file_b))
        task.pairing = pairing
        pairs = pairing.pairs if self.limit is None else pairing.pairs[: self.limit]
        own_ids = [p.id_a for p in pairs]
        # Model A's own ids (its id column, its row index, or the earlier run's sample id) name the samples,
        # unless they collide; then the 0-based index in the paired table does.
        use_own = len({str(i) for i in own_ids}) == len(own_ids)
        samples = [Sample(id=p.id_a if use_own else i, input=p.question, target=p.reference,
                          metadata={"answer_a": p.answer_a, "answer_b": p.answer_b, "id_a": p.id_a,
                                    "id_b": p.id_b})
                   for i, p in enumerate(pairs)]
        _log_pairing(task, pairing.counts)
        used = [{"question": p.question, "reference": p.reference, "answer_a": p.answer_a, "answer_b": p.answer_b}
                for p in pairs]
        return Loaded(shots=[], samples=samples, data=data_block(f"{task.file_a} + {task.file_b}", None, used))

    def summary(self, tasks: Sequence[BaseTask], results: Mapping[str, TaskResult]) -> dict[str, Any]:
        """The base summary (headline: each pair's `aggregate/<model_a>_alpaca_win_rate`), plus the pairing."""
        if not tasks:
            # Raised here, not at build time, because the generic config checks build every benchmark
            # with its defaults (empty lists); no request has been sent at this point either.
            raise ConfigError("benchmark=win_rate needs models to compare: set benchmark.model_a=[{name: X, "
                              "file: F}] and benchmark.model_b=[{name: Y, file: G}] (EVE-style CSVs or "
                              "samples/<task>.jsonl of an earlier run)")
        out = super().summary(tasks, results)
        out.pop("macro_avg", None)  # a mean of different pairs' win rates means nothing
        out["pairs"] = {t.name: {"model_a": t.model_a, "model_b": t.model_b, **t.pairing.counts}
                        for t in tasks if isinstance(t, PairwiseTask) and t.pairing is not None}
        return out


def _log_pairing(task: PairwiseTask, c: Mapping[str, int]) -> None:
    a, b = task.model_a, task.model_b
    dropped_a = c["unmatched_a"] + c["duplicates_a"] + c["unusable_a"]
    dropped_b = c["unmatched_b"] + c["duplicates_b"] + c["unusable_b"]
    text = (f"{task.name}: paired {c['paired']} questions; dropped {dropped_a} of {a}'s {c['rows_a']} rows "
            f"({c['unmatched_a']} not in {b}'s file, {c['duplicates_a']} repeated questions, {c['unusable_a']} "
            f"unusable); dropped {dropped_b} of {b}'s {c['rows_b']} rows ({c['unmatched_b']} not in {a}'s file, "
            f"{c['duplicates_b']} repeated questions, {c['unusable_b']} unusable)")
    if c["reference_mismatch"]:
        text += f"; the two files give different references for {c['reference_mismatch']} questions ({a}'s are used)"
    if dropped_a or dropped_b or c["reference_mismatch"]:
        log.warning("%s; see win_rate/dropped_%s.csv", text, task.name)
    else:
        log.info("%s", text)
    if not c["paired"]:
        log.warning("%s: the two files share no question; check that both answer the same task", task.name)
