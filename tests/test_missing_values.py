"""Missing per-sample values (issue 41): a record without a value of a metric (a judge reply that did not parse, a
score a scorer gives only sometimes, a dialogue without a prediction, a pairwise judge that gave no verdict) is
left out of that metric's mean and counted in `n_missing`, in every position (first record, last, all, none),
with epochs and reducers; and a task whose aggregation fails loses no other task's results (exit 1, named).

Expected values are worked out by hand in each test's comments."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import TESTS, cli, compose, read_jsonl, run_overrides
from fake_llm import FakeLLM

from runner.config import allow_code, instantiate
from runner.metrics.named import Mean, Median
from runner.metrics.results import task_result
from runner.metrics.uncertainty import scored_result, wilson95

USER_PKG = TESTS / "fixtures" / "user_pkg"
BENCH = TESTS / "fixtures" / "yaml_bench"
OK, BAD, INVALID = "correct", "incorrect", None  # a judge's verdict; None: its reply did not parse


def eve_task(name: str, *overrides: str) -> Any:
    cfg = compose(["benchmark=eve", f"benchmark.tasks=[{name}]", *overrides])
    task = instantiate(cfg.benchmark, "benchmark").build_tasks()[0]
    task.prepare([])
    return task


def judged_record(sid: int, verdicts: list[str | None], epoch: int = 0) -> dict[str, Any]:
    """An open_ended record as a run writes it: one judgement per judge (judge1..), invalid where None."""
    judgements = [{"judge": f"judge{i + 1}", "status": "ok" if v else "invalid", "verdict": v,
                   "score": None if v is None else int(v == OK), "explanation": "", "raw": v or "no verdict here"}
                  for i, v in enumerate(verdicts)]
    return {"id": sid, "epoch": epoch, "task": "open_ended", "response": "r", "reference": "g",
            "status": "ok" if all(verdicts) else "invalid", "judgements": judgements, "scores": {}}


# Four samples judged by three judges (pass = 1 for `correct`, an invalid reply counts as a fail):
#   s0 [c, c, c] passes 1 1 1, all agree                   vote 1
#   s1 [c, i, c] passes 1 0 1, disagree                    vote 1
#   s2 [-, -, -] passes 0 0 0, no parsed verdict: agreement has no value here
#   s3 [c, -, -] passes 1 0 0, a parsed verdict, no agreement (1 vs 0 0)   vote 0
PANEL = {0: [OK, OK, OK], 1: [OK, BAD, OK], 2: [INVALID] * 3, 3: [OK, INVALID, INVALID]}
PANEL_EXPECTED = {"llm_as_judge_judge1": 3 / 4, "llm_as_judge_judge2": 1 / 4, "llm_as_judge_judge3": 2 / 4,
                  "llm_as_judge_avg": (1 + 2 / 3 + 0 + 1 / 3) / 4, "judge_voting": 2 / 4,
                  "judge_agreement": 1 / 3}  # over s0, s1, s3: 1, 0, 0

ORDERS = {"unparsed first": [2, 0, 1, 3], "unparsed in the middle": [0, 1, 2, 3], "unparsed last": [0, 1, 3, 2]}


@pytest.mark.parametrize("order", list(ORDERS.values()), ids=list(ORDERS))
def test_a_three_judge_panel_with_a_sample_no_judge_parsed_in_any_position(order: list[int]) -> None:
    task = eve_task("open_ended")
    records = [judged_record(i, PANEL[i]) for i in order]
    result = scored_result(task, records, n_boot=200, seed=0)
    assert result.failed is None
    assert result.metrics == pytest.approx(PANEL_EXPECTED)
    assert result.n_missing == {"judge_agreement": 1}
    assert (result.n, result.n_invalid, sorted(result.invalid_ids)) == (4, 2, [2, 3])
    # Wilson over the three samples that have an agreement value (1 of 3), not over four.
    assert result.ci["judge_agreement"] == pytest.approx(list(wilson95(1, 3)))
    assert result.ci["judge_voting"] == pytest.approx(list(wilson95(2, 4)))
    # Standard error of agreement over its three values 1, 0, 0: sd = sqrt(1/3), / sqrt(3) = 1/3.
    assert result.stderr["judge_agreement"] == pytest.approx(1 / 3)


@pytest.mark.parametrize("judges", [1, 3])
def test_no_parsed_verdict_at_all_leaves_agreement_null_and_the_rest_zero(judges: int) -> None:
    task = eve_task("open_ended")
    result = scored_result(task, [judged_record(i, [INVALID] * judges) for i in range(3)], n_boot=200, seed=0)
    assert result.metrics["judge_agreement"] is None and result.ci["judge_agreement"] is None
    assert result.metrics["llm_as_judge_avg"] == 0.0 and result.metrics["judge_voting"] == 0.0
    assert result.n_missing == {"judge_agreement": 3} and result.n_invalid == 3
    assert "judge_agreement" not in result.reliable


def test_every_verdict_parsed_counts_nothing_missing() -> None:
    result = scored_result(eve_task("open_ended"), [judged_record(i, [OK]) for i in range(3)], n_boot=200, seed=0)
    assert result.n_missing == {} and result.metrics["judge_agreement"] == 1.0


def test_one_judge_one_unparsed_reply_among_three_is_the_issue_case() -> None:
    # The issue's run: one judge, three samples, the second reply unparseable. Passes 1, 0, 1; agreement is
    # defined on the two parsed samples (one judge always agrees with itself).
    records = [judged_record(i, v) for i, v in enumerate([[OK], [INVALID], [OK]])]
    result = scored_result(eve_task("open_ended"), records, n_boot=200, seed=0)
    assert result.metrics == pytest.approx({"judge_voting": 2 / 3, "llm_as_judge_judge1": 2 / 3,
                                            "llm_as_judge_avg": 2 / 3, "judge_agreement": 1.0})
    assert result.n_missing == {"judge_agreement": 1} and result.invalid_ids == [1]


@pytest.mark.parametrize("reducer", ["mean", "max", "min"])
def test_epochs_reduce_only_the_epochs_that_have_a_value(reducer: str) -> None:
    # Two judges, two epochs. Agreement per epoch (None: no parsed verdict):
    #   s0: epoch 0 [c, c] -> 1, epoch 1 [c, i] -> 0          mean 1/2, max 1, min 0
    #   s1: epoch 0 [-, -] -> None, epoch 1 [c, c] -> 1       1 whatever the reducer (one epoch has a value)
    #   s2: epoch 0 [-, -] -> None, epoch 1 [-, -] -> None    missing
    task = eve_task("open_ended", f"benchmark.specs.open_ended.reducer={reducer}")
    records = [judged_record(0, [OK, OK], 0), judged_record(1, [INVALID, INVALID], 0),
               judged_record(2, [INVALID, INVALID], 0), judged_record(2, [INVALID, INVALID], 1),
               judged_record(1, [OK, OK], 1), judged_record(0, [OK, BAD], 1)]
    result = scored_result(task, records, n_boot=200, seed=0, epochs=2)
    s0 = {"mean": 0.5, "max": 1.0, "min": 0.0}[reducer]
    assert result.metrics["judge_agreement"] == pytest.approx((s0 + 1.0) / 2)
    assert result.n_missing == {"judge_agreement": 1}  # samples, not records
    # judge1 passes: s0 (1, 1), s1 (0, 1), s2 (0, 0) -> per sample by the reducer, then the mean over 3 samples.
    judge1 = {"mean": (1 + 0.5 + 0) / 3, "max": (1 + 1 + 0) / 3, "min": (1 + 0 + 0) / 3}[reducer]
    assert result.metrics["llm_as_judge_judge1"] == pytest.approx(judge1)
    assert result.by_epoch is not None
    assert result.by_epoch["judge_agreement"] == pytest.approx([1.0, 0.5])  # epoch 0: s0 only; epoch 1: s0, s1


# ------------------------------------------------------------------------- a score given only sometimes


def scored(sid: Any, epoch: int = 0, **scores: float | None) -> dict[str, Any]:
    return {"id": sid, "epoch": epoch, "status": "ok", "scores": scores}


@pytest.mark.parametrize("missing_at", [[0], [3], [1, 2], [], [0, 1, 2, 3]],
                         ids=["first", "last", "middle", "none", "all"])
def test_mean_and_median_of_a_score_given_only_sometimes(missing_at: list[int]) -> None:
    values = [1.0, 0.0, 0.5, 1.0]
    records = [scored(i, short=1.0) if i in missing_at else scored(i, short=1.0, confident=v)
               for i, v in enumerate(values)]
    if missing_at == [1, 2]:  # a null and an absent key are the same: no value
        records[1]["scores"]["confident"] = None
    given = [v for i, v in enumerate(values) if i not in missing_at]
    mean, median = Mean("confident"), Median("confident")
    expected = sum(given) / len(given) if given else None
    assert mean.compute(records) == {"confident": pytest.approx(expected) if given else None}
    middle = sorted(given)
    want = None if not given else (middle[len(middle) // 2] if len(middle) % 2 else
                                   (middle[len(middle) // 2 - 1] + middle[len(middle) // 2]) / 2)
    assert median.compute(records) == {"median_confident": want}
    result = task_result(records, lambda ok: {**mean.compute(ok), **Mean("short").compute(ok)},
                         zero={"confident": 0.0, "short": 0.0},
                         per_sample=lambda r: {**mean.per_sample(r), **Mean("short").per_sample(r)})
    assert result.metrics["short"] == 1.0 and result.metrics["confident"] == expected
    assert result.n_missing == ({"confident": len(missing_at)} if missing_at else {})


def test_a_user_scorer_that_gives_a_score_sometimes_is_scored_with_epochs(tmp_path: Path) -> None:
    # arithmetic with the user's Confident scorer: `confident` only on replies that name a number. Two epochs;
    # the fake server names a number on epoch 0 only for "2 + 2" and on both epochs for "7 * 6".
    def reply(body: dict[str, Any]) -> str:
        question, seed = body["messages"][-1]["content"], body.get("seed") or 0
        if "2 + 2" in question:
            return "4" if seed == 0 else "no idea"
        if "7 * 6" in question:
            return "maybe 42" if seed == 0 else "42"
        return "no idea"
    sys.path.insert(0, str(USER_PKG))
    try:
        with FakeLLM(default=reply) as srv:
            args = run_overrides(srv.base_url, tmp_path / "run", f"hydra.searchpath=[file://{BENCH / 'conf'}]",
                                 "allow_code=[my_scorers]", "epochs=2", "judges=none",
                                 "benchmark.specs.arithmetic.scorers=[{_target_:my_scorers.Confident}]",
                                 "benchmark.specs.arithmetic.num_fewshot=0", benchmark="arith",
                                 data_dir=BENCH / "data", judges=0)
            proc = cli(args, env={"PYTHONPATH": str(USER_PKG)})
    finally:
        sys.path.remove(str(USER_PKG))
        allow_code([])
    assert proc.returncode == 0, proc.stderr[-2000:]
    block = json.loads((tmp_path / "run" / "results.json").read_text())["tasks"]["arithmetic"]
    records = read_jsonl(tmp_path / "run" / "samples" / "arithmetic.jsonl")
    n = len({r["id"] for r in records})
    # Per sample (mean over its epochs that have a value): "2 + 2" 1 (epoch 0 only), "7 * 6" (0 + 1) / 2;
    # every other sample has no value in either epoch.
    assert block["metrics"]["confident"] == pytest.approx((1 + 0.5) / 2)
    assert block["n_missing"] == {"confident": n - 2}
    assert all("confident" in r["scores"] or r["response"] == "no idea" for r in records)
    rescored = cli(["rescore", str(tmp_path / "run")], env={"PYTHONPATH": str(USER_PKG)})
    assert rescored.returncode == 0, rescored.stderr
    assert json.loads(rescored.stdout)["arithmetic"]["metrics"] == block["metrics"]


# --------------------------------------------------------------------------- VAKRA and win rate


def test_a_vakra_dialogue_without_a_prediction_has_no_value_of_the_domain_mean() -> None:
    from runner.benchmarks.vakra.task import DomainTask

    task = DomainTask("library")  # only its scoring: bound to no files, so it pairs nothing extra
    task.pairing = lambda: {}  # type: ignore[method-assign]
    missing = {"id": "m", "status": "ok", "scores": {"dialogue_score": 0.0}, "extra": {"missing_prediction": True}}
    records = [missing, scored("a", dialogue_score=1.0), scored("b", dialogue_score=0.0),
               scored("c", dialogue_score=1.0)]
    for order in (records, records[1:] + records[:1]):
        result = scored_result(task, order, n_boot=200, seed=0)
        assert result.metrics["mean_dialogue_score"] == pytest.approx(2 / 3)  # over the three paired
        assert result.n_missing == {"mean_dialogue_score": 1}
        assert result.ci["mean_dialogue_score"] == pytest.approx(list(wilson95(2, 3)))


def test_a_pairwise_judge_without_a_verdict_gives_null_credit_not_zero() -> None:
    from runner.benchmarks.win_rate.metrics import pairwise_metrics

    def rec(sid: int, verdicts: list[str | None]) -> dict[str, Any]:
        return {"id": sid, "status": "ok", "judgements": [
            {"judge": f"j{i}", "status": "ok" if v else "invalid", "verdict": v,
             "calls": [{"shown_first": "x", "verdict": v}] if v else []} for i, v in enumerate(verdicts)]}
    # j0: x, tie, (invalid) -> 1 win of 2 valid; j1: y, y, x -> x 1 of 3.
    records = [rec(0, ["x", "y"]), rec(1, ["tie", "y"]), rec(2, [None, "x"])]
    for order in (records, records[::-1]):
        m = pairwise_metrics(order, ["j0", "j1"], "x", "y")
        assert m["win_rate/j0/x"] == 1 / 2 and m["win_rate/j0/tie"] == 1 / 2 and m["win_rate/j1/x"] == 1 / 3
        assert m["aggregate/x_win_rate"] == pytest.approx(2 / 5)  # wins over valid judgements, pooled
        assert m["judge_agreement"] == 0.0  # over the two samples both judged: s0 x/y, s1 tie/y
    assert pairwise_metrics([rec(0, [None, None])], ["j0", "j1"], "x", "y")["judge_agreement"] is None


# ---------------------------------------------------------------------- end to end, against the fake server

KEYWORDS = {5: "radiometric", 6: "LiDAR", 7: "GNSS"}
"""open_ended's first three samples (ids 5-7 of EVE's bundled sample) by a word of their question."""


def panel_server(verdicts: dict[tuple[int, int], list[str | None]]) -> Any:
    """A fake-server reply: the model says which seed it was asked with; judge k gives verdicts[(id, seed)][k]
    (None: a reply with no verdict in it), `correct` for anything not listed."""
    def reply(body: dict[str, Any]) -> str:
        model = str(body.get("model"))
        if not model.startswith("judge"):
            return f"An answer, seed {body.get('seed') or 0}."
        text = json.dumps(body["messages"])
        sid = next(i for i, word in KEYWORDS.items() if word in text)
        seed = int(re.search(r"seed (\d+)", text).group(1))  # type: ignore[union-attr]
        given = verdicts.get((sid, seed), [OK] * 3)[int(model.removeprefix("judge")) - 1]
        return "I cannot decide." if given is None else json.dumps({"judgement": given, "explanation": "e"})
    return reply


@pytest.mark.parametrize("bad", [[5], [6], [7], [], [5, 6, 7]], ids=["5", "6", "7", "none", "all"])
def test_a_one_judge_run_with_unparsed_verdicts_writes_its_results(tmp_path: Path, bad: list[int]) -> None:
    verdicts = {(sid, 0): [None] for sid in bad}
    with FakeLLM(default=panel_server(verdicts)) as srv:
        proc = cli(run_overrides(srv.base_url, tmp_path / "run", tasks=["open_ended"], limit=3))
    assert proc.returncode == 0, proc.stderr[-2000:]
    m = json.loads((tmp_path / "run" / "results.json").read_text())["tasks"]["open_ended"]
    good = 3 - len(bad)
    assert m["metrics"]["llm_as_judge_judge1"] == pytest.approx(good / 3)
    assert m["metrics"]["judge_agreement"] == (1.0 if good else None)
    assert m["n_missing"] == ({"judge_agreement": len(bad)} if bad else {})
    assert sorted(m["invalid_ids"]) == bad


def test_three_judges_epochs_workers_resume_and_rescore_agree(tmp_path: Path) -> None:
    # Epoch seeds 0 and 1. Sample 5: no judge parses in epoch 0, all agree in epoch 1 -> agreement 1.
    # Sample 6: no judge parses in either epoch -> no agreement value. Sample 7: epoch 0 all correct (1),
    # epoch 1 [c, i, -] (0) -> 1/2. Agreement: (1 + 1/2) / 2 samples.
    verdicts: dict[tuple[int, int], list[str | None]] = {
        (5, 0): [None] * 3, (6, 0): [None] * 3, (6, 1): [None] * 3, (7, 1): [OK, BAD, None]}
    run_dir = tmp_path / "run"
    with FakeLLM(default=panel_server(verdicts)) as srv:
        args = run_overrides(srv.base_url, run_dir, "epochs=2", "workers=2", judges=3, tasks=["open_ended"],
                             limit=3)
        first = cli(args)
        sent = srv.count
        again = cli(args)  # everything is finished: a resume asks nothing and writes the same figures
        assert srv.count == sent
    assert first.returncode == 0 and again.returncode == 0, first.stderr[-2000:] + again.stderr[-2000:]
    block = json.loads((run_dir / "results.json").read_text())["tasks"]["open_ended"]
    assert block["metrics"]["judge_agreement"] == pytest.approx(0.75)
    assert block["n_missing"] == {"judge_agreement": 1}
    # judge2's passes per sample (mean over epochs): 5 (0, 1) 1/2, 6 (0, 0) 0, 7 (1, 0) 1/2.
    assert block["metrics"]["llm_as_judge_judge2"] == pytest.approx(1 / 3)
    assert block["judge_stats"]["n"] == 2  # samples with a valid verdict from every judge in some epoch
    rescored = cli(["rescore", str(run_dir)])
    assert rescored.returncode == 0, rescored.stderr
    assert json.loads(rescored.stdout)["open_ended"] == block


# ------------------------------------------------------------------ a failure in one task loses no other


def two_task_benchmark(tmp_path: Path) -> tuple[Path, Path]:
    """A user's benchmark of two YAML tasks on the same arithmetic rows: `plain` (numeric) and `mine`, scored
    by the user's Confident scorer and aggregated by their own ConfidentShare, which fails on a record without
    `confident` (KeyError)."""
    conf, data = tmp_path / "conf" / "benchmark", tmp_path / "data"
    conf.mkdir(parents=True)
    data.mkdir()
    for name in ("plain", "mine"):
        shutil.copy(BENCH / "data" / "arithmetic.jsonl", data / f"{name}.jsonl")
    spec = ("    _target_: runner.tasks.task.Task\n    fields: {input: question, target: answer}\n"
            "    solver: {_target_: runner.solvers.chat.Chat, user: '{{ question }}'}\n")
    (conf / "pair.yaml").write_text(
        "_target_: runner.benchmarks.base.Benchmark\nname: pair\ndata_dir: null\nlimit: null\ntasks: null\n"
        "num_fewshot: null\nspecs:\n  plain:\n" + spec + "    scorers: [{_target_: runner.scorers.numeric.Numeric}]\n"
        "  mine:\n" + spec + "    scorers: [{_target_: my_scorers.ConfidentShared}]\n", encoding="utf-8")
    return tmp_path / "conf", data


def test_a_task_whose_aggregation_fails_loses_no_other_tasks_results(tmp_path: Path) -> None:
    conf, data = two_task_benchmark(tmp_path)
    run_dir = tmp_path / "run"

    def reply(body: dict[str, Any]) -> str:
        return "4" if "2 + 2" in body["messages"][-1]["content"] else "I am not sure"
    env = {"PYTHONPATH": str(USER_PKG)}
    with FakeLLM(default=reply) as srv:
        args = run_overrides(srv.base_url, run_dir, f"hydra.searchpath=[file://{conf}]", "allow_code=[my_scorers]",
                             benchmark="pair", data_dir=data, judges=0,
                             tracker="wandb")
        proc = cli(args, env=env)
        sent = srv.count
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    line = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert len(line) == 1 and "mine (KeyError: 'confident')" in line[0], proc.stderr[-2000:]
    assert "the other tasks' results are in" in line[0] and "runner rescore" in line[0]
    assert re.search(r"mine\s*│\s*\(failed\)", proc.stdout), proc.stdout  # the table names it where its rows would be
    results = json.loads((run_dir / "results.json").read_text())
    plain, mine = results["tasks"]["plain"], results["tasks"]["mine"]
    rows = read_jsonl(data / "plain.jsonl")
    assert plain["metrics"]["accuracy"] == pytest.approx(1 / len(rows)) and "failed" not in plain
    assert mine["failed"] == "KeyError: 'confident'" and mine["metrics"] == {} and mine["n"] == len(rows)
    assert results["summary"]["tasks_failed"] == ["mine"] and results["summary"]["headline"] == {
        "plain": plain["metrics"]["accuracy"]}
    assert sent == 2 * len(rows)
    # rescore names the failure the same way and keeps the other task; the viewer draws both.
    rescored = cli(["rescore", str(run_dir)], env=env)
    assert rescored.returncode == 1 and "mine" in rescored.stderr, rescored.stderr
    assert json.loads(rescored.stdout)["plain"]["metrics"] == plain["metrics"]
    view = cli(["view", str(run_dir)], env=env)
    assert view.returncode == 0, view.stderr
    assert "KeyError" in (run_dir / "view" / "index.html").read_text(encoding="utf-8")



def test_n_missing_counts_samples_with_epochs_even_where_no_sample_has_a_value() -> None:
    # Two judges, three samples, two epochs, no parsed verdict anywhere: agreement has no value in any sample.
    # n_missing counts the 3 samples, not the 6 records.
    records = [judged_record(i, [INVALID, INVALID], e) for i in range(3) for e in range(2)]
    result = scored_result(eve_task("open_ended"), records, n_boot=200, seed=0, epochs=2)
    assert result.metrics["judge_agreement"] is None and result.n_missing == {"judge_agreement": 3}
