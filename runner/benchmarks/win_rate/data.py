r"""Earlier outputs of two models, read and paired by question: EVE-style CSVs or this runner's samples files.

A CSV has a question column (`Question`, or `doc\.Question` as in a W&B export of an evalkit samples
table; also `doc.Question`, and `doc\\.Question` with two backslashes, the literal EVE's script compares
column names with), `target` (the reference) and `filtered_resps` (the answer). A samples file
(`samples/<task>.jsonl` of an earlier run) has `prompt`, `reference` and `response` per record; its
question is the record's `question` field where present, else the text of the prompt's last user
message (for EVE's `open_ended` that is the question itself).
"""

from __future__ import annotations

import ast
import csv
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.errors import DataError
from runner.tasks.sources import BAD_ROW, read_jsonl

QUESTION_COLUMNS = ("Question", "doc\\.Question", "doc.Question", "doc\\\\.Question", "question")
REFERENCE_COLUMNS = ("target", "Answer", "reference")
ANSWER_COLUMNS = ("filtered_resps", "response")
ID_COLUMNS = ("id", "uuid", "qid", "doc_id", "doc\\.id")
_CSV_FIELD_LIMIT = 2**31 - 1  # answers can be far longer than csv's default 128 KiB cell limit


@dataclass(frozen=True)
class Answer:
    """One usable row of a model's file."""

    id: Any
    """The row's own id (an id column, or the samples record's id), else its 0-based row index."""
    question: str
    reference: str
    text: str


@dataclass
class Outputs:
    """A model's file, read: usable rows in file order, plus what could not be used and why."""

    path: Path
    rows: list[Answer]
    unusable: list[tuple[Any, str]] = field(default_factory=list)
    """(id, reason) of rows that have no question, or (samples files) no response."""


def question_key(text: str) -> str:
    """What pairs two rows: the question with its whitespace collapsed (CSV round trips change newlines)."""
    return " ".join(text.split())


def read_outputs(path: str | Path) -> Outputs:
    """A model's outputs from an EVE-style CSV (`.csv`) or a runner samples file (`.jsonl`)."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise DataError(f"win_rate: file '{p}' does not exist; each model entry needs a CSV or a "
                        "samples/<task>.jsonl of an earlier run")
    suffix = p.suffix.lower()
    if suffix == ".csv":
        return _read_csv(p)
    if suffix == ".jsonl":
        return _read_samples(p)
    raise DataError(f"win_rate: cannot read '{p}': expected an EVE-style .csv or a runner samples .jsonl")


def _pick(columns: list[str], names: tuple[str, ...], path: Path, what: str) -> str:
    for name in names:
        if name in columns:
            return name
    raise DataError(f"win_rate: {path} has no {what} column (expected one of {', '.join(names)}; "
                    f"columns present: {', '.join(columns) or 'none'})")


def _read_csv(path: Path) -> Outputs:
    csv.field_size_limit(max(csv.field_size_limit(), _CSV_FIELD_LIMIT))
    with open(path, encoding="utf-8-sig", newline="") as fh:
        reader = csv.DictReader(fh)
        columns = list(reader.fieldnames or [])
        q_col = _pick(columns, QUESTION_COLUMNS, path, "question")
        ref_col = _pick(columns, REFERENCE_COLUMNS, path, "reference")
        ans_col = _pick(columns, ANSWER_COLUMNS, path, "answer")
        id_col = next((c for c in ID_COLUMNS if c in columns), None)
        out = Outputs(path=path, rows=[])
        for index, row in enumerate(reader):
            own = row.get(id_col) if id_col else None
            rid: Any = own if own not in (None, "") else index
            question = row.get(q_col) or ""
            if not question.strip():
                out.unusable.append((rid, "no question"))
                continue
            out.rows.append(Answer(id=rid, question=question, reference=row.get(ref_col) or "",
                                   text=unwrap_response(row.get(ans_col) or "")))
    return out


def unwrap_response(cell: str) -> str:
    """lm-eval's `filtered_resps` is a list (one entry per repeat); a CSV export shows it as `['text']`."""
    text = cell.strip()
    if not (text.startswith("[") and text.endswith("]")):
        return cell
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        try:
            value = json.loads(text)
        except ValueError:
            return cell
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return str(value[0])
    return cell


