"""`python -m runner.view` on a run of every benchmark (EVE, MUGEN, VAKRA, win rate) made against the fake
server: the page file, its embedded data, its escaping, the CLI, and the page itself in headless Chromium
loaded from file:// (no console error, no request, filters that show the expected rows, a sample opened).

Hand-derived from the EVE sample data (runner/benchmarks/eve/sample/): mcqa_single_answer scores ids 2-14
(rows 0-1 are the two shots) and the model always answers B, so ids 4 and 7 (reference B) are correct, and
id 3 (the NDVI question) fails on every attempt: an error. open_ended scores ids 5-14; judge2 rejects the
answers to the Sentinel questions (ids 10 and 12), so with two judges those have no majority: wrong.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import test_mugen_runs as mugen_tests
import test_vakra_run as vakra_tests
import test_win_rate as win_rate_tests
from browser import CHROMIUM, Browser, Page
from conftest import EVE_SAMPLE, JUDGE_CORRECT, cli, fake_model_overrides, read_jsonl, run_in_process, write_jsonl
from fake_llm import FakeLLM

from runner.view import write_view
from runner.view.page import script_json

PAYLOAD = '</script><script>window.pwned=1</script><img src=x onerror="window.pwned=2"><!-- <b>bold</b>'
JUDGE_PAYLOAD = json.dumps({"judgement": "incorrect", "explanation": '<img src=x onerror="window.pwned=3"> wrong'})
CORRECT_MCQ, ERROR_MCQ, PAYLOAD_MCQ = [4, 7], [3], 2
WRONG_OPEN = [10, 12]


def _last_user(body: dict[str, Any]) -> str:
    return next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")


def eve_reply(body: dict[str, Any]) -> str:
    text = _last_user(body)
    if "strict fact-checker" in text:
        question = re.search(r"Question:\n(.*?)\n\nReference", text, re.S).group(1)
        return JUDGE_PAYLOAD if body["model"] == "judge2" and "Sentinel" in question else JUDGE_CORRECT
    if "Landsat 8 satellite" in text:  # id 2: markup in a reply must stay text
        return "Answer: B " + PAYLOAD
    return "Answer: B" if "multiple-choice" in body["messages"][0]["content"] else "An answer about EO."


@pytest.fixture(scope="module")
def server() -> Iterator[FakeLLM]:
    srv = FakeLLM(default="A")
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def runs(server: FakeLLM, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One run dir per benchmark, each viewed once (`DIR/view/index.html`)."""
    root = tmp_path_factory.mktemp("view-runs")
    made = {name: root / name for name in ("eve", "vakra", "win_rate", "mugen")}
    server.default = eve_reply
    server.faults, server.fault_only_matching = ["500"] * 8, "Normalized Difference Vegetation Index"
    run_in_process(fake_model_overrides(server.base_url, judges=2) + [
        "benchmark=eve", f"benchmark.data_dir={EVE_SAMPLE}", "benchmark.tasks=[mcqa_single_answer,open_ended]",
        "model.backoff=0.01", "fail_on_error=1", "tracker=none", "progress=false", "cache.enabled=false",
        f"hydra.run.dir={made['eve']}"], made["eve"])
    server.faults, server.fault_only_matching = [], None
    server.default = vakra_tests.scripted_judge
    run_in_process(vakra_tests.overrides(server.base_url, made["vakra"]), made["vakra"])
    server.default = win_rate_tests.scripted_judge
    run_in_process(win_rate_tests.overrides(server.base_url, made["win_rate"], ["judge1", "judge3"],
                                            "benchmark.orders=both"), made["win_rate"])
    server.default = mugen_tests.rubric_judge
    run_in_process(mugen_tests.overrides(server, made["mugen"], f"benchmark.prediction_dir={mugen_tests.PREDICTIONS}"),
                   made["mugen"])
    for run_dir in made.values():
        write_view(run_dir)
    return made


