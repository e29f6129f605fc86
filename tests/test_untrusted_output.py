"""What reaches a terminal or a spreadsheet (issue 45, point 6): escape sequences in untrusted text are shown,
never obeyed; a name that looks like a formula is never one in comparison.csv or pairs.csv; `|` and HTML never
break comparison.md or pairs.md."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from conftest import cli

from runner.untrusted import csv_cell, for_terminal, md_cell

FORMULA = '=HYPERLINK("http://evil.invalid","click")'
TASK = "a|b <script>alert(1)</script>"


def test_terminal_text_shows_escape_and_bidi_characters() -> None:
    shown = for_terminal("id\x1b[2J\x1b]0;pwned\x07 ok\u202efdp.exe\nnext")
    assert "\x1b" not in shown and "\x07" not in shown and "\u202e" not in shown
    assert shown == "id\\x1b[2J\\x1b]0;pwned\\x07 ok\\u202efdp.exe\nnext"  # newlines stay lines


def test_spreadsheet_and_markdown_cells() -> None:
    assert csv_cell(FORMULA) == "'" + FORMULA and csv_cell("@SUM(A1)") == "'@SUM(A1)"
    assert csv_cell(-0.25) == -0.25 and csv_cell("gpt-4o") == "gpt-4o"
    assert md_cell(TASK) == "a\\|b &lt;script&gt;alert(1)&lt;/script&gt;"
    assert md_cell("two\nlines") == "two lines"


def write_run(root: Path, name: str, model: str, value: float) -> None:
    (root / name).mkdir(parents=True)
    (root / name / "results.json").write_text(json.dumps({
        "benchmark": "eve", "model": model, "judges": [],
        "tasks": {TASK: {"n": 4, "metrics": {"accuracy": value}, "ci": {"accuracy": [0.1, 0.9]}}},
        "summary": {}, "usage": {}}), encoding="utf-8")


def test_a_report_of_hostile_names_has_no_formula_and_no_broken_table(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    write_run(runs, "a", FORMULA, 0.5)
    write_run(runs, "b", "plain", 0.75)
    proc = cli([str(runs)], module="runner.report", timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    with open(runs / "report" / "comparison.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert {r["model"] for r in rows} == {"'" + FORMULA, "plain"}
    assert not any(v.startswith(("=", "+", "@")) for r in rows for v in r.values() if v)
    md = (runs / "report" / "comparison.md").read_text(encoding="utf-8")
    header = next(line for line in md.splitlines() if line.startswith("| benchmark"))
    assert header.count(" | ") == 4  # benchmark, task, metric and two models: no extra column from a `|`
    assert "<script>" not in md and "a\\|b &lt;script&gt;" in md


def test_an_error_line_quoting_a_name_shows_its_escape_sequences(tmp_path: Path) -> None:
    proc = cli(["benchmark=eve", "benchmark.tasks=[mcqa\x1b]0;pwned\x07]", "model=openai-compatible",
                "model.api_base=http://127.0.0.1:9/v1", "model.api_key=none", "judges=none", "tracker=none",
                f"hydra.run.dir={tmp_path / 'run'}"], timeout=120)
    assert proc.returncode == 2
    assert "\x1b" not in proc.stderr and "\x07" not in proc.stderr
    assert "mcqa\\x1b]0;pwned\\x07" in proc.stderr


def strict_json(text: str) -> object:
    def refuse(token: str) -> object:
        raise ValueError(f"{token} is no JSON")
    return json.loads(text, parse_constant=refuse)


def test_results_json_never_holds_nan_or_infinity(tmp_path: Path) -> None:
    # issue 45, point 5: rescore --write wrote NaN and Infinity (no JSON) from a hand-edited record.
    from runner.run.store import write_json

    write_json(tmp_path / "x.json", {"a": float("nan"), "b": [float("inf"), 1.5], "c": {"d": float("-inf")}})
    assert strict_json((tmp_path / "x.json").read_text()) == {"a": None, "b": [None, 1.5], "c": {"d": None}}


def test_rescore_write_of_a_record_with_a_nan_score_writes_json(tmp_path: Path) -> None:
    from conftest import read_jsonl, run_overrides
    from fake_llm import FakeLLM

    run_dir = tmp_path / "run"
    with FakeLLM(default="Answer: C") as srv:
        assert cli(run_overrides(srv.base_url, run_dir, tasks=["mcqa_single_answer"], limit=4, judges=0)
                   ).returncode == 0
    path = run_dir / "samples" / "mcqa_single_answer.jsonl"
    records = read_jsonl(path)
    records[0]["scores"]["accuracy"] = float("nan")  # json.dumps writes NaN, as a hand edit could
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    proc = cli(["rescore", str(run_dir), "--write"], timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    block = strict_json((run_dir / "results.json").read_text())["tasks"]["mcqa_single_answer"]  # type: ignore[index]
    right = sum(r["scores"]["accuracy"] for r in records[1:])
    assert block["metrics"]["accuracy"] == right / 3 and block["n_missing"] == {"accuracy": 1}
