"""Reply shapes collected from public MCQ evaluators and our own writing, read by runner.scorers.letters.

Each row of fixtures/letter_replies.jsonl holds: text, n_choices, single (what extract_choice
returns, or null), multi (what extract_choices returns), source (where the shape comes from) and
optionally option_texts.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from runner.scorers.letters import extract_choice, extract_choices

ROWS = [
    json.loads(line)
    for line in (Path(__file__).parent / "fixtures" / "letter_replies.jsonl").read_text(encoding="utf-8").splitlines()
    if line.strip()
]
IDS = [f"{i:03d}-{row['text'][:40]!r}" for i, row in enumerate(ROWS)]


def _args(row):
    return row["text"], row["n_choices"], row.get("option_texts")


def test_the_table_is_large_distinct_and_sourced():
    shapes = {(r["text"], r["n_choices"], tuple(r.get("option_texts") or ())) for r in ROWS}
    assert len(shapes) == len(ROWS) >= 150
    assert all(r["source"].strip() for r in ROWS)


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_single_answer(row):
    assert extract_choice(*_args(row)) == row["single"]


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_answer_set(row):
    assert extract_choices(*_args(row)) == tuple(row["multi"])


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_single_is_the_set_when_it_has_one_letter(row):
    letters = extract_choices(*_args(row))
    assert extract_choice(*_args(row)) == (letters[0] if len(letters) == 1 else None)


@pytest.mark.parametrize(
    "text",
    [
        "A" + " " * 5000 + "x",
        ", ".join("ABCD"[i % 4] for i in range(3000)) + " seems fine",
        " or ".join("ABCD"[i % 4] for i in range(3000)),
        "Answer: " * 3000,
        "Answer:\n" * 3000,
        "not A or B, " * 3000,
        "(" * 5000 + "A",
    ],
    ids=["spaces", "list", "hedges", "statements", "headings", "negated_hedges", "brackets"],
)
def test_pathological_replies_are_read_quickly(text):
    start = time.perf_counter()
    extract_choices(text, 4)
    assert time.perf_counter() - start < 1.0
