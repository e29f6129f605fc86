"""The model under test's request: the instruction and every clip as an input_audio content part.

`input_audio` (base64 data + format) is the audio part OpenAI-compatible servers accept and litellm
translates for Gemini. The template in prompts/generate.j2 places a marker where each clip goes; the
rendered text is split at the markers, so the message is: reference clip (if any), then Audio 1..N
each under its label, then the instruction.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from runner.benchmarks.mugen.audio import Clip
from runner.tasks.templates import render

PROMPTS = Path(__file__).resolve().parent / "prompts"
LETTERS = "ABCDEFGHIJ"
_MARKER = re.compile(r"\[\[clip:(\w+)\]\]")


def _marker(label: str) -> str:
    return f"[[clip:{label}]]"


def build_messages(instruction: str, candidates: Sequence[Clip], reference: Clip | None, *,
                   answer_hint: bool = False) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(messages to send, the same messages as the samples file keeps them, audio described not copied)."""
    text = render(PROMPTS, "generate.j2", instruction=instruction, answer_hint=answer_hint,
                  reference=_marker("reference") if reference is not None else "",
                  candidates=[{"number": i + 1, "letter": LETTERS[i], "clip": _marker(str(i + 1))}
                              for i in range(len(candidates))])
    clips = {str(i + 1): c for i, c in enumerate(candidates)}
    if reference is not None:
        clips["reference"] = reference
    parts: list[dict[str, Any]] = []
    kept: list[dict[str, Any]] = []
    pos = 0
    for m in _MARKER.finditer(text):
        _text_part(text[pos:m.start()], parts, kept)
        clip = clips[m.group(1)]
        parts.append({"type": "input_audio", "input_audio": {"data": clip.base64, "format": clip.format}})
        kept.append(clip.describe("reference" if m.group(1) == "reference" else f"audio{m.group(1)}"))
        pos = m.end()
    _text_part(text[pos:], parts, kept)
    return [{"role": "user", "content": parts}], [{"role": "user", "content": kept}]


def _text_part(chunk: str, parts: list[dict[str, Any]], kept: list[dict[str, Any]]) -> None:
    chunk = chunk.strip()
    if chunk:
        parts.append({"type": "text", "text": chunk})
        kept.append({"type": "text", "text": chunk})


def shuffled_order(n: int, seed: Any) -> list[int]:
    """A seeded permutation of range(n): position p of the shown order holds original option order[p]."""
    order = list(range(n))
    random.Random(str(seed)).shuffle(order)
    return order


def letter_in_original_order(shown: str | None, order: Sequence[int]) -> str | None:
    """Map a letter the model chose in a shuffled presentation back to the dataset's option letter."""
    if shown is None:
        return None
    position = LETTERS.index(shown)
    return LETTERS[order[position]] if position < len(order) else None
