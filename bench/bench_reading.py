"""How the multiple-choice reader reads the repository's reply set, against a careful human's reading.

    .venv/bin/python bench/bench_reading.py                 # the reader of this checkout
    .venv/bin/python bench/bench_reading.py --before REV    # the reader (runner/scorers/letters.py) at REV
    .venv/bin/python bench/bench_reading.py --json          # the figures as JSON

The set is tests/fixtures/letter_replies_human.jsonl: replies written in the styles chat models answer in
(GPT, Claude, Gemini, Llama, Mistral, Qwen/DeepSeek), single and multiple answer, several languages, each
with its question, options, the careful human's reading (`human`: letters, or null for no answer) and the
options the reply rejects (`rejected`). `batch` says when a reply was written: `tuning` ones beside the
rules (so the rules were fitted to them), `holdout` ones after, measured before any rule was changed for
them (74 of 85 read as a human reads them then; docs/reading-replies.md). Figures:

- read as a human reads it: single answer, the one letter or none; multiple answer, the same set;
- rejected options read as chosen: replies whose reading holds an option the reply rejects (target 0);
- to the extractor: replies the rules cannot read, or read only in contradiction (`Reply.sure` false),
  which go to the task's extractor when one is set;
- accuracy against the gold answers, of the reader and of the human reading.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SET = ROOT / "tests" / "fixtures" / "letter_replies_human.jsonl"

Reader = Callable[[dict[str, Any]], tuple[tuple[str, ...], bool]]
"""A row -> (the letters read, whether the rules were sure)."""


def rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in SET.read_text(encoding="utf-8").splitlines() if line.strip()]


def current_reader() -> Reader:
    from runner.scorers.reading import read_reply

    def read(row: dict[str, Any]) -> tuple[tuple[str, ...], bool]:
        reply = read_reply(row["text"], len(row["options"]), row["options"], row.get("question"))
        return reply.letters, reply.sure

    return read


def reader_at(rev: str) -> Reader:
    """The self-contained reader of an older checkout (runner/scorers/letters.py before the reading package)."""
    source = subprocess.run(["git", "show", f"{rev}:runner/scorers/letters.py"], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp()) / "letters_before.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("letters_before", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def read(row: dict[str, Any]) -> tuple[tuple[str, ...], bool]:
        letters = tuple(module.extract_choices(row["text"], len(row["options"]), row["options"]))
        return letters, True  # no extractor then: every reading was final

    return read


def as_answer(letters: tuple[str, ...] | list[str] | None, multiple: bool) -> tuple[str, ...]:
    """What the task scores: the set for multiple answer, the one letter (else nothing) for single answer."""
    letters = tuple(sorted(set(letters or ())))
    return letters if multiple or len(letters) == 1 else ()


def measure(read: Reader, data: list[dict[str, Any]]) -> dict[str, Any]:
    counts: Counter[str] = Counter()
    misses: list[dict[str, Any]] = []
    seconds = 0.0
    for row in data:
        kind = "multiple" if row["multiple"] else "single"
        start = time.perf_counter()
        letters, sure = read(row)
        seconds += time.perf_counter() - start
        got, human = as_answer(letters, row["multiple"]), as_answer(row["human"], row["multiple"])
        gold = as_answer(row["gold"], row["multiple"])
        counts[f"{kind}_n"] += 1
        counts[f"{kind}_as_human"] += got == human
        counts[f"{row['batch']}_n"] += 1
        counts[f"{row['batch']}_as_human"] += got == human
        counts[f"{kind}_correct"] += got == gold
        counts[f"{kind}_human_correct"] += human == gold
        counts["rejected_read"] += bool(set(letters) & set(row["rejected"]))
        counts["to_extractor"] += not sure
        if got != human:
            misses.append({"text": row["text"], "read": list(got), "human": list(human), "sure": sure})
    return {
        "replies": len(data),
        "as_human": counts["single_as_human"] + counts["multiple_as_human"],
        "single": {k: counts[f"single_{k}"] for k in ("n", "as_human", "correct", "human_correct")},
        "multiple": {k: counts[f"multiple_{k}"] for k in ("n", "as_human", "correct", "human_correct")},
        "batches": {b: {"n": counts[f"{b}_n"], "as_human": counts[f"{b}_as_human"]} for b in ("tuning", "holdout")},
        "rejected_read_as_chosen": counts["rejected_read"],
        "to_extractor": counts["to_extractor"],
        "languages": dict(Counter(r["lang"] for r in data)),
        "ms_per_reply": round(1000 * seconds / max(1, len(data)), 3),
        "misses": misses,
    }


def report(figures: dict[str, Any], label: str) -> str:
    s, m = figures["single"], figures["multiple"]
    return "\n".join([
        f"{label}: {figures['replies']} replies, read as a careful human reads them: {figures['as_human']}",
        f"  single answer   {s['as_human']}/{s['n']}   accuracy {s['correct'] / s['n']:.2f} "
        f"(human reading {s['human_correct'] / s['n']:.2f})",
        f"  multiple answer {m['as_human']}/{m['n']}   accuracy {m['correct'] / m['n']:.2f} "
        f"(human reading {m['human_correct'] / m['n']:.2f})",
        "  by batch: " + ", ".join(f"{b} {v['as_human']}/{v['n']}" for b, v in figures["batches"].items()),
        f"  replies reading an option they reject as chosen: {figures['rejected_read_as_chosen']}",
        f"  replies sent to an extractor (when a task sets one): {figures['to_extractor']}",
        f"  {figures['ms_per_reply']} ms per reply (one pass, first reading of each: patterns compiled then)",
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", metavar="REV", help="measure the reader of this git revision instead")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--misses", action="store_true", help="list the replies not read as a human reads them")
    args = parser.parse_args(argv)
    read = reader_at(args.before) if args.before else current_reader()
    figures = measure(read, rows())
    if args.json:
        print(json.dumps({k: v for k, v in figures.items() if k != "misses" or args.misses}, indent=2,
                         ensure_ascii=False))
        return 0
    print(report(figures, f"reader at {args.before}" if args.before else "reader of this checkout"))
    if args.misses:
        for miss in figures["misses"]:
            print(f"  {miss['text'][:90]!r}: read {miss['read']} (sure {miss['sure']}), human {miss['human']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
