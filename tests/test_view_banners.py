"""The viewer says at the top what results.json knows a reader must see before any number (issue 35, point 4):
a demo run, a run the budget stopped, a run without results yet, samples that ended as errors; on a run's
page and on a sweep's. Runs are real (the fake server, one a budget stops for real); the page is loaded in
headless Chromium and read as a person sees it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from browser import CHROMIUM, Browser
from conftest import EVE_SAMPLE, cli, fake_model_overrides, run_in_process

from runner.view.pages import write_view


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium chromium-driver; .ci/run installs it)")
    with Browser() as b:
        yield b


def eve(url: str, run_dir: Path, *extra: str) -> list[str]:
    return [*fake_model_overrides(url, judges=0), "benchmark=eve", f"benchmark.data_dir={EVE_SAMPLE}",
            "benchmark.tasks=[mcqa_single_answer]", "benchmark.limit=4", "benchmark.num_fewshot=0", "tracker=none",
            "progress=false", "cache.enabled=false", f"hydra.run.dir={run_dir}", *extra]


def banners(browser: Browser, path: Path) -> list[tuple[str, str]]:
    page = browser.page()
    page.goto(path.as_uri())
    found = page.eval("[...document.querySelectorAll('header .banner')].map(b => [b.className, b.textContent,"
                      " b.getBoundingClientRect().top, b.offsetHeight])")
    first_number = page.eval("document.querySelector('.tabs').getBoundingClientRect().top")
    assert page.errors() == []
    assert all(height > 0 and top < first_number for _, _, top, height in found)  # visible, above every figure
    return [(cls.replace("banner banner-", ""), text) for cls, text, _, _ in found]


def test_a_demo_run_says_so_at_the_top(fake_llm, tmp_path, browser):
    run_in_process(eve(fake_llm.base_url, tmp_path / "run"), tmp_path / "run")
    results_file = tmp_path / "run" / "results.json"
    results = json.loads(results_file.read_text())
    assert results["demo"] is False and banners(browser, write_view(tmp_path / "run")) == []
    # What the default run (the embedded model) writes into results.json: its demo flags.
    results_file.write_text(json.dumps({**results, "demo": True, "demo_endpoints": ["local"]}))
    (kind, text), = banners(browser, write_view(tmp_path / "run"))
    assert kind == "demo" and text.startswith("DEMO: local = the embedded SmolLM2-135M model")


def test_a_stopped_run_and_its_errors_are_said_first(fake_llm, tmp_path, browser):
    fake_llm.faults, fake_llm.fault_only_matching = ["500"] * 4, "Sentinel-1 synthetic aperture radar"
    run_dir = tmp_path / "run"
    proc = cli(eve(fake_llm.base_url, run_dir, "model.max_retries=1", "model.backoff=0.01",
                   "model.pricing={input_per_mtok:1,output_per_mtok:1}", "budget.max_usd=0.0001",
                   "model.concurrency=1"), timeout=120)
    results = json.loads((run_dir / "results.json").read_text())
    assert proc.returncode == 4 and results["stopped"] == "budget", proc.stderr
    found = dict(banners(browser, write_view(run_dir)))
    assert found["stopped"].startswith("Stopped: budget")


def test_a_run_without_results_and_a_sweep_with_a_demo_job(fake_llm, tmp_path, browser):
    run_in_process(eve(fake_llm.base_url, tmp_path / "sweep" / "0_a"), tmp_path / "sweep" / "0_a")
    run_in_process(eve(fake_llm.base_url, tmp_path / "sweep" / "1_b"), tmp_path / "sweep" / "1_b")
    second = tmp_path / "sweep" / "1_b" / "results.json"
    second.write_text(json.dumps({**json.loads(second.read_text()), "demo": True, "demo_endpoints": ["local"]}))
    page = browser.page()
    page.goto(write_view(tmp_path / "sweep").as_uri())
    text = page.eval("document.querySelector('header .banner-demo').textContent")
    assert text.startswith("DEMO: fake-model (1_b) ran the embedded SmolLM2-135M model") and page.errors() == []
    (tmp_path / "sweep" / "0_a" / "results.json").unlink()  # a run stopped before it wrote one
    assert [k for k, _ in banners(browser, write_view(tmp_path / "sweep" / "0_a"))] == ["incomplete"]
