"""Reasoning models, measured truthfully (issue 43): truncation recorded, counted and read honestly; reasoning
kept apart from the answer (never read, never shown to a judge); reasoning tokens and the served model recorded;
and what is recorded as sent is what litellm sends (a param it would drop stops the run before any request).

Every run here talks to tests/fake_llm.py answering as reasoning models do: reasoning in `reasoning_content` or a
leading `<think>` block, reasoning tokens in `completion_tokens_details`, `max_tokens` enforced on reasoning plus
reply (finish_reason `length`), and a dated served model name."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import EVE_SAMPLE, JUDGE_CORRECT, cli, one_line_error, read_jsonl, run_overrides
from fake_llm import FakeLLM

from runner.models.reasoning import split_reasoning
from runner.scorers.numeric import read_reply as read_number
from runner.scorers.reading.reader import read_cut

MCQ = "mcqa_single_answer"
THOUGHT = "Let me think about what each option says about the radar band and the orbit before I answer"
"""18 words of reasoning: more than a 16-token cap, well under 4096."""
SERVED = "fake-model-2026-01-15"


def gold() -> dict[str, str]:
    """Each single-answer question (its text) -> its reference letter."""
    rows = [json.loads(line) for line in (EVE_SAMPLE / f"{MCQ}.jsonl").read_text().splitlines() if line.strip()]
    return {r["Question"]: r["Answer"] for r in rows}


def last_text(body: dict[str, Any]) -> str:
    """The last message's text (a string, or the text parts Anthropic's Messages API sends)."""
    content = body["messages"][-1]["content"]
    return content if isinstance(content, str) else " ".join(p.get("text", "") for p in content)


def right_answer(body: dict[str, Any]) -> str:
    """The reference letter of the question asked, as a model that knows it would state it."""
    question = last_text(body)
    letter = next((a for q, a in gold().items() if q in question), "A")
    return f"Answer: {letter}"


# ------------------------------------------------------------------------------------------ units


@pytest.mark.parametrize(("content", "answer", "reasoning"), [
    ("<think>weigh A and B</think>\nAnswer: B", "Answer: B", "weigh A and B"),
    ("<think>weigh A and B, then", "", "weigh A and B, then"),  # cut inside its reasoning: no answer
    ("weigh A and B</think>Answer: C", "Answer: C", "weigh A and B"),  # the template opened <think>
    ("  <thinking>x</thinking>A", "A", "x"),
    ("Answer: B", "Answer: B", None),
    ("I use <think> tags </think> in prose <think>", "I use <think> tags </think> in prose <think>", None),
])
def test_a_reasoning_block_is_split_from_the_answer(content: str, answer: str, reasoning: str | None) -> None:
    assert split_reasoning(content) == (answer, reasoning)


@pytest.mark.parametrize(("reply", "letters"), [
    ("…so C looks right. Checking the others: A is wrong and D", ()),  # the cut reply: no answer
    ("Comparing the two orbits, so", ()),
    ("**A.", ()),
    ("Answer: B\n\nBecause the radar band", ("B",)),
    ("The final answer is (C), since the", ("C",)),
    ("The answer is", ()),
    ("I think the answer is C. Now checking D", ("C",)),
])
def test_a_cut_reply_is_read_only_from_an_answer_stated_before_the_cut(reply: str, letters: tuple[str, ...]) -> None:
    assert read_cut(reply, 4).letters == letters


def test_a_cut_numeric_reply_is_read_only_from_its_answer_statement() -> None:
    assert read_number("2 + 2 = 4, then 4 * 3 = 12, and 12 -", cut=True) is None
    assert read_number("2 + 2 = 4, then 4 * 3 = 12, and 12 -") is not None  # complete: its last number
    reading = read_number("The answer is 12. Checking: 4 * 3 = 1", cut=True)
    assert reading is not None and reading.value == 12


# --------------------------------------------------------------------------- end to end: truncation


def mcq_run(srv: FakeLLM, run_dir: Path, *extra: str, limit: int = 4, **kw: Any) -> list[str]:
    return run_overrides(srv.base_url, run_dir, *extra, tasks=[MCQ], limit=limit, judges=0, **kw)


def test_replies_cut_at_max_tokens_are_recorded_counted_and_warned_about(tmp_path: Path) -> None:
    # EVE's single-answer task caps replies at 64 tokens; this model thinks 18 words before it answers, and the
    # run caps it at 16: every reply is cut inside its reasoning.
    with FakeLLM(default=right_answer, reasoning=THOUGHT, enforce_max_tokens=True, served_model=SERVED) as srv:
        proc = cli(mcq_run(srv, tmp_path / "cut", "params.max_tokens=16"))
        assert proc.returncode == 0, proc.stderr[-2000:]
        full = cli(mcq_run(srv, tmp_path / "full", "params.max_tokens=4096"))
        assert full.returncode == 0, full.stderr[-2000:]
    cut = json.loads((tmp_path / "cut" / "results.json").read_text())
    block = cut["tasks"][MCQ]
    assert block["n_truncated"] == 4 and block["metrics"]["accuracy"] == 0.0
    records = read_jsonl(tmp_path / "cut" / "samples" / f"{MCQ}.jsonl")
    assert {r["finish_reason"] for r in records} == {"length"}
    assert all(r["response"] == "" and r["answer"] is None for r in records)
    assert all(r["reasoning"] == " ".join(THOUGHT.split()[:16]) for r in records)
    # the warning, once, with the way out; the table shows the share
    warned = [ln for ln in (proc.stdout + proc.stderr).splitlines() if "cut at the token limit" in ln]
    assert len(warned) == 1 and "4 of 4 replies (100 %)" in warned[0] and "params.max_tokens=64" in warned[0]
    assert "truncated" in proc.stdout and "1.0000" in proc.stdout

    done = json.loads((tmp_path / "full" / "results.json").read_text())
    block = done["tasks"][MCQ]
    assert block["n_truncated"] == 0 and block["metrics"]["accuracy"] == 1.0
    assert "cut at the token limit" not in full.stdout + full.stderr and "truncated" not in full.stdout
    records = read_jsonl(tmp_path / "full" / "samples" / f"{MCQ}.jsonl")
    words = len(THOUGHT.split())
    for r in records:
        assert (r["finish_reason"], r["reasoning"], r["served_model"]) == ("stop", THOUGHT, SERVED)
        assert r["response"].startswith("Answer: ") and THOUGHT not in r["response"]
        assert r["usage"]["reasoning_tokens"] == words == r["usage"]["model"]["reasoning_tokens"]
    usage = done["usage"]["fake-model"]
    assert usage["reasoning_tokens"] == 4 * words and usage["served_models"] == [SERVED]
    assert usage["completion_tokens"] == 4 * (words + 2)  # reasoning is output: "Answer: X" is 2 words


def test_a_think_block_is_recorded_apart_and_never_shown_to_the_judge(tmp_path: Path) -> None:
    marker = "SECRETREASONING"

    def reply(body: dict[str, Any]) -> str:
        if str(body["model"]).startswith("judge"):
            return JUDGE_CORRECT
        return "The revisit time is five days."

    with FakeLLM(default=reply, reasoning=f"{marker} I should recall the orbit", reasoning_style="think") as srv:
        proc = cli(run_overrides(srv.base_url, tmp_path / "run", tasks=["open_ended"], limit=3))
        judged = [b for b in srv.requests if str(b["model"]).startswith("judge")]
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert len(judged) == 3 and not any(marker in json.dumps(b) for b in judged)
    for r in read_jsonl(tmp_path / "run" / "samples" / "open_ended.jsonl"):
        assert r["response"] == "The revisit time is five days."
        assert r["reasoning"] == f"{marker} I should recall the orbit"
        assert r["finish_reason"] == "stop" and "<think>" not in r["response"]


def test_a_judged_reply_cut_inside_its_think_block_is_judged_empty_and_counted(tmp_path: Path) -> None:
    # Cut inside an unclosed <think>: the answer is empty, and that is what the judge sees (it scored the
    # reasoning as correct before).
    with FakeLLM(default=lambda b: JUDGE_CORRECT if str(b["model"]).startswith("judge") else "Five days.",
                 reasoning=THOUGHT, reasoning_style="think", enforce_max_tokens=True) as srv:
        proc = cli(run_overrides(srv.base_url, tmp_path / "run", "params.max_tokens=8", tasks=["open_ended"],
                                 limit=3))
        judged = [b for b in srv.requests if str(b["model"]).startswith("judge")]
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert judged and not any("radar band" in json.dumps(b) for b in judged)
    block = json.loads((tmp_path / "run" / "results.json").read_text())["tasks"]["open_ended"]
    assert block["n_truncated"] == 3
    records = read_jsonl(tmp_path / "run" / "samples" / "open_ended.jsonl")
    assert all(r["response"] == "" and r["finish_reason"] == "length" for r in records)


def test_a_cut_reply_is_read_only_from_its_stated_answer_end_to_end(tmp_path: Path) -> None:
    def reply(body: dict[str, Any]) -> dict[str, Any]:
        if "Sentinel-1" in body["messages"][-1]["content"]:
            stated = f"Answer: {right_answer(body)[-1]}\n\nBecause its C-band"
            return {"content": stated, "finish_reason": "length"}
        return {"content": "…so C looks right. Checking the others: A is wrong and D", "finish_reason": "length"}

    with FakeLLM(default=reply) as srv:
        proc = cli(mcq_run(srv, tmp_path / "run", limit=None))
    assert proc.returncode == 0, proc.stderr[-2000:]
    records = read_jsonl(tmp_path / "run" / "samples" / f"{MCQ}.jsonl")
    stated = [r for r in records if r["response"].startswith("Answer: ")]
    assert stated and all(r["answer"] == r["reference"] for r in stated)
    assert all(r["answer"] is None for r in records if r not in stated)  # never read as C
    block = json.loads((tmp_path / "run" / "results.json").read_text())["tasks"][MCQ]
    assert block["n_truncated"] == len(records)


# ------------------------------------------------------------------------------- what is sent


def test_a_param_litellm_would_drop_stops_the_run_before_any_request(tmp_path: Path) -> None:
    with FakeLLM(default="Answer: A") as srv:
        proc = cli(mcq_run(srv, tmp_path / "run", "params.reasoning_effort=high"))
        assert srv.count == 0
    line = one_line_error(proc)
    assert proc.returncode == 2
    assert "reasoning_effort='high'" in line and "openai/fake-model" in line and "drop_params: true" in line
    assert "allowed_openai_params" in line


def test_drop_params_leaves_it_out_and_records_it(tmp_path: Path) -> None:
    with FakeLLM(default="Answer: A") as srv:
        proc = cli(mcq_run(srv, tmp_path / "run", "params.reasoning_effort=high", model_fields={"drop_params": True}))
        bodies = [b for b in srv.requests]
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert bodies and not any("reasoning_effort" in b for b in bodies)
    block = json.loads((tmp_path / "run" / "results.json").read_text())["tasks"][MCQ]
    assert "reasoning_effort" not in block["params"] and block["params_dropped"] == {"reasoning_effort": "high"}
    plan = cli(mcq_run(srv, tmp_path / "plan", "params.reasoning_effort=high", "dry_run=true",
                       model_fields={"drop_params": True}))
    assert plan.returncode == 0, plan.stderr[-2000:]
    planned = json.loads((tmp_path / "plan" / "plan.json").read_text())["tasks"][MCQ]
    assert planned["params"] == block["params"] and planned["params_dropped"] == {"reasoning_effort": "high"}


def test_allowed_openai_params_sends_it_to_a_server_that_takes_it(tmp_path: Path) -> None:
    with FakeLLM(default="Answer: A") as srv:
        proc = cli(mcq_run(srv, tmp_path / "run", "params.reasoning_effort=high",
                           "params.allowed_openai_params=[reasoning_effort]"))
        bodies = list(srv.requests)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert bodies and all(b.get("reasoning_effort") == "high" for b in bodies)
    block = json.loads((tmp_path / "run" / "results.json").read_text())["tasks"][MCQ]
    assert block["params"]["reasoning_effort"] == "high" and block["params_dropped"] == {}


# -------------------------------------------------------------------- with epochs, workers, resume, batch


def test_reasoning_and_truncation_hold_with_epochs_workers_and_resume(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    with FakeLLM(default=right_answer, reasoning=THOUGHT, enforce_max_tokens=True, served_model=SERVED) as srv:
        args = mcq_run(srv, run_dir, "epochs=2", "workers=2", "params.max_tokens=24", limit=6)
        first = cli(args)
        sent = srv.count
        again = cli(args)
        assert srv.count == sent  # resumed: nothing asked again
    assert first.returncode == 0 and again.returncode == 0, first.stderr[-2000:] + again.stderr[-2000:]
    records = read_jsonl(run_dir / "samples" / f"{MCQ}.jsonl")
    assert len(records) == 12 and {r["epoch"] for r in records} == {0, 1}
    # 18 words of reasoning and 2 of answer fit in 24: nothing is cut
    assert all((r["finish_reason"], r["reasoning"], r["served_model"]) == ("stop", THOUGHT, SERVED) for r in records)
    results = json.loads((run_dir / "results.json").read_text())
    assert results["tasks"][MCQ]["n_truncated"] == 0
    assert results["usage"]["fake-model"]["reasoning_tokens"] == 12 * len(THOUGHT.split())


def test_a_batch_reply_keeps_its_finish_reason_and_reasoning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from runner.models import batch as batch_module

    monkeypatch.setattr(batch_module, "POLL_FIRST_S", 0.01)
    monkeypatch.setattr(batch_module, "POLL_MAX_S", 0.02)
    with FakeLLM(default=right_answer, reasoning=THOUGHT, enforce_max_tokens=True) as srv:
        proc = cli(mcq_run(srv, tmp_path / "run", "params.max_tokens=16",
                           model_fields={"batch": True, "batch_wait": 0.1}))
        assert srv.batch_lines and srv.count == 0  # everything went in a batch
    assert proc.returncode == 0, proc.stderr[-2000:]
    records = read_jsonl(tmp_path / "run" / "samples" / f"{MCQ}.jsonl")
    assert {r["finish_reason"] for r in records} == {"length"} and all(r["reasoning"] for r in records)
    assert json.loads((tmp_path / "run" / "results.json").read_text())["tasks"][MCQ]["n_truncated"] == 4


# ------------------------------------------------------------- Anthropic, through litellm's own provider


CLAUDE = "anthropic/claude-3-7-sonnet-20250219"


def test_an_anthropic_model_thinks_by_effort_keeps_its_thinking_apart_and_gets_no_seed(tmp_path: Path) -> None:
    # litellm's anthropic provider at the fake server's Messages endpoint: reasoning_effort=low becomes a 1,024
    # token thinking budget; the thinking block is the record's reasoning; Anthropic takes no seed, so two
    # epochs send none (each is still asked) instead of a request litellm would refuse.
    with FakeLLM(default=right_answer, reasoning=THOUGHT, served_model="claude-3-7-sonnet-20250219") as srv:
        args = run_overrides(srv.base_url.removesuffix("/v1"), tmp_path / "run", f"model.model={CLAUDE}",
                             "params.reasoning_effort=low", "params.max_tokens=2048", "epochs=2", tasks=[MCQ],
                             limit=3, judges=0)
        proc = cli(args)
        bodies = list(srv.requests)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert len(bodies) == 6 and all(b["thinking"] == {"type": "enabled", "budget_tokens": 1024} for b in bodies)
    assert not any("seed" in b for b in bodies)
    records = read_jsonl(tmp_path / "run" / "samples" / f"{MCQ}.jsonl")
    assert len(records) == 6
    for r in records:
        assert (r["reasoning"], r["finish_reason"], r["served_model"]) == (THOUGHT, "stop", CLAUDE.split("/")[1])
        assert r["answer"] == r["reference"] and r["usage"]["reasoning_tokens"] == len(THOUGHT.split())
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["tasks"][MCQ]["params"]["reasoning_effort"] == "low"
    assert results["usage"]["fake-model"]["reasoning_tokens"] == 6 * len(THOUGHT.split())


def test_a_thinking_budget_in_anthropics_own_form_passes_and_a_cut_reply_counts(tmp_path: Path) -> None:
    with FakeLLM(default=right_answer, enforce_max_tokens=True) as srv:
        args = run_overrides(srv.base_url.removesuffix("/v1"), tmp_path / "run", f"model.model={CLAUDE}",
                             "params.thinking={type:enabled,budget_tokens:2048}", "params.max_tokens=3",
                             tasks=[MCQ], limit=2, judges=0)
        proc = cli(args)
        bodies = list(srv.requests)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert all(b["thinking"] == {"type": "enabled", "budget_tokens": 2048} for b in bodies)
    block = json.loads((tmp_path / "run" / "results.json").read_text())["tasks"][MCQ]
    assert block["n_truncated"] == 2  # the server's thinking took the 3 tokens: stop_reason max_tokens
    records = read_jsonl(tmp_path / "run" / "samples" / f"{MCQ}.jsonl")
    assert all(r["finish_reason"] == "length" and r["answer"] is None for r in records)


# ------------------------------------------------------------------------------------- the viewer


def test_the_viewer_shows_reasoning_folded_a_cut_badge_and_a_cut_filter(tmp_path: Path) -> None:
    from browser import CHROMIUM, Browser

    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium chromium-driver; .ci/run installs it)")

    def reply(body: dict[str, Any]) -> dict[str, Any]:  # the Sentinel questions think past the cap: cut
        question = body["messages"][-1]["content"]
        return {"content": right_answer(body), "reasoning": THOUGHT * (3 if "Sentinel" in question else 1)}

    run_dir = tmp_path / "run"
    with FakeLLM(default=reply, enforce_max_tokens=True) as srv:
        proc = cli(mcq_run(srv, run_dir, "params.max_tokens=30", limit=None))
    assert proc.returncode == 0, proc.stderr[-2000:]
    records = read_jsonl(run_dir / "samples" / f"{MCQ}.jsonl")
    cut = sorted(str(r["id"]) for r in records if r["finish_reason"] == "length")
    whole = sorted(str(r["id"]) for r in records if r["finish_reason"] != "length")
    assert cut and whole
    assert cli(["view", str(run_dir)]).returncode == 0
    path = run_dir / "view" / "index.html"
    with Browser() as browser:
        page = browser.page()
        page.goto(path.as_uri())
        page.eval("(() => { const el = document.getElementById('f-size'); el.value = '500';"
                  " el.dispatchEvent(new Event('change')); })()")

        def shown(value: str) -> list[str]:
            page.eval(f"(() => {{ const el = document.getElementById('f-cut'); el.value = {json.dumps(value)};"
                      " el.dispatchEvent(new Event('change')); })()")
            return sorted(page.eval("[...document.querySelectorAll('tr.sample-row')].map(r => r.dataset.id)"))

        assert shown("length") == cut and shown("whole") == whole and shown("") == sorted(cut + whole)
        badges = page.eval("[...document.querySelectorAll('tr.sample-row')].filter(r => [...r.querySelectorAll("
                           "'.chip')].some(c => c.textContent === 'cut')).map(r => r.dataset.id)")
        assert sorted(badges) == cut
        page.eval(f"document.querySelector('tr.sample-row[data-id=\"{whole[0]}\"]').click()")
        folds = page.eval("[...document.querySelectorAll('.detail details.fold')].map(d => "
                          "[d.querySelector('summary').textContent, d.open, d.textContent])")
        thought = [f for f in folds if f[0].startswith("reasoning")]
        assert len(thought) == 1 and thought[0][1] is False and THOUGHT in thought[0][2]
        assert "cut at max_tokens" in page.eval("document.querySelector('p.counts').textContent")
        assert page.errors() == []


# ------------------------------------------------------------------------ every shipped entry, as sent

SHIPPED_MODELS = sorted(p.stem for p in (Path(__file__).resolve().parent.parent / "conf" / "model").glob("*.yaml"))


@pytest.mark.parametrize("model", SHIPPED_MODELS)
def test_every_shipped_model_sends_every_param_each_eve_task_sets(model: str) -> None:
    # No shipped entry may rely on litellm dropping a param: with each EVE task's own params (max_tokens 64 for
    # the multiple-choice tasks, ...) and with reasoning_effort where the provider maps it.
    import litellm
    from conftest import compose

    from runner.config import instantiate
    from runner.models.entries import endpoint_from_config
    from runner.models.sent_params import decide

    cfg = compose([f"model={model}", "benchmark=eve", "judges=none"])
    entry = endpoint_from_config(dict(cfg.model), None)
    tasks = instantiate(cfg.benchmark, "benchmark").build_tasks()
    for task in tasks:
        effective = entry.effective_params(task.params)
        sent = decide(litellm, name=entry.name, model=entry.model, api_base=entry.api_base, params=effective,
                      drop=False)
        assert sent.params == effective and sent.dropped == {}, (model, task.name)
    if model.startswith(("claude", "gemini")):  # their thinking budgets come from the one effort knob
        sent = decide(litellm, name=entry.name, model=entry.model, api_base=entry.api_base,
                      params={**entry.params, "reasoning_effort": "low"}, drop=False)
        assert sent.params["reasoning_effort"] == "low"


@pytest.mark.parametrize("panel", ["one", "three", "mugen", "local"])
def test_every_shipped_judge_sends_every_param_it_sets(panel: str) -> None:
    import litellm
    from conftest import compose

    from runner.models.entries import endpoint_from_config
    from runner.models.sent_params import decide

    for judge in compose([f"judges={panel}"]).judges.panel:
        entry = endpoint_from_config(dict(judge), None)
        effective = entry.effective_params(None)
        sent = decide(litellm, name=entry.name, model=entry.model, api_base=entry.api_base, params=effective,
                      drop=False)
        assert sent.params == effective and sent.structured, (panel, entry.name)


def test_a_cached_rerun_records_the_same_truncation_and_reasoning(tmp_path: Path) -> None:
    # The response cache keeps finish_reason and reasoning: a re-run served from it reads and counts as the
    # run that asked (before the cache stored them, a cached cut reply would have been read as complete).
    with FakeLLM(default=right_answer, reasoning=THOUGHT, enforce_max_tokens=True) as srv:
        first = cli(mcq_run(srv, tmp_path / "a", "params.max_tokens=24", limit=3, cache=tmp_path / "cache"))
        sent = srv.count
        again = cli(mcq_run(srv, tmp_path / "b", "params.max_tokens=24", limit=3, cache=tmp_path / "cache"))
        assert srv.count == sent  # all from the cache
        cut = cli(mcq_run(srv, tmp_path / "c", "params.max_tokens=16", limit=3, cache=tmp_path / "cache"))
        cached_cut = cli(mcq_run(srv, tmp_path / "d", "params.max_tokens=16", limit=3, cache=tmp_path / "cache"))
    for proc in (first, again, cut, cached_cut):
        assert proc.returncode == 0, proc.stderr[-2000:]

    def view(run: str) -> list[tuple[Any, ...]]:
        return sorted((r["id"], r["finish_reason"], r["reasoning"], r["response"], r["answer"])
                      for r in read_jsonl(tmp_path / run / "samples" / f"{MCQ}.jsonl"))
    assert view("a") == view("b") and view("c") == view("d")
    assert {row[1] for row in view("d")} == {"length"} and all(row[4] is None for row in view("d"))
    blocks = {run: json.loads((tmp_path / run / "results.json").read_text())["tasks"][MCQ] for run in "abcd"}
    assert blocks["b"]["n_truncated"] == 0 and blocks["d"]["n_truncated"] == blocks["c"]["n_truncated"] == 3
    assert blocks["b"]["metrics"] == blocks["a"]["metrics"] and blocks["d"]["metrics"] == blocks["c"]["metrics"]
