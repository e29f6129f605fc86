"""The MUGEN prediction layout on disk: `<dir>/<Task>/output.json` in (runner/benchmarks/mugen/reporter.py
writes `llm_judge_results.json` out).

Reading is forgiving per folder and per file: a folder that is not a MUGEN task, that points outside
the prediction dir, that lacks its file, or whose file is not a JSON list is skipped with one line
saying what and where; the other tasks are judged. Only an unusable prediction dir stops the run.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.benchmarks.mugen.catalog import TASKS, name_hint
from runner.errors import DataError
from runner.run.store import record_key


@dataclass
class TaskPredictions:
    """One task's prediction file, already read."""

    task: str
    path: Path
    records: list[Any]


def scan(root: str | Path, file_name: str, selected: Sequence[str]) -> tuple[list[TaskPredictions], list[str]]:
    """The selected tasks' prediction files under `root` (sorted by name), and one line per skipped item."""
    base = Path(root).expanduser()
    if not base.is_dir():
        raise DataError(f"benchmark.prediction_dir: '{base}' is not a directory; point it at a folder "
                        f"holding <Task_Name>/{file_name} files (the MUGEN layout)")
    base = base.resolve()
    found: list[TaskPredictions] = []
    problems: list[str] = []
    for entry in sorted(base.iterdir(), key=lambda p: p.name):
        if entry.name.startswith(".") or not entry.is_dir():
            continue  # hidden folders and stray files (a README, a zip) are not task folders
        if entry.name not in TASKS:
            problems.append(f"prediction_dir: folder '{entry.name}' is not a MUGEN task name"
                            f"{name_hint(entry.name)}; skipped (folders must be named like the hub "
                            "datasets, e.g. Keyword_Spotting)")
            continue
        if entry.name not in selected:
            continue
        folder = entry.resolve()
        if not folder.is_relative_to(base):
            problems.append(f"prediction_dir: folder '{entry.name}' points outside {base} (to {folder}); "
                            "skipped")
            continue
        path = entry / file_name
        if not path.is_file():
            problems.append(f"{entry.name}: no {file_name} in {entry}; skipped (write the task's "
                            "predictions there, or remove the folder)")
            continue
        if not path.resolve().is_relative_to(base):
            problems.append(f"{entry.name}: {path} points outside {base} (to {path.resolve()}); skipped")
            continue
        records, problem = _read(path)
        if problem:
            problems.append(f"{entry.name}: {problem}; skipped (fix the file and run again)")
            continue
        found.append(TaskPredictions(entry.name, path, records))
    return found, problems


def _read(path: Path) -> tuple[list[Any], str | None]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        return [], f"{path} is not UTF-8 text ({exc.reason})"
    except ValueError as exc:
        return [], f"{path} is not valid JSON ({exc})"
    if not isinstance(data, list):
        return [], f"{path} must hold a JSON list of records, got a {type(data).__name__}"
    return data, None


def check_record(record: Any, index: int, path: Path) -> str | None:
    """Why one prediction record cannot be judged (None when it can).

    A record with no response (`"response": null`, or no `response` field) can be judged: it names no
    option, so it is incorrect. MUGEN's own judge crashed on it and lost the whole task's results.
    """
    where = f"{path} record {index}"
    if not isinstance(record, dict):
        return f"{where}: expected an object with id, instruction, answer, response; got {type(record).__name__}"
    for key in ("instruction", "answer"):
        if not isinstance(record.get(key), str) or not record[key].strip():
            return f"{where}: '{key}' is missing or not a non-empty string"
    response = record.get("response")
    if response is not None and not isinstance(response, str):
        return f"{where}: 'response' must be a string or null, got {type(response).__name__}"
    return None


def own_id(row: Mapping[str, Any]) -> Any:
    """A row's or record's own id: `id`, else `qid` (int or str); None when it has neither."""
    for key in ("id", "qid"):
        if row.get(key) is not None and row.get(key) != "":
            return row[key]
    return None


def prediction_ids(records: Sequence[Any]) -> tuple[list[Any], list[str]]:
    """Each prediction record's sample id, all distinct, so every record is judged, as MUGEN's llm_judge.py
    judges every record of a file; and one note per record that repeats an earlier record's id.

    Ids compare as text, as the samples files key records: 2 and "2" are one id. A record keeps its own id
    (`id`, else `qid`) unless an earlier record has it; then it is `index_<k>` (k its 0-based place in the
    file). A record without an id is k, as the contract names rows without ids, unless k is some record's own
    id: then `index_<k>` too, the name llm_judge.py prints for a record without an id. `_` is appended to
    `index_<k>` while that is some record's own id. So no record takes an id the file gives another.
    """
    own = [own_id(r) if isinstance(r, dict) else None for r in records]
    taken = {record_key(i) for i in own if i is not None}
    given: set[str] = set()
    ids: list[Any] = []
    notes: list[str] = []
    for k, sid in enumerate(own):
        if sid is not None and record_key(sid) not in given:
            name: Any = sid
        elif sid is None and str(k) not in taken and str(k) not in given:
            name = k
        else:
            name = f"index_{k}"
            while name in taken or name in given:
                name += "_"
            if sid is not None:
                notes.append(f"record {k} repeats id {sid!r}: judged as {name}")
        given.add(record_key(name))
        ids.append(name)
    return ids, notes
