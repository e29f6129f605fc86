"""EVE hallucination_detection edge case of issue 10: a row with both `label` and `is_hallucinated` is read
by `label` first, as EVE's `doc.get("label", doc.get("is_hallucinated", True))` does."""

from __future__ import annotations

import json

import pytest
from conftest import fake_model_overrides, read_jsonl, run_in_process

from runner.benchmarks.eve.rows import Hallucination

ROWS = [
    # label and is_hallucinated disagree: label decides.
    {"id": "both-yes", "Question": "What does MSI stand for?", "Answer": "Microwave Sounding Imager.",
     "label": True, "is_hallucinated": False},
    {"id": "both-no", "Question": "What does SAR stand for?", "Answer": "Synthetic Aperture Radar.",
     "label": "no", "is_hallucinated": True},
    {"id": "label-int", "Question": "How many Sentinel-2 bands?", "Answer": "Nine.", "label": 1,
     "is_hallucinated": 0},
    # Only one of them, or a null label: the other is read.
    {"id": "only-flag", "Question": "Who operates Sentinel-1?", "Answer": "ESA.", "is_hallucinated": False},
    {"id": "null-label", "Question": "Band of Sentinel-1?", "Answer": "L-band.", "label": None,
     "is_hallucinated": True},
]


def test_label_is_read_before_is_hallucinated():
    rows = Hallucination()
    gold = {r["id"]: rows(r, i).target for i, r in enumerate(ROWS)}
    assert gold == {"both-yes": "A", "both-no": "B", "label-int": "A", "only-flag": "B", "null-label": "A"}
    with pytest.raises(ValueError, match="label value 'maybe' is not a yes/no label"):
        rows({"Question": "q", "Answer": "a", "label": "maybe", "is_hallucinated": True}, 0)
    with pytest.raises(ValueError, match="no gold label"):
        rows({"Question": "q", "Answer": "a"}, 0)


def test_a_run_scores_against_label_when_a_row_has_both(fake_llm, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "hallucination_detection.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    fake_llm.default = "A"  # the model calls every answer hallucinated
    run_dir = tmp_path / "run"
    results = run_in_process(fake_model_overrides(fake_llm.base_url) + [
        "benchmark=eve", f"benchmark.data_dir={data}", "benchmark.tasks=[hallucination_detection]",
        "benchmark.num_fewshot=0", "tracker=none", "progress=false", "cache.enabled=false",
        f"hydra.run.dir={run_dir}"], run_dir)
    # Gold by label first: A, B, A, B, A. Every reply is A: 3 right of 5; precision 3/5, recall 1.
    assert results["tasks"]["hallucination_detection"]["metrics"] == pytest.approx(
        {"accuracy": 3 / 5, "precision": 3 / 5, "recall": 1.0, "f1": 2 * 0.6 / 1.6})
    got = {r["id"]: r["reference"] for r in read_jsonl(run_dir / "samples" / "hallucination_detection.jsonl")}
    assert got == {"both-yes": "A", "both-no": "B", "label-int": "A", "only-flag": "B", "null-label": "A"}
