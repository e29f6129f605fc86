"""WandbTracker against real wandb in offline mode, read back from the `.wandb` log on disk."""

from __future__ import annotations

import json
import logging
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from runner.outputs.tracking.wandb_tracker import WandbTracker, resolve_mode, table_columns_and_rows

SECRET = "sk-test-do-not-log-0123456789"


# --- reading an offline run back ---------------------------------------------------------------

def read_wandb_log(path: Path) -> list[Any]:
    """Parse a `run-*.wandb` transaction log into `wandb_internal_pb2.Record`s.

    wandb 0.31 ships no Python reader any more (the old `sdk.internal.datastore` is gone; the Go
    core writes the file), so this decodes the format directly: a 7-byte file header
    (":W&B", magic 0xBEE1, version), then LevelDB-log chunks in 32 KiB blocks, each with a
    7-byte header (crc32, length, type: 1 full, 2 first, 3 middle, 4 last). A block tail shorter
    than a chunk header is zero padding.
    """
    from wandb.proto.wandb_internal_pb2 import Record

    data = path.read_bytes()
    ident, magic, _version = struct.unpack("<4sHB", data[:7])
    assert (ident, magic) == (b":W&B", 0xBEE1), "not a .wandb transaction log"
    block, header = 32768, 7
    records, pending, pos = [], b"", 7
    while pos + header <= len(data):
        if block - pos % block < header:
            pos += block - pos % block
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos:pos + header])
        if kind == 0:  # zero padding up to the end of the file
            break
        pending += data[pos + header:pos + header + length]
        pos += header + length
        if kind in (1, 4):
            record = Record()
            record.ParseFromString(pending)
            records.append(record)
            pending = b""
    return records


def _items(updates: Any) -> dict[str, Any]:
    """Summary/history items as {"key" or "nested/key": decoded JSON value}."""
    return {item.key or "/".join(item.nested_key): json.loads(item.value_json) for item in updates}


def read_offline_run(sync_dir: Path) -> dict[str, Any]:
    """The parts of an offline run the tests check: run record, final summary, history, tables.

    wandb-core may still be flushing the log when `finish()` returns on a loaded machine: wait (bounded)
    until the run and exit records are on disk.
    """
    for _ in range(100):
        found = _read_offline_run(sync_dir)
        if found["run"] is not None and found["exit_code"] is not None:
            return found
        time.sleep(0.1)
    return _read_offline_run(sync_dir)


def _read_offline_run(sync_dir: Path) -> dict[str, Any]:
    (log_file,) = sync_dir.glob("run-*.wandb")
    run: Any = None
    summary: dict[str, Any] = {}
    history: list[dict[str, Any]] = []
    artifacts: list[Any] = []
    exit_code = None
    for record in read_wandb_log(log_file):
        kind = record.WhichOneof("record_type")
        if kind == "run":
            run = record.run
        elif kind == "summary":
            summary.update(_items(record.summary.update))
        elif kind == "history":
            history.append(_items(record.history.item))
        elif kind == "artifact":
            artifacts.append(record.artifact)
        elif kind == "exit":
            exit_code = record.exit.exit_code
    tables = {key[: -len("/path")]: json.loads((sync_dir / "files" / value).read_text())
              for row in history for key, value in row.items()
              if key.endswith("/path") and str(value).endswith(".table.json")}  # not images
    config = {i.key: json.loads(i.value_json) for i in run.config.update} if run is not None else {}
    return {"run": run, "config": config,
            "summary": summary, "history": history, "tables": tables, "artifacts": artifacts,
            "exit_code": exit_code}


# --- fixtures ----------------------------------------------------------------------------------

