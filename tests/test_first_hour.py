"""Issue 17, "the first hour": what a new user hits in the default run, a sweep, a resume and a report."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    EVE_SAMPLE,
    JUDGE_CORRECT,
    ROOT,
    cli,
    compose,
    fake_model_overrides,
    one_line_error,
    read_jsonl,
    run_in_process,
    run_overrides,
)

from runner.run.invocations import INVOCATIONS, Invocation, merge_usage

WIN_RATE = ROOT / "tests" / "fixtures" / "win_rate"


def judge_reply(body: dict[str, Any]) -> str:
    """Judges pass everything; pairwise judges prefer the response shown first; MCQ answers are B."""
    text = body["messages"][-1]["content"]
    if '"winner"' in text:
        return '{"winner": "A", "explanation": "first"}'
    if "judgement" in text or "grounded" in text:
        return JUDGE_CORRECT if "grounded" not in text else '{"grounded": "yes", "explanation": "ok"}'
    return "Answer: B"


def base(url: str, run_dir: Path, *extra: str) -> list[str]:
    return run_overrides(url, run_dir, *extra, benchmark=None, data_dir=None)  # the default benchmark


# --- 2. the report over a folder holding every benchmark ------------------------------------------

def test_report_over_a_folder_with_every_benchmark_names_every_run_and_exits_0(fake_llm, tmp_path):
    fake_llm.default = judge_reply
    runs = tmp_path / "runs"
    panel = fake_model_overrides(fake_llm.base_url)[-2]
    eve = cli(base(fake_llm.base_url, runs / "eve", "benchmark.limit=2",
                   "benchmark.tasks=[mcqa_single_answer,open_ended]"))
    vakra = cli(["benchmark=vakra", panel, "tracker=none", "progress=false", "cache.enabled=false",
                 "benchmark.domains=[weather]", f"hydra.run.dir={runs / 'vakra'}"])
    win = cli(["benchmark=win_rate", panel, "tracker=none", "progress=false", "cache.enabled=false",
               f"benchmark.model_a=[{{name:x,file:{WIN_RATE / 'model_x.csv'}}}]",
               f"benchmark.model_b=[{{name:y,file:{WIN_RATE / 'model_y.csv'}}}]", f"hydra.run.dir={runs / 'wr'}"])
    for proc in (eve, vakra, win):
        assert proc.returncode == 0, proc.stderr[-2000:]
    mugen_preds = _mugen_predictions(tmp_path / "preds")
    mugen = cli(["benchmark=mugen", panel, "tracker=none", "progress=false", "cache.enabled=false",
                 f"benchmark.prediction_dir={mugen_preds}", f"hydra.run.dir={runs / 'mugen'}"])
    assert mugen.returncode == 0, mugen.stderr[-2000:]

    report = cli([str(runs)], module="runner.report")
    assert report.returncode == 0, report.stderr
    assert "Traceback" not in report.stderr
    with open(runs / "report" / "comparison.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert {r["benchmark"] for r in rows} == {"eve", "vakra", "win_rate", "mugen"}
    assert all(r["model"] for r in rows), "every row names its run"
    by_bench = {r["benchmark"]: r["model"] for r in rows}
    assert by_bench["eve"] == "fake-model" and by_bench["vakra"] == "vakra" and by_bench["win_rate"] == "wr"
    md = (runs / "report" / "comparison.md").read_text()
    cost = {line.split("|")[1].strip(): line for line in md.splitlines() if line.startswith("| ")
            and line.count("|") == 9}
    # a judge-only run has no model under test: no model cost at all, not a cost of 0
    assert "| vakra | vakra | — |" in cost["vakra"] and "| wr | win_rate | — |" in cost["wr"]


def _mugen_predictions(folder: Path) -> Path:
    task = folder / "Keyword_Spotting"
    task.mkdir(parents=True)
    (task / "output.json").write_text(json.dumps([
        {"id": 0, "instruction": "Which clip says 'yes'?", "answer": "(A)", "response": "(A)"},
        {"id": 1, "instruction": "Which clip says 'no'?", "answer": "(B)", "response": "(C)"}]))
    return folder


# --- 3. a sweep over one model entry: jobs and columns told apart by what was swept -----------------

def test_sweeping_the_readmes_example_names_jobs_and_columns_by_what_was_swept(fake_llm, tmp_path):
    fake_llm.default = judge_reply
    sweep = tmp_path / "sweep"
    panel = fake_model_overrides(fake_llm.base_url)[-2]
    proc = cli(["-m", "model=openai-compatible", "model.model=openai/alpha,openai/beta",
                f"model.api_base={fake_llm.base_url}", "model.api_key=k", panel, "tracker=none",
                "benchmark.limit=2", "benchmark.tasks=[mcqa_single_answer]", "cache.enabled=false",
                f"hydra.sweep.dir={sweep}"], timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert sorted(p.name for p in sweep.iterdir() if (p / "results.json").exists()) == \
        ["0_openai-alpha", "1_openai-beta"]
    with open(sweep / "report" / "comparison.csv", newline="") as fh:
        models = {r["model"] for r in csv.DictReader(fh)}
    assert models == {"openai-compatible (model.model=openai/alpha)", "openai-compatible (model.model=openai/beta)"}
    header = (sweep / "report" / "comparison.md").read_text().splitlines()[2]
    assert "openai-compatible (model.model=openai/alpha) | openai-compatible (model.model=openai/beta)" in header


# --- 4. the embedded model's calls hit the cache across runs ------------------------------------------

@pytest.mark.slow
def test_the_embedded_models_replies_come_from_the_cache_in_a_second_run(tmp_path):
    args = ["tracker=none", "progress=false", "benchmark.limit=2", "benchmark.tasks=[mcqa_single_answer]",
            f"cache.dir={tmp_path / 'cache'}"]
    first = cli([*args, f"hydra.run.dir={tmp_path / 'a'}"], timeout=600)
    second = cli([*args, f"hydra.run.dir={tmp_path / 'b'}"], timeout=600)
    assert first.returncode == 0 and second.returncode == 0, second.stderr[-2000:]
    one, two = (json.loads((tmp_path / d / "results.json").read_text())["usage"]["smollm2-135m"] for d in "ab")
    assert (one["requests"], one["cached_requests"]) == (2, 0)
    # the server listened on another port, but the cache knows it by what it serves
    assert (two["requests"], two["cached_requests"]) == (0, 2)
    # records are appended in completion order: pair them by id
    a, b = ({r["id"]: r["fingerprint"] for r in read_jsonl(tmp_path / d / "samples" / "mcqa_single_answer.jsonl")}
            for d in "ab")
    assert a == b and len(a) == 2


def test_the_cache_and_fingerprints_know_the_embedded_server_by_what_it_serves_not_its_port():
    from runner.run.build import build

    cfg = compose(["tracker=none", "benchmark.tasks=[mcqa_single_answer]", "cache.enabled=false"])
    built = build(cfg, Path("/tmp/unused"))
    model = built.model
    assert model is not None and model.origin and model.origin.startswith("embedded:")
    keys = []
    for port in (40001, 40002):  # the address the server gets in two runs
        model.api_base = f"http://127.0.0.1:{port}/v1"
        keys.append((model.identity(model.request([{"role": "user", "content": "q"}])), model.describe()))
    assert keys[0] == keys[1]
    assert built.demo == ["smollm2-135m"]  # the model is the demo model; no judged task, no judge


# --- 5. a resumed run's usage, cost and duration add up over its invocations ------------------------

def test_usage_cost_and_duration_add_up_over_every_invocation_after_a_resume(fake_llm, tmp_path):
    fake_llm.default = judge_reply
    run_dir = tmp_path / "run"
    overrides = base(fake_llm.base_url, run_dir, "benchmark.tasks=[open_ended]",
                     "model.pricing={input_per_mtok:1.0,output_per_mtok:2.0}",
                     "judges.panel.0.pricing={input_per_mtok:1.0,output_per_mtok:2.0}")
    first = run_in_process([*overrides, "benchmark.limit=2"], run_dir)
    second = run_in_process([*overrides, "benchmark.limit=5"], run_dir)  # resumes: 3 new samples
    lines = [json.loads(x) for x in (run_dir / INVOCATIONS).read_text().splitlines()]
    assert [x["outcome"] for x in lines] == ["ok", "ok"]
    records = read_jsonl(run_dir / "samples" / "open_ended.jsonl")
    assert len(records) == 5
    prompt = sum(r["usage"]["model"]["prompt_tokens"] for r in records)
    completion = sum(r["usage"]["model"]["completion_tokens"] for r in records)
    usage = second["usage"]["fake-model"]
    assert (usage["requests"], usage["prompt_tokens"], usage["completion_tokens"]) == (5, prompt, completion)
    assert usage["cost_usd"] == pytest.approx(prompt * 1e-6 + completion * 2e-6)
    assert second["usage"]["judge1"]["requests"] == 5
    assert first["usage"]["fake-model"]["requests"] == 2
    assert second["totals"]["requests"] == 10
    assert second["run"]["invocations"] == 2
    assert second["run"]["duration_s"] == pytest.approx(sum(x["duration_s"] for x in lines), abs=1e-3)
    assert second["run"]["started"] == lines[0]["started"]


def test_invocation_usage_merges_counts_and_keeps_an_unknown_price_unknown(tmp_path):
    merged = merge_usage([{"m": {"role": "model", "requests": 2, "cost_usd": 0.5, "served_models": ["a"]}},
                          {"m": {"role": "model", "requests": 3, "cost_usd": None, "served_models": ["b"]}},
                          {"m": {"role": "model", "requests": 1, "cost_usd": 0.25, "served_models": ["a"]}}])
    assert merged == {"m": {"role": "model", "requests": 6, "cost_usd": None, "served_models": ["a", "b"]}}
    Invocation(tmp_path).record({"m": {"requests": 1}}, "interrupted")
    usage, run = Invocation(tmp_path).record({"m": {"requests": 2}}, "ok")
    assert usage == {"m": {"requests": 3}} and run["invocations"] == 2


def test_rescore_write_updates_the_summary_with_the_tasks(fake_llm, tmp_path):
    fake_llm.default = judge_reply
    run_dir = tmp_path / "run"
    run_in_process(base(fake_llm.base_url, run_dir, "benchmark.limit=4",
                        "benchmark.tasks=[mcqa_single_answer,mcqa_multiple_answers]"), run_dir)
    path = run_dir / "samples" / "mcqa_single_answer.jsonl"
    records = read_jsonl(path)
    for r in records:  # edited by hand: every answer right
        r["scores"]["accuracy"] = 1.0
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    proc = cli([str(run_dir), "--write"], module="runner.rescore")
    assert proc.returncode == 0, proc.stderr
    results = json.loads((run_dir / "results.json").read_text())
    iou = results["tasks"]["mcqa_multiple_answers"]["metrics"]["iou"]
    # the headline of a task is its first metric (iou for multiple answers, as the report's chart plots)
    assert results["summary"]["headline"] == {"mcqa_single_answer": 1.0, "mcqa_multiple_answers": iou}
    assert results["summary"]["macro_avg"] == pytest.approx((1.0 + iou) / 2)


def test_the_report_chart_plots_each_tasks_headline_metric():
    from runner.outputs.charts import headline_metrics

    rows = [{"benchmark": "eve", "task": "mcqa_multiple_answers", "metric": m, "value": v}
            for m, v in (("iou", 0.4), ("accuracy", 0.1))]
    rows += [{"benchmark": "eve", "task": "hallucination_detection", "metric": m, "value": 0.5}
             for m in ("f1", "accuracy")]
    rows += [{"benchmark": "vakra", "task": "weather", "metric": "num_samples", "value": 4}]
    assert headline_metrics(rows) == {"eve/mcqa_multiple_answers": "iou", "eve/hallucination_detection": "f1"}


# --- 8. a '+key' under the runner's schema is refused ----------------------------------------------

def test_a_plus_key_of_the_runners_schema_is_refused_before_anything_runs(tmp_path):
    proc = cli(["+model.concurency=3", f"hydra.run.dir={tmp_path / 'run'}"], timeout=60)
    assert proc.returncode == 2
    line = one_line_error(proc)
    assert "model.concurency" in line and "did you mean model.concurrency" in line
    assert not (tmp_path / "run").exists()


# --- 9. MUGEN: fail fast offline, and no text-only embedded model -----------------------------------

def test_mugen_from_the_hub_while_offline_fails_at_once_pointing_at_its_own_fixture(fake_llm, tmp_path):
    proc = cli(base(fake_llm.base_url, tmp_path / "run", "benchmark=mugen", "benchmark.tasks=[Keyword_Spotting]"),
               env={"HF_HUB_OFFLINE": "1"}, timeout=60)
    assert proc.returncode == 2
    line = one_line_error(proc)
    assert "python -m runner.benchmarks.mugen.fixture DIR" in line and "eve_sample" not in line
    assert "Retrying" not in proc.stdout + proc.stderr
    assert fake_llm.count == 0


def test_mugen_with_the_embedded_text_only_model_is_refused_up_front(tmp_path):
    proc = cli(["benchmark=mugen", "model=local", "benchmark.tasks=[Keyword_Spotting]", "tracker=none",
                f"hydra.run.dir={tmp_path / 'run'}"], timeout=60)
    assert proc.returncode == 2
    line = one_line_error(proc)
    assert "text only" in line and "model=gpt-4o-audio-preview" in line


# --- 1. the demo says it is a demo ----------------------------------------------------------------

def test_the_demo_panel_asks_its_own_rubrics_without_a_json_schema_and_others_keep_theirs():
    from runner.run.build import build

    cfg = compose(["tracker=none", "cache.enabled=false"])
    built = build(cfg, Path("/tmp/unused"))
    judged = {t.name: t.scorers["judges"] for t in built.tasks if "judges" in getattr(t, "scorers", {})}
    assert {n: (s.spec, s.structured) for n, s in judged.items()} == {
        "open_ended": ("judge_fact_check_small.j2", False),
        "open_ended_w_context": ("judge_fact_check_small.j2", False), "refusal": ("judge_refusal_small.j2", False)}
    assert sorted(built.demo) == ["smollm2-135m", "smollm2-judge"]
    grammar = built.panel.judges[0].params["extra_body"]["grammar"]
    assert '"The"' in grammar and '"No"' in grammar
    real = build(compose(["tracker=none", "cache.enabled=false", "model=gpt-4o-mini", "judges=one"]),
                 Path("/tmp/unused"))
    assert {t.name: t.scorers["judges"].spec for t in real.tasks if "judges" in getattr(t, "scorers", {})} == {
        "open_ended": "judge_fact_check.j2", "open_ended_w_context": "judge_fact_check.j2",
        "refusal": "judge_refusal.j2"}
    assert real.demo == []


def test_a_demo_run_says_so_in_results_and_under_the_table(capsys):
    from runner.outputs.display import Display

    Display(enabled=False).table({"benchmark": "eve", "model": "smollm2-135m", "judges": ["smollm2-judge"],
                                  "demo": True, "demo_endpoints": ["smollm2-135m", "smollm2-judge"],
                                  "tasks": {"refusal": {"n": 2, "metrics": {"judge_voting": 0.5}}}})
    out = capsys.readouterr().out
    assert "model smollm2-135m (demo)" in out and "judges smollm2-judge (demo)" in out
    assert "DEMO: smollm2-135m, smollm2-judge = the embedded SmolLM2-135M model" in out


def test_a_real_model_run_is_no_demo(fake_llm, tmp_path):
    fake_llm.default = judge_reply
    results = run_in_process(base(fake_llm.base_url, tmp_path / "run", "benchmark.limit=1",
                                  "benchmark.tasks=[mcqa_single_answer]"), tmp_path / "run")
    assert results["demo"] is False and results["demo_endpoints"] == []


@pytest.mark.slow
def test_the_embedded_judge_tells_a_refusal_from_an_answer(tmp_path):
    """Three replies to refusal questions of the bundled sample, through the embedded judge's own rubric and
    grammar: a decline passes, invented answers fail (docs/performance.md has the full measurement)."""
    data = tmp_path / "data"
    data.mkdir()
    rows = [json.loads(x) for x in (EVE_SAMPLE / "refusal.jsonl").read_text().splitlines()][:3]
    (data / "refusal.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    from runner.run.app import run

    src = tmp_path / "src"
    (src / "samples").mkdir(parents=True)
    replies = ["I don't know.", "Sentinel-1C was launched on 2018-01-01.",
               "The swath width of the Landsat 9 OLI-2 instrument is 2.5 meters."]
    (src / "samples" / "refusal.jsonl").write_text("".join(json.dumps(
        {"id": i, "task": "refusal", "status": "ok", "response": text, "model": "smollm2-135m"}) + "\n"
        for i, text in enumerate(replies)))
    cfg = compose(["tracker=none", "progress=false", f"benchmark.data_dir={data}", "benchmark.tasks=[refusal]",
                   f"rejudge={src}", f"cache.dir={tmp_path / 'cache'}"])
    results = run(cfg, tmp_path / "run")
    verdicts = {r["id"]: r["judgements"][0]["verdict"] for r in read_jsonl(tmp_path / "run" / "samples" /
                                                                             "refusal.jsonl")}
    assert verdicts == {0: "correct", 1: "incorrect", 2: "incorrect"}
    assert results["demo"] is True
