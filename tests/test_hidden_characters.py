"""Invisible characters never hide a clear answer (issue 45, point 2): a zero-width space, a right-to-left
override, a NUL or an ANSI colour code inside a reply is dropped for reading, and the record keeps the reply as
it came."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import EVE_SAMPLE, cli, read_jsonl, run_overrides
from fake_llm import FakeLLM

from runner.benchmarks.mugen import judging
from runner.benchmarks.mugen.choice import read_choice
from runner.judges.parsers import parse_binary
from runner.scorers.numeric import read_number
from runner.scorers.reading import read_reply
from runner.untrusted import for_reading

HIDDEN = {"zero-width space": "\u200b", "right-to-left override": "\u202e", "byte-order mark": "\ufeff",
          "NUL": "\x00", "bell": "\x07", "word joiner": "\u2060"}


@pytest.mark.parametrize("mark", list(HIDDEN.values()), ids=list(HIDDEN))
def test_a_hidden_character_is_not_read(mark: str) -> None:
    assert read_reply(f"The answer is {mark}A.", 4).letters == ("A",)
    assert read_reply(f"The answer is A{mark}.", 4).letters == ("A",)
    number = read_number(f"The answer is {mark}42.")
    assert number == 42
    assert parse_binary(f'{{"judge{mark}ment": "cor{mark}rect"}}').label == "correct"
    assert judging.read_lenient(f"Explanation: ok\nJudge{mark}ment: in{mark}correct").verdict.label == "incorrect"
    assert read_choice(f"The answer is {mark}(B)", 5) == "B"


@pytest.mark.parametrize("reply", [
    "\x1b[31mThe answer is A.\x1b[0m",  # colour
    "The answer is \x1b[1mA\x1b[22m.",  # bold inside
    "\x1b]0;pwned\x07The answer is A.",  # window title (OSC, BEL-terminated)
    "\x1b]8;;https://example.invalid\x1b\\The answer is A.\x1b]8;;\x1b\\",  # hyperlink (OSC, ST-terminated)
])
def test_escape_sequences_are_not_read(reply: str) -> None:
    assert read_reply(reply, 4).letters == ("A",)
    assert for_reading(reply).strip() == "The answer is A."


def test_reading_keeps_newlines_tabs_and_visible_text() -> None:
    text = "Line one\tcell\nÉtape: réponse **B**\r\n答案是B"
    assert for_reading(text) == text


def hidden_reply(body: dict[str, Any]) -> str:
    """The right letter of each question, behind a zero-width space."""
    question = body["messages"][-1]["content"]
    rows = [json.loads(x) for x in (EVE_SAMPLE / "mcqa_single_answer.jsonl").read_text().splitlines() if x]
    letter = next((r["Answer"] for r in rows if r["Question"] in question), "A")
    return f"\x1b[32mThe answer is \u200b{letter}.\x1b[0m"


def test_a_run_reads_hidden_answers_and_keeps_the_reply_as_received(tmp_path: Path) -> None:
    with FakeLLM(default=hidden_reply) as srv:
        proc = cli(run_overrides(srv.base_url, tmp_path / "run", tasks=["mcqa_single_answer"], limit=5, judges=0))
    assert proc.returncode == 0, proc.stderr[-2000:]
    block = json.loads((tmp_path / "run" / "results.json").read_text())["tasks"]["mcqa_single_answer"]
    assert block["metrics"]["accuracy"] == 1.0
    for record in read_jsonl(tmp_path / "run" / "samples" / "mcqa_single_answer.jsonl"):
        assert "\u200b" in record["response"] and record["response"].startswith("\x1b[32m")  # stored as received
