"""Numbers read as a careful person reads them (issue 35, point 7): hand-written replies with the reading a
person gives them (tests/fixtures/numeric_replies.jsonl: the reply, the reference, the number read as written,
whether it is right, and why), through the reader and the Numeric scorer; the scorer's check of a reference
agrees with the reader, and a run of a YAML numeric benchmark scores units and fractions end to end."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from conftest import TESTS, fake_model_overrides, read_jsonl, run_in_process

from runner.scorers.numeric import Numeric, read_number, read_reference, read_reply
from runner.types import Sample

REPLIES = read_jsonl(TESTS / "fixtures" / "numeric_replies.jsonl")
BENCH = TESTS / "fixtures" / "yaml_bench"


def score(reply: str, reference: Any, **tolerances: float) -> tuple[Any, float]:
    scorer = Numeric(**tolerances)
    sample = Sample(id=0, input="q", target=reference)
    scorer.check(sample)
    scored = asyncio.run(scorer(sample, reply, None))  # type: ignore[arg-type]  # Numeric reads no context
    return scored.answer, scored.scores["accuracy"]


@pytest.mark.parametrize("row", REPLIES, ids=[r["why"] for r in REPLIES])
def test_a_reply_is_read_as_a_careful_person_reads_it(row):
    assert read_number(row["reply"]) == pytest.approx(row["reading"], rel=1e-12)
    assert score(row["reply"], row["reference"])[1] == float(row["correct"])


def test_a_percentage_matches_its_number_and_its_fraction_and_records_the_value_that_matched():
    assert score("50%", "0.5") == (0.5, 1.0)
    assert score("50%", "50") == (50.0, 1.0)
    assert score("50%", "0.4") == (50.0, 0.0)  # no match: the number as written
    assert read_reply("50%").values() == (50.0, 0.5)  # type: ignore[union-attr]


def test_a_tolerance_applies_to_the_number_read():
    assert score("The area is 48.3 m^2.", "48", rel_tol=0.01)[1] == 1.0
    assert score("The area is 48.3 m^2.", "48")[1] == 0.0
    assert score("1.2 × 10^3", "1201", rel_tol=0.001)[1] == 1.0


@pytest.mark.parametrize("reference, value", [
    ("1/2", 0.5), ("48 m^2", 48.0), ("1,234.5", 1234.5), ("1.2e3", 1200.0), ("-0.5", -0.5), ("$5", 5.0),
    ("50%", 50.0), ("1.2 × 10^3", 1200.0), (7, 7.0), (0.25, 0.25),
])
def test_a_reference_is_one_number_read_like_a_reply(reference, value):
    reading = read_reference(reference)
    assert reading is not None and reading.value == pytest.approx(value)
    Numeric().check(Sample(id=0, input="q", target=reference))


@pytest.mark.parametrize("reference", ["ten", "3 to 5", "about 4", "", "n/a", "1e400", "1/0"])
def test_a_reference_that_is_no_one_number_is_a_bad_row(reference):
    assert read_reference(reference) is None
    with pytest.raises(ValueError, match="is not a number"):
        Numeric().check(Sample(id=0, input="q", target=reference))


def test_every_reference_the_check_accepts_is_matched_by_a_reply_that_repeats_it():
    """The check and the reader agree: a reference the check lets through can be answered right."""
    references = {r["reference"] for r in REPLIES} | {"1/2", "48 m²", "5 × 10⁻⁷", "2^10"}
    for reference in sorted(references):
        assert score(reference, reference)[1] == 1.0, reference
        assert score(f"Answer: {reference}", reference)[1] == 1.0, reference


def test_a_numeric_benchmark_scores_units_fractions_and_stated_answers_end_to_end(fake_llm, tmp_path):
    """The shipped arithmetic fixture's questions, answered in ways a person would write them."""
    rows = read_jsonl(BENCH / "data" / "arithmetic.jsonl")
    replies = {row["question"]: reply for row, reply in zip(rows, _replies(rows), strict=True)}
    fake_llm.default = lambda body: replies[body["messages"][-1]["content"].strip().removeprefix("Compute: ")]
    run_dir = tmp_path / "run"
    results = run_in_process([*fake_model_overrides(fake_llm.base_url), f"hydra.searchpath=[file://{BENCH / 'conf'}]",
                              "benchmark=arith", f"benchmark.data_dir={BENCH / 'data'}", "tracker=none",
                              "progress=false", "cache.enabled=false", f"hydra.run.dir={run_dir}"], run_dir)
    records = read_jsonl(run_dir / "samples" / "arithmetic.jsonl")
    assert len(records) == len(rows) - 1  # one row is the few-shot example
    assert all(r["scores"]["accuracy"] == 1.0 for r in records), [(r["response"], r["reference"]) for r in records]
    assert all(r["answer"] == pytest.approx(float(r["reference"])) for r in records)
    assert results["tasks"]["arithmetic"]["metrics"]["accuracy"] == 1.0


def _replies(rows: list[dict[str, Any]]) -> list[str]:
    """Each reference written another way: a unit, reasoning before a stated answer, a power of ten."""
    styles = ["Working: {a} m^2 in all. Answer: {a} m^2", "Let me think: 2 + 2 = 4, so the answer is {a}.",
              "{e}", "The result is {a}, final."]
    out = []
    for i, row in enumerate(rows):
        value = float(row["answer"])
        out.append(styles[i % len(styles)].format(a=row["answer"], e=f"{value / 1000:g} × 10^3"))
    return out


def test_the_fixture_is_what_the_module_docstring_says():
    """Every reading kind the reader's docstring lists has a row in the fixture."""
    whys = " ".join(r["why"] for r in REPLIES)
    for kind in ("separator", "exponent", "power of ten", "fraction", "unit", "negative", "percentage",
                 "stated answer", "final answer", "think block", "boxed"):
        assert kind in whys, kind
