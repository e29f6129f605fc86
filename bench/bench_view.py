"""How `python -m runner.view` copes with a large run: write time, file size, and in headless Chromium the time
until the page is usable and until a filter, a sort, a page turn and an opened sample have been drawn.

    .venv/bin/python bench/bench_view.py                 # 20,000 samples, both kinds, best of 3
    .venv/bin/python bench/bench_view.py --n 50000 --kind judged --repeat 1 --keep /tmp/big

Kinds (synthetic, seeded records in the runner's samples-file layout):
* judged : EVE open_ended as it is recorded: 5 few-shot turns, a 300-900 character reply, three judges
           each with the rendered fact-check rubric it saw (its `prompt`), explanation and raw reply
* mcq    : EVE mcqa_single_answer: 2 few-shot turns, a short reply, no judges

Times in the browser are taken by the page itself (performance.now()): load = from navigation start to
the end of the first drawing of the page; each action = from the event to two animation frames later
(the rows drawn and laid out). Needs /usr/bin/chromium (Debian: apt-get install chromium).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from browser import CHROMIUM, Browser, Page  # noqa: E402

from runner.view import write_run  # noqa: E402

RUBRIC = (ROOT / "runner" / "benchmarks" / "eve" / "prompts" / "judge_fact_check.j2").read_text(encoding="utf-8")
WORDS = ["reflectance", "band", "orbit", "sensor", "radiance", "Sentinel-2", "Landsat", "SAR", "speckle",
         "interferometry", "NDVI", "water", "vegetation", "atmospheric", "correction", "resolution", "revisit",
         "swath", "polarisation", "backscatter", "thermal"]
JUDGES = ("judge-a", "judge-b", "judge-c")


def words(rng: random.Random, chars: int) -> str:
    out: list[str] = []
    while sum(len(w) + 1 for w in out) < chars:
        out.append(rng.choice(WORDS))
    return " ".join(out)


def judged_record(i: int, rng: random.Random, shots: list[dict[str, str]]) -> dict[str, Any]:
    question = f"Question {i}: " + words(rng, 120) + "?"
    reference, response = words(rng, 300), words(rng, rng.randint(300, 900))
    prompt = RUBRIC.replace("{{ question }}", question).replace("{{ reference }}", reference) \
        .replace("{{ response }}", response)
    judgements, scores = [], {}
    for judge in JUDGES:
        ok = rng.random() > 0.02
        verdict = rng.choice(("correct", "incorrect"))
        explanation = "The answer " + ("matches" if verdict == "correct" else "contradicts") + " the reference: " + \
            words(rng, 90)
        raw = json.dumps({"judgement": verdict, "explanation": explanation}) if ok else "I cannot decide."
        judgements.append({"judge": judge, "status": "ok" if ok else "invalid", "verdict": verdict if ok else None,
                           "score": float(verdict == "correct") if ok else None,
                           "explanation": explanation if ok else "", "raw": raw, "prompt": prompt})
        scores[f"judge/{judge}"] = float(ok and verdict == "correct")
    values = list(scores.values())
    scores.update({"judge_avg": sum(values) / 3, "judge_unanimous": float(len(set(values)) == 1),
                   "judge_vote": float(sum(values) >= 2)})
    status = "ok" if all(j["status"] == "ok" for j in judgements) else "invalid"
    return {"id": i, "task": "open_ended",
            "prompt": [{"role": "system", "content": "You are an expert in Earth Observation and remote sensing."},
                       *shots, {"role": "user", "content": question}],
            "reference": reference, "response": response, "answer": None, "judgements": judgements,
            "scores": scores, "status": status, "error": None, "model": "big-model",
            "usage": {"model": {"prompt_tokens": 900, "completion_tokens": 200, "cost": 0.0004, "cached": False,
                                "retries": 0, "served_model": "big-model"},
                      "judges": {j: {"prompt_tokens": 600, "completion_tokens": 40, "cost": 0.0001, "cached": False,
                                     "retries": 0} for j in JUDGES}},
            "extra": {}, "fingerprint": "data=0123456789ab task=0123456789ab prompt=0123456789ab model=0123456789ab "
                                        "judges=0123456789ab"}


def mcq_record(i: int, rng: random.Random, shots: list[dict[str, str]]) -> dict[str, Any]:
    options = "\n".join(f"{letter}. {words(rng, 25)}" for letter in "ABCD")
    target, answer = rng.choice("ABCD"), rng.choice("ABCD")
    return {"id": i, "task": "mcqa_single_answer",
            "prompt": [{"role": "system", "content": "You are an expert in Earth Observation and remote sensing. "
                        "Answer the multiple-choice question by choosing the one correct option."},
                       *shots, {"role": "user", "content": f"Question {i}: {words(rng, 100)}?\n{options}"}],
            "reference": target, "response": f"Answer: {answer}", "answer": answer, "judgements": [],
            "scores": {"accuracy": float(answer == target)}, "status": "ok", "error": None, "model": "big-model",
            "usage": {"model": {"prompt_tokens": 300, "completion_tokens": 3, "cost": 0.0001, "cached": False,
                                "retries": 0, "served_model": "big-model"}, "judges": {}},
            "extra": {}, "fingerprint": "data=0123456789ab task=0123456789ab prompt=0123456789ab model=0123456789ab"}


KINDS: dict[str, tuple[Callable[[int, random.Random, list[dict[str, str]]], dict[str, Any]], int]] = {
    "judged": (judged_record, 5), "mcq": (mcq_record, 2)}


def make_run(folder: Path, kind: str, n: int) -> Path:
    """A run dir with one task of `n` synthetic records and a results.json."""
    build, n_shots = KINDS[kind]
    rng = random.Random(0)
    shots = [m for k in range(n_shots) for m in ({"role": "user", "content": f"Example {k}: {words(rng, 150)}?"},
                                                   {"role": "assistant", "content": words(rng, 400)})]
    records = [build(i, rng, shots) for i in range(n)]
    task = records[0]["task"]
    (folder / "samples").mkdir(parents=True, exist_ok=True)
    with open(folder / "samples" / f"{task}.jsonl", "w", encoding="utf-8") as fh:
        for record in records:
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
    key = "judge_vote" if kind == "judged" else "accuracy"
    mean = sum(r["scores"][key] for r in records) / n
    results = {"benchmark": "eve", "model": "big-model", "judges": list(JUDGES) if kind == "judged" else [],
               "tasks": {task: {"n": n, "n_invalid": sum(r["status"] == "invalid" for r in records),
                                "invalid_ids": [], "metrics": {key: mean}, "n_errors": 0, "error_ids": [],
                                "ci": {key: [mean - 0.01, mean + 0.01]}}},
               "summary": {"n_samples": n}}
    (folder / "results.json").write_text(json.dumps(results), encoding="utf-8")
    return folder


ACTION = """(async () => {{
  const t0 = performance.now();
  {action}
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  return {{ms: performance.now() - t0, count: document.getElementById('f-count').textContent}};
}})()"""


def act(page: Page, action: str) -> dict[str, Any]:
    return dict(page.eval(ACTION.format(action=action), await_promise=True))


def set_value(element: str, value: str) -> str:
    return (f"const el = document.getElementById({json.dumps(element)}); el.value = {json.dumps(value)}; "
            "el.dispatchEvent(new Event('change'));")


def measure(page: Page, url: str) -> dict[str, float]:
    """One load of the page and a round of actions; each figure in milliseconds."""
    page.clear()
    page.goto(url)
    out = {"load": float(page.eval("+document.body.dataset.readyMs")),
           "parse": float(page.eval("+document.body.dataset.parseMs")),
           "heap_mb": page.heap_mb()}
    out["text filter (first)"] = act(page, set_value("f-text", "question 1234"))["ms"]
    out["text filter (again)"] = act(page, set_value("f-text", "sentinel-2 landsat"))["ms"]
    out["clear text filter"] = act(page, set_value("f-text", ""))["ms"]
    out["outcome filter"] = act(page, set_value("f-status", "wrong"))["ms"]
    out["sort by score"] = act(page, set_value("f-sort", "desc"))["ms"]
    out["next page"] = act(page, "document.getElementById('pager-next').click();")["ms"]
    out["open a sample"] = act(page, "document.querySelector('tr.sample-row').click();")["ms"]
    out["heap_mb after"] = page.heap_mb()
    errors = page.errors()
    if errors:
        raise SystemExit(f"the page logged errors: {errors[:3]}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=20_000, help="samples in the run")
    parser.add_argument("--kind", choices=[*KINDS, "both"], default="both")
    parser.add_argument("--repeat", type=int, default=3, help="loads per page; the median is reported")
    parser.add_argument("--keep", type=Path, help="build the run dirs here and keep them (default: a temp dir)")
    args = parser.parse_args()
    if not CHROMIUM.exists():
        raise SystemExit(f"{CHROMIUM} is missing: apt-get install chromium")
    base = args.keep or Path(tempfile.mkdtemp(prefix="bench-view-"))
    kinds = list(KINDS) if args.kind == "both" else [args.kind]
    try:
        with Browser() as browser:
            page = browser.page()
            for kind in kinds:
                run_dir = make_run(base / f"{kind}-{args.n}", kind, args.n)
                samples_mb = sum(p.stat().st_size for p in (run_dir / "samples").glob("*.jsonl")) / 1e6
                start = time.perf_counter()
                path = write_run(run_dir)
                written = time.perf_counter() - start
                rounds = [measure(page, path.as_uri()) for _ in range(args.repeat)]
                page_mb = path.stat().st_size / 1e6
                print(f"\n{kind}: {args.n} samples, samples file {samples_mb:.1f} MB, page {page_mb:.1f} MB, "
                      f"written in {written:.2f} s")
                for key in rounds[0]:
                    unit = "MB" if key.startswith("heap_mb") else "ms"
                    print(f"  {key:<22} {statistics.median(r[key] for r in rounds):8.0f} {unit}")
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
