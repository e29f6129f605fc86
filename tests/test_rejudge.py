"""`python -m runner.rejudge SRC`: another panel grades the recorded replies; the model is never asked."""

from __future__ import annotations

import json

from conftest import JUDGE_CORRECT, JUDGE_INCORRECT, cli, one_line_error, panel_override, read_jsonl, run_overrides

PANEL_FIELDS = {"concurrency": 4, "timeout": 5}


def panel(name: str, url: str) -> str:
    return panel_override(url, [name], **PANEL_FIELDS)


def reply(body: dict) -> str:
    text = body["messages"][-1]["content"]
    if "strict fact-checker" in text:
        # judge-b is stricter: it fails the LiDAR answer.
        return JUDGE_INCORRECT if body["model"] == "judge-b" and "LiDAR" in text else JUDGE_CORRECT
    return "Answer: B" if "\nA. " in text else "An answer."


def test_rejudge_grades_recorded_replies_with_another_panel_and_asks_the_model_nothing(fake_llm, tmp_path):
    fake_llm.default = reply
    src = tmp_path / "src"
    first = cli(run_overrides(fake_llm.base_url, src, judges=["judge-a"], judge_fields=PANEL_FIELDS,
                              tasks=["open_ended", "mcqa_single_answer"], limit=3), timeout=120)
    assert first.returncode == 0, first.stderr
    fake_llm.reset()

    out = tmp_path / "rejudged"
    proc = cli([str(src), panel("judge-b", fake_llm.base_url), f"hydra.run.dir={out}"],
               module="runner.rejudge", timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert [b["model"] for b in fake_llm.requests] == ["judge-b"] * 3  # no request to the model under test

    results = json.loads((out / "results.json").read_text())
    assert results["judges"] == ["judge-b"] and results["model"] == "fake-model"
    assert results["tasks"]["open_ended"]["metrics"]["llm_as_judge_judge-b"] == 2 / 3
    old = {r["id"]: r for r in read_jsonl(src / "samples" / "open_ended.jsonl")}
    new = {r["id"]: r for r in read_jsonl(out / "samples" / "open_ended.jsonl")}
    assert {i: r["response"] for i, r in new.items()} == {i: r["response"] for i, r in old.items()}
    assert {j["judge"] for r in new.values() for j in r["judgements"]} == {"judge-b"}
    # The multiple-choice replies are re-read from the records, with the same scores.
    assert results["tasks"]["mcqa_single_answer"] == json.loads(
        (src / "results.json").read_text())["tasks"]["mcqa_single_answer"]
    assert (out / ".hydra" / "config.yaml").exists()


def test_rejudge_of_a_folder_that_is_no_run_dir_is_one_clear_line(tmp_path):
    proc = cli([str(tmp_path)], module="runner.rejudge", timeout=60)
    assert proc.returncode == 2 and "is not a run dir" in one_line_error(proc)


def test_a_one_judge_rejudge_sends_no_preflight(fake_llm, tmp_path):
    # The preflight asks only when a run calls two or more endpoints (docs/spending.md); a rejudge never calls
    # the model under test, so a one-judge panel is one endpoint: no one-token probe (issue 44, point 12).
    fake_llm.default = reply
    src = tmp_path / "src"
    assert cli(run_overrides(fake_llm.base_url, src, judges=["judge-a"], judge_fields=PANEL_FIELDS,
                             tasks=["open_ended"], limit=3), timeout=120).returncode == 0
    fake_llm.reset()
    proc = cli([str(src), panel("judge-b", fake_llm.base_url), "preflight=true", f"hydra.run.dir={tmp_path / 'out'}"],
               module="runner.rejudge", timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert all(b.get("max_tokens") != 1 for b in fake_llm.requests)  # no one-token probe
    assert len(fake_llm.requests) == 3 and {b["model"] for b in fake_llm.requests} == {"judge-b"}