def page_data(path: Path) -> dict[str, Any]:
    """The JSON block of a page, as the page's script reads it."""
    text = path.read_text(encoding="utf-8")
    match = re.search(r'<script type="application/json" id="view-data">(.*?)</script>', text, re.S)
    assert match, "the page has no data block"
    return dict(json.loads(match.group(1)))


def in_page(value: Any) -> str:
    """How a value sits in the page's data: JSON as written (UTF-8, compact), with every `<` escaped."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")


# ------------------------------------------------------------------------------------------ the file


@pytest.mark.parametrize("bench", ["eve", "vakra", "win_rate", "mugen"])
def test_every_benchmark_gets_one_file_whose_data_is_readable_and_whose_markup_loads_nothing(runs, bench):
    path = runs[bench] / "view" / "index.html"
    text = path.read_text(encoding="utf-8")
    records = {p.stem: read_jsonl(p) for p in (runs[bench] / "samples").glob("*.jsonl")}
    data = page_data(path)
    assert data["kind"] == "run" and [t["name"] for t in data["tasks"]] == list(
        json.loads((runs[bench] / "results.json").read_text())["tasks"])
    for task, recs in records.items():
        assert [s["id"] for s in next(t for t in data["tasks"] if t["name"] == task)["samples"]] == \
            sorted(r["id"] for r in recs)
        for rec in recs:  # the contract's readable data: ids, responses, verdicts, explanations
            assert f'"id":{json.dumps(rec["id"])}' in text
            if rec["response"]:
                assert in_page(rec["response"]) in text
            for judgement in rec["judgements"]:
                assert in_page(judgement["verdict"]) in text and in_page(judgement["explanation"]) in text
    body = text.split('<script type="application/json" id="view-data">')[1].split("</script>")[0]
    assert "<" not in body
    # Only the inline stylesheet and script: nothing that names another file or address.
    assert not re.search(r"\b(src|href)\s*=", text.split('<script type="application/json"')[0])
    assert not re.search(r"<(link|iframe|object|embed|img|base)\b", text, re.I)
    assert "Content-Security-Policy" in text and "default-src 'none'" in text


def test_judge_prompts_are_recorded_and_shown_per_judge(runs):
    open_ended = read_jsonl(runs["eve"] / "samples" / "open_ended.jsonl")
    for rec in open_ended:
        question = rec["prompt"][-1]["content"]
        assert [j["judge"] for j in rec["judgements"]] == ["judge1", "judge2"]
        assert all(question in j["prompt"] and rec["response"] in j["prompt"] for j in rec["judgements"])
    vakra = read_jsonl(runs["vakra"] / "samples" / "library.jsonl")
    assert all(j["prompt"] for r in vakra for j in r["judgements"])
    assert any("<tool_outputs>" in j["prompt"] for r in vakra for j in r["judgements"]
               if j["rubric"] == "groundedness")
    mugen = read_jsonl(runs["mugen"] / "samples" / "Keyword_Spotting.jsonl")
    assert all("The model's reply" in j["prompt"] for r in mugen for j in r["judgements"])
    # In the page, a panel's one prompt is kept once and named by index from each judge.
    data = page_data(runs["eve"] / "view" / "index.html")
    task = next(t for t in data["tasks"] if t["name"] == "open_ended")
    sample = task["samples"][0]
    first = sample["judgements"]
    assert isinstance(first[0]["prompt"], int) and first[0]["prompt"] == first[1]["prompt"]
    record = next(r for r in open_ended if r["id"] == sample["id"])
    assert data["strings"][first[0]["prompt"]] == record["judgements"][0]["prompt"]


def test_outcomes_and_scores_come_from_the_records(runs):
    data = page_data(runs["eve"] / "view" / "index.html")
    mcq, open_ended = data["tasks"]
    assert mcq["score_key"] == "accuracy" and open_ended["score_key"] == "judge_vote"
    by_outcome: dict[str, list[int]] = {}
    for s in mcq["samples"]:
        by_outcome.setdefault(s["_c"], []).append(s["id"])
    assert by_outcome["correct"] == CORRECT_MCQ and by_outcome["error"] == ERROR_MCQ
    assert sorted(by_outcome["wrong"]) == sorted(set(range(2, 15)) - set(CORRECT_MCQ) - set(ERROR_MCQ))
    assert [s["id"] for s in open_ended["samples"] if s["_c"] == "wrong"] == WRONG_OPEN
    win = page_data(runs["win_rate"] / "view" / "index.html")["tasks"][0]
    assert win["pairwise"] == {"a": "x", "b": "y"}
    # both orders: each judge's entry keeps its two calls, one per model shown first
    assert all(sorted(c["shown_first"] for c in j["calls"]) == ["x", "y"]
               for s in win["samples"] for j in s["judgements"])


def test_script_json_escapes_every_angle_bracket_and_keeps_the_rest_readable():
    text = script_json({"r": "</script><!-- é & > ", "n": float("nan"), "s": "\ud800"})
    assert "<" not in text and "é & >" in text
    assert json.loads(text) == {"r": "</script><!-- é & > ", "n": None, "s": "\ud800"}


def test_a_run_without_results_json_is_viewed_from_its_samples_alone(tmp_path):
    run_dir = tmp_path / "stopped"
    write_jsonl(run_dir / "samples" / "t.jsonl", [
        {"id": "b", "task": "t", "prompt": "q", "reference": "A", "response": "old", "scores": {"accuracy": 0.0},
         "status": "ok", "judgements": []},
        {"id": "a", "task": "t", "prompt": "q", "reference": "A", "response": "A", "scores": {"accuracy": 1.0},
         "status": "ok", "judgements": []},
        {"id": "b", "task": "t", "prompt": "q", "reference": "A", "response": "new", "scores": {"accuracy": 1.0},
         "status": "ok", "judgements": []}])
    with open(run_dir / "samples" / "t.jsonl", "a", encoding="utf-8") as fh:
        fh.write('{"id": "c", "task": "t", "pro')  # torn by a kill
    proc = cli([str(run_dir)], module="runner.view")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(run_dir / "view" / "index.html")
    (task,) = page_data(run_dir / "view" / "index.html")["tasks"]
    assert [(s["id"], s["response"], s["_c"]) for s in task["samples"]] == \
        [("a", "A", "correct"), ("b", "new", "correct")]


def test_a_folder_that_is_no_run_or_sweep_is_one_error_line_and_exit_2(tmp_path):
    (tmp_path / "empty").mkdir()
    for args in ([str(tmp_path / "missing")], [str(tmp_path / "empty")],
                 [str(tmp_path / "empty"), str(tmp_path / "missing")]):
        proc = cli(args, module="runner.view")
        assert proc.returncode == 2 and "Traceback" not in proc.stderr
        (line,) = proc.stderr.strip().splitlines()
        assert line.startswith("error: ") and str(tmp_path) in line


def test_open_hands_the_page_to_the_default_browser(runs, tmp_path):
    opened = tmp_path / "opened.txt"
    fake_browser = tmp_path / "fake-browser"
    fake_browser.write_text(f'#!/bin/sh\necho "$1" > {opened}\n')
    fake_browser.chmod(0o755)
    proc = cli([str(runs["mugen"]), "--open"], env={"BROWSER": str(fake_browser)}, module="runner.view")
    assert proc.returncode == 0, proc.stderr
    path = runs["mugen"] / "view" / "index.html"
    assert proc.stdout.splitlines()[0] == str(path)
    assert opened.read_text().strip() == path.as_uri()


# ------------------------------------------------------------------------------------------ in Chromium


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium chromium-driver; .ci/run installs it)")
    with Browser() as b:
        yield b


def open_page(browser: Browser, path: Path) -> Page:
    page = browser.page()
    page.goto(path.as_uri())
    return page


def shown_ids(page: Page) -> list[str]:
    return list(page.eval("[...document.querySelectorAll('tr.sample-row')].map(r => r.dataset.id)"))


def choose(page: Page, element: str, value: str) -> list[str]:
    """Set a filter control as a user would (the change event) and return the ids of the rows shown."""
    page.eval(f"(() => {{ const el = document.getElementById({json.dumps(element)}); el.value = {json.dumps(value)};"
              " el.dispatchEvent(new Event('change')); })()")
    return shown_ids(page)


def tab(page: Page, task: str) -> None:
    page.eval(f"document.querySelector('button.task-tab[data-task={json.dumps(task)}]').click()")


def assert_clean(page: Page, path: Path) -> None:
    assert page.errors() == []
    assert page.requests() == [path.as_uri()]
    assert page.eval("performance.getEntriesByType('resource').length") == 0


@pytest.mark.parametrize("bench", ["eve", "vakra", "win_rate", "mugen"])
def test_each_run_page_loads_from_file_with_no_console_error_and_no_request(runs, browser, bench):
    path = runs[bench] / "view" / "index.html"
    page = open_page(browser, path)
    tasks = page.eval("[...document.querySelectorAll('button.task-tab')].map(b => b.dataset.task)")
    assert tasks == list(json.loads((runs[bench] / "results.json").read_text())["tasks"])
    for task in tasks:  # every task drawn, and every sample of it opened
        tab(page, task)
        choose(page, "f-size", "500")
        page.eval("document.querySelectorAll('tr.sample-row').forEach(r => r.click())")
        assert page.eval("document.querySelectorAll('.detail').length") == len(shown_ids(page)) > 0
    # The run's facts count as the closing line does (docs/outputs.md "What is counted"): sent and cached apart.
    facts = page.eval("Object.fromEntries([...document.querySelectorAll('dl.facts dt')].map("
                      "dt => [dt.textContent, dt.nextElementSibling.textContent]))")
    totals = json.loads((runs[bench] / "results.json").read_text())["totals"]
    assert facts["requests sent"].replace(",", "") == str(totals["requests"])
    assert facts["from the cache"].replace(",", "") == str(totals["cached_requests"])
    assert_clean(page, path)


def test_filters_show_the_rows_derived_from_the_fixture_data(runs, browser):
    path = runs["eve"] / "view" / "index.html"
    page = open_page(browser, path)
    rows = [json.loads(line) for line in (EVE_SAMPLE / "mcqa_single_answer.jsonl").read_text().splitlines()]
    assert shown_ids(page) == [str(i) for i in range(2, 15)]
    assert choose(page, "f-status", "correct") == [str(i) for i in CORRECT_MCQ]
    assert choose(page, "f-status", "error") == [str(i) for i in ERROR_MCQ]
    choose(page, "f-status", "")
    landsat = [str(i) for i, r in enumerate(rows)
               if i >= 2 and "landsat" in (r["Question"] + " ".join(r["Choices"])).lower()]
    assert 0 < len(landsat) < 13
    assert choose(page, "f-text", "LandSat") == landsat
    assert choose(page, "f-text", "") == [str(i) for i in range(2, 15)]
    # sorted by score: the two correct ones first, the error (no score) last
    assert choose(page, "f-sort", "desc")[:2] == [str(i) for i in CORRECT_MCQ] and shown_ids(page)[-1] == "3"
    tab(page, "open_ended")
    assert choose(page, "f-verdict", "judge2\u0001\u0001incorrect") == [str(i) for i in WRONG_OPEN]
    assert choose(page, "f-verdict", "\u0002disagree") == [str(i) for i in WRONG_OPEN]
    choose(page, "f-verdict", "")
    assert choose(page, "f-status", "wrong") == [str(i) for i in WRONG_OPEN]
    # typing (input events) filters too, after a short pause
    page.eval("(() => { const el = document.getElementById('f-text'); el.value = 'nothing matches this';"
              " el.dispatchEvent(new Event('input')); })()")
    page.wait_for("document.getElementById('f-count').textContent === 'no sample matches'")
    assert shown_ids(page) == []
    assert_clean(page, path)


def test_an_opened_sample_shows_messages_with_folded_shots_reply_answer_reference_and_each_judge(runs, browser):
    path = runs["eve"] / "view" / "index.html"
    page = open_page(browser, path)
    tab(page, "open_ended")
    page.eval("document.querySelector('tr.sample-row[data-id=\"10\"]').click()")
    detail = page.eval("document.querySelector('.detail').innerText")
    record = next(r for r in read_jsonl(runs["eve"] / "samples" / "open_ended.jsonl") if r["id"] == 10)
    assert page.eval("document.querySelector('.detail details.fold > summary').textContent") == \
        "5 few-shot turns (10 messages)"
    assert page.eval("document.querySelector('.detail details.fold').open") is False
    for text in (record["prompt"][0]["content"], record["prompt"][-1]["content"], record["response"],
                 record["reference"], "judge1", "judge2", "matches the reference",
                 '<img src=x onerror="window.pwned=3"> wrong'):
        assert text in detail, text
    prompts = page.eval("[...document.querySelectorAll('.detail .judge details')].filter(d => "
                        "d.querySelector('summary').textContent === 'prompt the judge saw').map(d => d.textContent)")
    assert len(prompts) == 2 and all(record["judgements"][0]["prompt"] in p for p in prompts)
    assert_clean(page, path)


def test_markup_in_replies_and_explanations_is_shown_as_text_and_runs_nothing(runs, browser):
    path = runs["eve"] / "view" / "index.html"
    page = open_page(browser, path)
    page.eval(f"document.querySelector('tr.sample-row[data-id=\"{PAYLOAD_MCQ}\"]').click()")
    row = page.eval(f"document.querySelector('tr.sample-row[data-id=\"{PAYLOAD_MCQ}\"]').innerText")
    assert "Answer: B " + PAYLOAD in row
    assert "Answer: B " + PAYLOAD in page.eval("document.querySelector('.detail').innerText")
    tab(page, "open_ended")
    page.eval("document.querySelectorAll('tr.sample-row').forEach(r => r.click())")
    assert page.eval("typeof window.pwned") == "undefined"
    assert page.eval("document.querySelectorAll('#app img, #app script, #app b').length") == 0
    assert_clean(page, path)


def test_a_vakra_dialogue_shows_its_tool_calls_and_a_pairwise_sample_both_orders(runs, browser):
    path = runs["vakra"] / "view" / "index.html"
    page = open_page(browser, path)
    page.eval("document.querySelector('tr.sample-row[data-id=\"lib-003\"]').click()")
    detail = page.eval("document.querySelector('.detail').textContent")
    record = next(r for r in read_jsonl(runs["vakra"] / "samples" / "library.jsonl") if r["id"] == "lib-003")
    calls = record["extra"]["tool_calls"]
    assert all(c["name"] in detail for c in calls["prediction"] + calls["ground_truth"][-1])
    assert "Tool calls (prediction, replayed)" in detail and "correctness" in detail and "groundedness" in detail
    assert_clean(page, path)

    path = runs["win_rate"] / "view" / "index.html"
    page = open_page(browser, path)
    page.eval("document.querySelector('tr.sample-row').click()")
    first = read_jsonl(next((runs["win_rate"] / "samples").glob("*.jsonl")))
    first = min(first, key=lambda r: r["id"])
    orders = page.eval("[...document.querySelectorAll('.detail .judge table tbody tr')]"
                       ".map(r => r.children[1].textContent)")
    assert orders == [c["shown_first"] for j in first["judgements"] for c in j["calls"]]
    assert sorted(orders) == ["x", "x", "y", "y"]  # two judges, each shown both orders
    assert page.eval("document.querySelector('.detail').textContent").count("Response of") == 2
    assert_clean(page, path)


def test_a_link_to_a_sample_opens_it(runs, browser):
    path = runs["eve"] / "view" / "index.html"
    page = browser.page()
    page.goto(path.as_uri() + "#open_ended/12")
    assert page.eval("document.querySelector('button.task-tab.active').dataset.task") == "open_ended"
    assert page.eval("document.querySelector('tr.sample-row.open').dataset.id") == "12"
    assert page.errors() == []