def _read_samples(path: Path) -> Outputs:
    records: dict[str, dict[str, Any]] = {}
    out = Outputs(path=path, rows=[])
    for index, rec in enumerate(read_jsonl(path)):
        if BAD_ROW in rec:  # read_jsonl's placeholder for a line that is not a JSON object
            out.unusable.append((f"row {index}", rec[BAD_ROW]))
        elif "id" not in rec:
            out.unusable.append((f"row {index}", "not a sample record (no id)"))
        else:
            records[str(rec["id"])] = rec  # a resumed run re-appends a sample: the last line is the answer
    for rec in records.values():
        question = record_question(rec)
        if rec.get("status") == "error" or rec.get("response") is None:
            out.unusable.append((rec["id"], "no response (the earlier run recorded an error)"))
        elif not question.strip():
            out.unusable.append((rec["id"], "no question"))
        else:
            out.rows.append(Answer(id=rec["id"], question=question, reference=_text(rec.get("reference")),
                                   text=str(rec["response"])))
    return out


def record_question(record: Mapping[str, Any]) -> str:
    """A samples record's question: its `question` field, else the last user message of its prompt."""
    for holder in (record, record.get("extra") or {}):
        if isinstance(holder.get("question"), str):
            return str(holder["question"])
    prompt = record.get("prompt")
    if isinstance(prompt, list):
        for message in reversed(prompt):
            if isinstance(message, dict) and message.get("role") == "user":
                return _text(message.get("content"))
        return ""
    return _text(prompt)


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # chat content parts: keep the text parts
        return "\n".join(str(p.get("text", "")) for p in value if isinstance(p, dict) and p.get("type") == "text")
    return json.dumps(value, ensure_ascii=False, default=str)


@dataclass(frozen=True)
class Pair:
    """One question both models answered."""

    question: str
    reference: str
    answer_a: str
    answer_b: str
    id_a: Any
    id_b: Any


@dataclass
class Pairing:
    """The inner join of two models' outputs on the question, and everything it left out."""

    pairs: list[Pair]
    dropped: list[dict[str, Any]]
    """One entry per row left out: `side` (a or b), `id`, `reason`, `question`."""
    counts: dict[str, int]
    """rows_a, rows_b, paired, unmatched_a/b, duplicates_a/b, unusable_a/b, reference_mismatch."""


def pair_outputs(a: Outputs, b: Outputs) -> Pairing:
    """Pair rows by question (inner join, in A's order).

    A question that appears more than once in one file keeps its first row; the later rows are dropped
    as duplicates (EVE's merge multiplied them instead). The reference shown to judges is A's, or B's
    when A's is empty; how often the two files disagree on it is counted.
    """
    dropped: list[dict[str, Any]] = []
    firsts: dict[str, dict[str, Answer]] = {}
    counts: dict[str, int] = {}
    for side, outputs in (("a", a), ("b", b)):
        seen: dict[str, Answer] = {}
        for rid, reason in outputs.unusable:
            dropped.append({"side": side, "id": rid, "reason": reason, "question": ""})
        for row in outputs.rows:
            key = question_key(row.question)
            if key in seen:
                dropped.append({"side": side, "id": row.id, "question": row.question,
                                "reason": f"duplicate question (row {seen[key].id} kept)"})
            else:
                seen[key] = row
        firsts[side] = seen
        counts[f"rows_{side}"] = len(outputs.rows) + len(outputs.unusable)
        counts[f"unusable_{side}"] = len(outputs.unusable)
        counts[f"duplicates_{side}"] = len(outputs.rows) - len(seen)
    pairs: list[Pair] = []
    mismatch = 0
    for key, row_a in firsts["a"].items():
        row_b = firsts["b"].get(key)
        if row_b is None:
            dropped.append({"side": "a", "id": row_a.id, "question": row_a.question,
                            "reason": "question not in B's file"})
            continue
        ref_a, ref_b = question_key(row_a.reference), question_key(row_b.reference)
        mismatch += int(bool(ref_a and ref_b) and ref_a != ref_b)
        pairs.append(Pair(question=row_a.question, reference=row_a.reference or row_b.reference,
                          answer_a=row_a.text, answer_b=row_b.text, id_a=row_a.id, id_b=row_b.id))
    for key, row_b in firsts["b"].items():
        if key not in firsts["a"]:
            dropped.append({"side": "b", "id": row_b.id, "question": row_b.question,
                            "reason": "question not in A's file"})
    counts["paired"] = len(pairs)
    counts["unmatched_a"] = len(firsts["a"]) - len(pairs)
    counts["unmatched_b"] = len(firsts["b"]) - len(pairs)
    counts["reference_mismatch"] = mismatch
    return Pairing(pairs=pairs, dropped=dropped, counts=counts)
