"""`python -m runner.view` on a real `-m` sweep (two models, tests/test_sweep.py's scripted server) and on two of
its jobs compared: the sweep page with the comparison, paired differences and charts of report/, each job's
own page linked from it, and the page of the samples whose score differs; in headless Chromium too.

Hand-derived from the EVE sample data: the sweep scores mcqa_single_answer ids 2-5 (references A, D, B, A);
m1 always answers B and m2 always A, so their scores differ on ids 2, 4 and 5, m1 higher on id 4 only. On
open_ended judge j1 passes and j2 fails every answer of both models: no difference there.
"""

from __future__ import annotations

import csv
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import test_sweep as sweep_tests
from browser import CHROMIUM, Browser
from conftest import cli
from fake_llm import FakeLLM
from test_view import assert_clean, choose, page_data, shown_ids

DIFFERING, M1_HIGHER, M2_HIGHER = ["2", "4", "5"], ["4"], ["2", "5"]


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished two-job sweep dir (its own report/ written by the sweep) and its pages."""
    root = tmp_path_factory.mktemp("view-sweep")
    with FakeLLM(default=sweep_tests.reply) as server:
        sweep_dir = root / "sweep"
        proc = cli(sweep_tests.sweep_args(sweep_tests.user_configs(root, server.base_url), sweep_dir, "tracker=none"),
                   timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
    proc = cli([str(sweep_dir)], module="runner.view")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(sweep_dir / "view" / "index.html")
    return sweep_dir


def test_the_sweep_page_holds_the_report_and_links_each_job_to_its_own_page(sweep):
    data = page_data(sweep / "view" / "index.html")
    assert data["kind"] == "sweep"
    assert [(j["label"], j["dir"], j["href"]) for j in data["jobs"]] == [
        ("m1", "0_m1", "../0_m1/view/index.html"), ("m2", "1_m2", "../1_m2/view/index.html")]
    for job in ("0_m1", "1_m2"):
        assert page_data(sweep / job / "view" / "index.html")["kind"] == "run"
    with open(sweep / "report" / "comparison.csv", newline="") as fh:
        report = list(csv.DictReader(fh))
    table = data["comparison"]
    assert [c["label"] for c in table["columns"]] == ["m1", "m2"]
    cells = {(r["task"], r["metric"], col["label"]): cell for r in table["rows"]
             for col, cell in zip(table["columns"], r["cells"], strict=True)}
    assert len(cells) == len(report)
    for row in report:
        cell = cells[(row["task"], row["metric"], row["model"])]
        assert (cell["value"], cell["ci_low"], cell["ci_high"]) == pytest.approx(
            tuple(float(row[k]) for k in ("value", "ci_low", "ci_high")))
    with open(sweep / "report" / "pairs.csv", newline="") as fh:
        pairs = list(csv.DictReader(fh))
    assert [(p["task"], p["model_a"], p["model_b"], p["n"]) for p in data["pairs"]] == \
        [(p["task"], p["model_a"], p["model_b"], float(p["n"])) for p in pairs]
    assert [c["name"] for c in data["charts"]] == ["tasks.png", "pairs.png", "judge_agreement.png"]
    assert all(c["src"].startswith("data:image/png;base64,iVBORw0KGgo") for c in data["charts"])


def test_a_sweep_without_a_report_gets_one_first(sweep, tmp_path):
    copy = tmp_path / "sweep"
    shutil.copytree(sweep, copy, ignore=shutil.ignore_patterns("view"))
    shutil.rmtree(copy / "report")
    proc = cli([str(copy)], module="runner.view")
    assert proc.returncode == 0, proc.stderr
    assert (copy / "report" / "comparison.csv").is_file()
    assert len(page_data(copy / "view" / "index.html")["charts"]) == 3


def test_two_runs_compared_keep_the_samples_whose_score_differs(sweep):
    proc = cli([str(sweep / "0_m1"), str(sweep / "1_m2")], module="runner.view")
    assert proc.returncode == 0, proc.stderr
    path = sweep / "0_m1" / "view" / "diff-1_m2.html"
    assert proc.stdout.strip() == str(path)
    data = page_data(path)
    assert (data["kind"], data["a"]["label"], data["b"]["label"]) == ("diff", "m1", "m2")
    mcq, open_ended = data["tasks"]
    assert [str(p["a"]["id"]) for p in mcq["pairs"]] == DIFFERING
    assert (mcq["n_paired"], mcq["a_better"], mcq["b_better"]) == (4, len(M1_HIGHER), len(M2_HIGHER))
    assert [(p["a"]["response"], p["b"]["response"], p["delta"]) for p in mcq["pairs"]] == [
        ("Answer: B", "Answer: A", -1.0), ("Answer: B", "Answer: A", 1.0), ("Answer: B", "Answer: A", -1.0)]
    assert open_ended["pairs"] == [] and open_ended["n_paired"] == 4
    assert (data["a"]["href"], data["b"]["href"]) == ("index.html", "../../1_m2/view/index.html")


def test_comparing_with_a_sweep_dir_is_one_error_line_and_exit_2(sweep):
    proc = cli([str(sweep / "0_m1"), str(sweep)], module="runner.view")
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("error: ") and "two run dirs" in line


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium chromium-driver; .ci/run installs it)")
    with Browser() as b:
        yield b


def test_the_sweep_page_and_the_job_pages_it_links_load_clean_in_chromium(sweep, browser):
    path = sweep / "view" / "index.html"
    page = browser.page()
    page.goto(path.as_uri())
    assert page.eval("document.querySelectorAll('.charts img').length") == 3
    assert page.eval("[...document.querySelectorAll('.charts img')].every(i => i.complete && i.naturalWidth > 0)")
    links = page.eval("[...document.querySelectorAll('table a')].map(a => a.href)")
    jobs = [(sweep / job / "view" / "index.html").as_uri() for job in ("0_m1", "1_m2")]
    assert links == jobs * 2  # the jobs table, then the comparison's column heads
    assert page.eval("document.querySelector('table.comparison').innerText").count("accuracy") == 1
    assert_clean(page, path)
    page = browser.page()
    page.goto(jobs[0])
    assert shown_ids(page) == ["2", "3", "4", "5"]
    assert page.errors() == [] and page.requests() == [jobs[0]]


def test_the_comparison_page_lists_and_filters_the_differing_samples_in_chromium(sweep, browser):
    path = sweep / "0_m1" / "view" / "diff-1_m2.html"
    if not path.exists():
        assert cli([str(sweep / "0_m1"), str(sweep / "1_m2")], module="runner.view").returncode == 0
    page = browser.page()
    page.goto(path.as_uri())
    assert shown_ids(page) == DIFFERING
    assert choose(page, "f-status", "a") == M1_HIGHER
    assert choose(page, "f-status", "b") == M2_HIGHER
    choose(page, "f-status", "")
    page.eval("document.querySelector('tr.sample-row').click()")
    sides = page.eval("[...document.querySelectorAll('.detail')].map(d => d.textContent)")
    assert len(sides) == 2 and "Answer: B" in sides[0] and "Answer: A" in sides[1]
    tabs = page.eval("[...document.querySelectorAll('.task-tab')].map(b => b.dataset.task)")
    assert tabs == ["mcqa_single_answer", "open_ended"]
    assert_clean(page, path)
