"""A tiny offline MUGEN data dir with generated audio: `python -m runner.benchmarks.mugen.fixture DIR`.

Writes `DIR/<Task>.jsonl` rows in the hub's column layout (our own synthetic instructions) and short
sine-tone WAV clips (stdlib `wave`, nothing downloaded) under `DIR/audio/`, referenced by relative
path. It covers the layouts a loader must tolerate: an int `id`, a `qid` instead, no id at all, a
reference clip, a row with only three candidates, answer-revealing side columns, and a row without
an answer. Use it with `benchmark=mugen benchmark.data_dir=DIR 'benchmark.tasks=[...]'`.
"""

from __future__ import annotations

import argparse
import json
import math
import struct
import sys
import wave
from pathlib import Path
from typing import Any

RATE = 8000
FIXTURE_TASKS = ("Keyword_Spotting", "Emotion_Recognition", "Max_Attribute_Selection")


def tone(path: Path, hz: float, seconds: float = 0.05) -> None:
    """A mono 16-bit sine tone; each clip gets its own pitch, so every clip's bytes differ."""
    frames = b"".join(struct.pack("<h", int(12000 * math.sin(2 * math.pi * hz * i / RATE)))
                      for i in range(int(RATE * seconds)))
    path.parent.mkdir(parents=True, exist_ok=True)
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(RATE)
        out.writeframes(frames)


def _clips(root: Path, task: str, row: int, n: int, reference: bool) -> dict[str, Any]:
    cols: dict[str, Any] = {}
    for k in range(1, 6):
        if k <= n:
            rel = f"audio/{task}/{row}_{k}.wav"
            tone(root / rel, 200 + 40 * k + 7 * row + 3 * len(task))
            cols[f"audio{k}"] = rel
        else:
            cols[f"audio{k}"] = None
    if reference:
        rel = f"audio/{task}/{row}_ref.wav"
        tone(root / rel, 150 + 5 * row)
        cols["reference_audio"] = rel
    return cols


def write_fixture(root: str | Path) -> dict[str, list[dict[str, Any]]]:
    """Write the fixture under `root` and return its rows by task."""
    base = Path(root)
    base.mkdir(parents=True, exist_ok=True)
    data: dict[str, list[dict[str, Any]]] = {
        "Keyword_Spotting": [
            {"id": i, "instruction": f"Which clip contains the spoken word '{w}'?", "answer": a,
             **_clips(base, "Keyword_Spotting", i, 5, False)}
            for i, (w, a) in enumerate([("harbour", "(B)"), ("lantern", "(A)"), ("meadow", "(E)")])],
        "Emotion_Recognition": [
            {"id": f"er-{i}", "instruction": "Which candidate speaker sounds as cheerful as the reference?",
             "answer": a, "reference_emotion": "happy", "audio1_emotion": "sad", "audio2_emotion": "happy",
             **_clips(base, "Emotion_Recognition", i, n, True)}
            for i, (a, n) in enumerate([("(B)", 5), ("(C)", 3)])],
        "Max_Attribute_Selection": [
            {"qid": 100 + i, "instruction": "Which clip is the longest?", "answer": "(D)",
             "attribute_type": "duration", "metadata": {"positive_constraint": "fourth-is-longest"},
             "audio4_duration": 9.5,
             **_clips(base, "Max_Attribute_Selection", i, 5, False)}
            for i in range(2)],
    }
    data["Max_Attribute_Selection"].append({"qid": 102, "instruction": "A row whose answer went missing.",
                                            **_clips(base, "Max_Attribute_Selection", 2, 5, False)})
    for task, rows in data.items():
        (base / f"{task}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", type=Path)
    args = parser.parse_args(argv)
    rows = write_fixture(args.dir)
    print(f"wrote {sum(len(r) for r in rows.values())} rows of {', '.join(rows)} to {args.dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