@pytest.fixture
def offline_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Offline, quiet wandb with every wandb directory (and HOME) inside tmp_path."""
    home = tmp_path / "home"
    home.mkdir()
    for name in ("WANDB_API_KEY", "WANDB_BASE_URL", "WANDB_ENTITY", "WANDB_PROJECT", "NETRC"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    for name in ("WANDB_CACHE_DIR", "WANDB_CONFIG_DIR", "WANDB_DATA_DIR", "WANDB_ARTIFACT_DIR"):
        monkeypatch.setenv(name, str(home / name.lower()))
    # Neither an environment value nor a secret typed as a Hydra override may reach any file.
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setattr(sys, "argv", [sys.argv[0], f"model.api_key={SECRET}"])
    return tmp_path


def _records() -> list[dict[str, Any]]:
    """Three samples as SampleRecord.to_dict() writes them: judged twice, half-invalid, failed."""
    def judgement(judge: str, status: str, verdict: str | None, score: float | None,
                  explanation: str = "", raw: str = "") -> dict[str, Any]:
        return {"judge": judge, "status": status, "verdict": verdict, "score": score,
                "explanation": explanation, "raw": raw}

    base = {"task": "open_ended", "model": "qwen2.5-0.5b", "usage": {}, "extra": {}}
    return [
        {**base, "id": "q1",
         "prompt": [{"role": "system", "content": "Answer briefly."},
                    {"role": "user", "content": "What is the capital of France?"}],
         "reference": "Paris", "response": "Paris.", "answer": None,
         "judgements": [judgement("gpt", "ok", "correct", 1.0, "Matches the reference."),
                        judgement("claude", "ok", "correct", 1.0, "Correct city.")],
         "scores": {"llm_as_judge": 1.0}, "status": "ok", "error": None},
        {**base, "id": "q2",
         "prompt": [{"role": "user", "content": "Name two noble gases."}],
         "reference": ["helium", "neon"], "response": "Helium and oxygen.", "answer": None,
         "judgements": [judgement("gpt", "ok", "incorrect", 0.0, "Oxygen is not a noble gas."),
                        judgement("claude", "invalid", None, None, raw="Hmm, partly right?")],
         "scores": {"llm_as_judge": 0.0}, "status": "invalid", "error": None},
        {**base, "id": 3, "prompt": "Which options are prime? A) 2 B) 4 C) 5",
         "reference": ["A", "C"], "response": None, "answer": ["A", "C"], "judgements": [],
         "scores": {}, "status": "error", "error": "Timeout after 3 retries"},
    ]


RESULT = {"n": 3, "n_invalid": 1, "invalid_ids": ["q2"], "n_errors": 1, "error_ids": [3],
          "metrics": {"llm_as_judge_avg": 0.5, "accuracy": 0.3333, "f1": None},
          "ci": {"llm_as_judge_avg": [0.0, 1.0], "accuracy": [0.0615, 0.7923], "f1": None},
          "judge_stats": {"n": 1, "fleiss_kappa": 0.25, "fleiss_kappa_ci": [-0.5, 0.75],
                          "cohen_kappa": {"claude|gpt": 0.25}, "cohen_kappa_ci": {"claude|gpt": [-0.5, 0.75]},
                          "invalid_rate": {"gpt": 0.0, "claude": 0.5}}}


def _write_results(run_dir: Path, records: list[dict[str, Any]]) -> None:
    (run_dir / "samples").mkdir(parents=True, exist_ok=True)
    (run_dir / "results.json").write_text(json.dumps({"tasks": {"open_ended": RESULT}}))
    (run_dir / "samples" / "open_ended.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in records))


def _run_once(run_dir: Path, name: str, *, failed: bool = False, **kwargs: Any) -> Path:
    """One full start -> log_task -> finish; returns the offline run directory it produced."""
    records = _records()
    _write_results(run_dir, records)
    wandb_dir = Path(kwargs.get("dir") or run_dir) / "wandb"
    before = set(wandb_dir.glob("offline-run-*"))
    tracker = WandbTracker(project="runner-test", tags=["ci"], **kwargs)
    tracker.start(run_dir=run_dir, name=name, group="sweep-1", tags=["eve", "ci"],
                  config={"model": {"name": "qwen2.5-0.5b", "api_key": "<redacted>"},
                          "tasks": ["open_ended"], "seed": 0})
    tracker.log_task("open_ended", records, RESULT)
    tracker.finish({"cost": {"total": 0.0123, "judges": None}, "n_samples": 3, "model": "qwen",
                    "ids": [1, 2]}, failed=failed)
    (new,) = set(wandb_dir.glob("offline-run-*")) - before
    return new


# --- tests -------------------------------------------------------------------------------------

def test_offline_run_records_config_metrics_table_and_artifact(
        offline_env: Path, caplog: pytest.LogCaptureFixture) -> None:
    run_dir = offline_env / "outputs" / "run1"
    with caplog.at_level(logging.INFO, logger="runner.outputs.tracking"):
        sync_dir = _run_once(run_dir, "eve-qwen")
    assert sync_dir.parent == run_dir / "wandb"
    run_id = (run_dir / "wandb-run-id").read_text().strip()
    assert sync_dir.name.endswith(f"-{run_id}")
    # the line names both ways to look at the offline run: locally (wandb leet) and uploaded (wandb sync)
    assert any(f"wandb sync {sync_dir.parent}/offline-run-*-{run_id}" in m and f"wandb leet {sync_dir.parent}" in m
               for m in caplog.messages)

    got = read_offline_run(sync_dir)
    run = got["run"]
    assert (run.display_name, run.project, run.run_group) == ("eve-qwen", "runner-test", "sweep-1")
    assert list(run.tags) == ["ci", "eve"]
    assert got["config"]["model"] == {"name": "qwen2.5-0.5b", "api_key": "<redacted>"}
    assert got["config"]["tasks"] == ["open_ended"] and got["config"]["seed"] == 0

    summary = got["summary"]
    assert summary["open_ended/llm_as_judge_avg"] == 0.5
    assert summary["open_ended/accuracy"] == 0.3333
    # each metric's 95 % interval beside it (none for a null metric), and the panel's reliability
    assert (summary["open_ended/accuracy_ci_low"], summary["open_ended/accuracy_ci_high"]) == (0.0615, 0.7923)
    assert (summary["open_ended/llm_as_judge_avg_ci_low"], summary["open_ended/llm_as_judge_avg_ci_high"]) == \
        (0.0, 1.0)
    assert not [k for k in summary if k.startswith("open_ended/f1")]
    assert (summary["open_ended/fleiss_kappa"], summary["open_ended/fleiss_kappa_ci_low"],
            summary["open_ended/fleiss_kappa_ci_high"]) == (0.25, -0.5, 0.75)
    assert (summary["open_ended/judge_invalid_rate/gpt"], summary["open_ended/judge_invalid_rate/claude"]) == \
        (0.0, 0.5)
    assert (summary["open_ended/n"], summary["open_ended/n_invalid"],
            summary["open_ended/n_errors"]) == (3, 1, 1)
    assert summary["cost/total"] == 0.0123 and summary["n_samples"] == 3
    assert summary["model"] == "qwen"
    assert "cost/judges" not in summary and "ids" not in summary
    assert got["exit_code"] == 0

    # one run.log call for the task: metrics, counts and the table in the same history step
    (step,) = [h for h in got["history"] if "open_ended/llm_as_judge_avg" in h]
    assert step["open_ended/n"] == 3 and step["samples/open_ended/_type"] == "table-file"
    assert step["open_ended/accuracy_ci_low"] == 0.0615 and step["open_ended/fleiss_kappa"] == 0.25

    table = got["tables"]["samples/open_ended"]
    assert table["columns"] == ["id", "prompt", "reference", "response", "answer", "status",
                                "error", "score/llm_as_judge", "gpt/verdict", "gpt/explanation",
                                "claude/verdict", "claude/explanation"]
    rows = [dict(zip(table["columns"], row, strict=True)) for row in table["data"]]
    assert [r["id"] for r in rows] == ["q1", "q2", "3"]
    assert rows[0]["prompt"] == "system: Answer briefly.\n\nuser: What is the capital of France?"
    assert rows[0]["gpt/verdict"] == "correct" and rows[0]["claude/explanation"] == "Correct city."
    assert rows[1]["claude/verdict"] == "invalid"
    assert rows[1]["claude/explanation"] == "Hmm, partly right?"
    assert rows[1]["reference"] == '["helium", "neon"]' and rows[1]["status"] == "invalid"
    assert rows[2]["answer"] == '["A", "C"]' and rows[2]["error"] == "Timeout after 3 retries"
    assert [r["score/llm_as_judge"] for r in rows] == [1.0, 0.0, None]  # numbers W&B can sort and chart
    assert got["run"].job_type == "eval"

    (artifact,) = [a for a in got["artifacts"] if a.type == "eval-results"]
    assert sorted(c.path for c in artifact.manifest.contents) == [
        "results.json", "samples/open_ended.jsonl"]

    for path in offline_env.rglob("*"):  # no secret reaches any file wandb wrote
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


def test_two_sequential_runs_in_one_process(offline_env: Path) -> None:
    first = _run_once(offline_env / "job0", "job0", failed=True, table_rows=1)
    second = _run_once(offline_env / "job1", "job1", table_rows=1)
    runs = [read_offline_run(first), read_offline_run(second)]
    assert [r["run"].display_name for r in runs] == ["job0", "job1"]
    assert runs[0]["run"].run_id != runs[1]["run"].run_id
    assert [r["exit_code"] for r in runs] == [1, 0]  # both finished, the failed one marked so
    assert [len(r["tables"]["samples/open_ended"]["data"]) for r in runs] == [1, 1]


def test_finish_without_start_or_twice_is_harmless(offline_env: Path) -> None:
    tracker = WandbTracker()
    tracker.log_task("open_ended", _records(), RESULT)
    tracker.finish({"n": 1}, failed=True)
    tracker.finish({"n": 1}, failed=False)
    assert not list(offline_env.rglob("offline-run-*"))


def test_start_failure_then_finish_does_not_raise(offline_env: Path) -> None:
    tracker = WandbTracker(dir=str(offline_env / "wb"))
    with pytest.raises(ValueError):  # wandb's settings validation (a pydantic ValidationError)
        tracker.start(run_dir=offline_env, name="x", config={"a": 1}, group=None,
                      tags=["x" * 100])  # wandb rejects tags longer than 64 characters
    tracker.finish({}, failed=True)


def test_auto_mode_is_offline_without_credentials(offline_env: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WANDB_MODE")
    netrc = offline_env / "netrc"
    monkeypatch.setenv("NETRC", str(netrc))
    assert resolve_mode("auto") == "offline"  # no key, no netrc file

    netrc.write_text("machine example.com login u password p\n")
    assert resolve_mode("auto") == "offline"  # netrc without a W&B entry
    sync_dir = _run_once(offline_env / "auto", "auto-run", mode="auto", dir=str(offline_env / "wb"))
    assert sync_dir.parent == offline_env / "wb" / "wandb"  # `dir` overrides the run dir

    netrc.write_text("machine api.wandb.ai login user password not-a-real-key\n")
    assert resolve_mode("auto") == "online"
    assert resolve_mode("offline") == "offline"
    monkeypatch.setenv("NETRC", str(offline_env / "missing"))
    monkeypatch.setenv("WANDB_API_KEY", "x" * 40)
    assert resolve_mode("auto") == "online"
    monkeypatch.setenv("WANDB_MODE", "disabled")  # an explicit WANDB_MODE always wins
    assert resolve_mode("auto") == "disabled" and resolve_mode("online") == "disabled"


def test_invalid_mode_is_rejected() -> None:
    with pytest.raises(ValueError):
        WandbTracker(mode="sometimes")


def test_table_rows_without_judges() -> None:
    columns, rows = table_columns_and_rows([{"id": 0, "prompt": "p" * 5000, "reference": True}])
    assert columns == ["id", "prompt", "reference", "response", "answer", "status", "error"]
    assert rows[0][0] == "0" and len(rows[0][1]) == 4000 and rows[0][2] == "true"


def test_records_of_several_epochs_get_an_epoch_column() -> None:
    columns, rows = table_columns_and_rows([{"id": 0, "epoch": 0, "scores": {"accuracy": 1}},
                                            {"id": 0, "epoch": 1, "scores": {"accuracy": 0}}])
    assert columns[:2] == ["id", "epoch"] and columns[-1] == "score/accuracy"
    assert [(r[1], r[-1]) for r in rows] == [(0, 1.0), (1, 0.0)]


def test_a_cut_samples_table_says_so(offline_env: Path, caplog: pytest.LogCaptureFixture) -> None:
    got = read_offline_run(_run_once(offline_env / "cut", "cut", table_rows=1))
    assert "holds the first 1 of its 3 records" in caplog.text
    assert got["summary"]["samples/open_ended/rows_logged"] == 1


def test_importing_the_module_does_not_import_wandb() -> None:
    code = ("import sys, runner.outputs.tracking.wandb_tracker as m; m.WandbTracker(); "
            "assert 'wandb' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parents[1])


def test_every_invocation_into_a_run_dir_logs_to_its_one_wandb_run(offline_env: Path) -> None:
    """Issue 17: a failed, then resumed, run left a second W&B run beside the first; now one run id per run
    dir, kept in the run dir, and each offline folder carries it (wandb sync uploads them as one run)."""
    run_dir = offline_env / "outputs" / "resumed"
    first = _run_once(run_dir, "eve-qwen", failed=True)
    second = _run_once(run_dir, "eve-qwen")
    run_id = (run_dir / "wandb-run-id").read_text().strip()
    assert first != second
    assert {read_offline_run(d)["run"].run_id for d in (first, second)} == {run_id}
    other = _run_once(offline_env / "outputs" / "other", "eve-qwen")
    assert read_offline_run(other)["run"].run_id != run_id
