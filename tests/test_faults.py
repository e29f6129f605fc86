"""Issue 29: faults and hostile input are never "internal error". SIGTERM and SIGHUP stop a run as Ctrl-C does
(books kept, 143/129); a run dir the filesystem refuses is one exit-2 line naming the path and the errno, and a
disk that fills mid-run keeps the records and the invocation's usage; untrusted replies, usage and data rows are
recorded per sample; bad config and bad replies get the README's statuses. Real CLI processes, real signals,
real tmpfs mounts (full, read-only), the real fake server."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, cli, fake_model_overrides, one_line_error, read_jsonl, run_overrides, write_jsonl
from fake_llm import FakeLLM

from runner.models.litellm_model import Endpoint
from runner.run.store import disk_error
from runner.types import CURRENT_NOTES

TASK = "mcqa_single_answer"


def rows(n: int) -> list[dict[str, Any]]:
    return [{"Question": f"Which band, variant {i}?", "Choices": ["one", "two", "three"], "Answer": "A"}
            for i in range(n)]


def data(tmp_path: Path, n: int, extra_lines: tuple[str, ...] | list[str] = ()) -> Path:
    folder = tmp_path / "data"
    path = write_jsonl(folder / f"{TASK}.jsonl", rows(n))
    with open(path, "a", encoding="utf-8") as fh:
        fh.writelines(line + "\n" for line in extra_lines)
    return folder


def args(url: str, data_dir: Path, run_dir: Path, *extra: str, concurrency: int = 4) -> list[str]:
    return run_overrides(url, run_dir, "benchmark.num_fewshot=0", "model.adaptive=false", "model.backoff=0.01", *extra,
                         judges=0, data_dir=data_dir, tasks=[TASK], model_fields={"concurrency": concurrency})


def start(argv: list[str], **kw: Any) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "runner", *argv], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


def ended(proc: subprocess.Popen[str]) -> subprocess.CompletedProcess[str]:
    out, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def wait_for_records(path: Path, n: int, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if path.exists() and len(path.read_bytes().splitlines()) >= n:
            return
        time.sleep(0.02)
    raise AssertionError(f"no {n} records in {path} (exit {proc.poll()})")


def mid_latency(srv: FakeLLM, in_flight: int) -> None:
    """Wait until `in_flight` requests are at the server, the newest well into its latency: every request the
    runner has counted has then arrived, and none is due back yet (an exact count of requests sent)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        newest = srv.arrivals[-1][0] if srv.arrivals else 0.0
        if srv.in_flight == in_flight and 0.1 < time.monotonic() - newest < srv.latency - 0.15:
            return
        time.sleep(0.005)
    raise AssertionError("the requests never settled in flight")


def invocations(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "invocations.jsonl").read_text().splitlines()]


def results(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "results.json").read_text(encoding="utf-8"))


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Callable[..., Path]]:
    """Mount a small tmpfs (a genuinely full or read-only filesystem; root may write anywhere else)."""
    mounted: list[Path] = []

    def mount(size: str = "4m", readonly: bool = False) -> Path:
        where = tmp_path / f"fs{len(mounted)}"
        where.mkdir()
        opts = f"size={size}" + (",ro" if readonly else "")
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(where)], capture_output=True,
                              text=True)
        if done.returncode:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
        mounted.append(where)
        return where

    yield mount
    for where in mounted:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def fill(folder: Path) -> None:
    """Write zeros until the filesystem is full (ENOSPC)."""
    fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"\0" * 65536)
    except OSError:
        pass
    try:
        while True:
            os.write(fd, b"\0")
    except OSError:
        pass
    finally:
        os.close(fd)


# ---------------------------------------------------------------- A. signals


@pytest.mark.parametrize("sig, status", [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_sigterm_and_sighup_stop_the_run_as_ctrl_c_does_and_keep_the_books(fake_llm, tmp_path, sig, status):
    fake_llm.latency = 0.5
    run_dir, n = tmp_path / "run", 40
    argv = args(fake_llm.base_url, data(tmp_path, n), run_dir)
    proc = start(argv)
    path = run_dir / "samples" / f"{TASK}.jsonl"
    wait_for_records(path, 4, proc)
    mid_latency(fake_llm, 4)
    proc.send_signal(sig)
    stopped = ended(proc)
    assert stopped.returncode == status, stopped.stderr
    line = one_line_error(stopped)
    assert f"stopped by {sig.name}" in line and f"hydra.run.dir={run_dir} to resume" in line
    time.sleep(0.3)
    sent = fake_llm.count
    [invocation] = invocations(run_dir)
    usage = invocation["usage"]["fake-model"]
    assert invocation["outcome"] == "interrupted"
    assert usage["requests"] == sent  # every request the server received is counted, nothing more
    kept = read_jsonl(path)
    assert len(kept) == usage["successes"] == len({r["id"] for r in kept}) < n
    assert sent == len(kept) + 4  # the four in flight were cancelled, no new one was sent

    fake_llm.reset()
    fake_llm.latency = 0.0
    again = cli(argv)
    assert again.returncode == 0, again.stderr
    assert fake_llm.count == n - len(kept)  # a re-run asks only the rest
    assert results(run_dir)["usage"]["fake-model"]["requests"] == sent + n - len(kept)


def test_sigterm_to_every_process_of_a_run_with_workers_keeps_their_records_and_usage(fake_llm, tmp_path):
    fake_llm.latency = 0.5
    run_dir, n = tmp_path / "run", 60
    argv = args(fake_llm.base_url, data(tmp_path, n), run_dir, "workers=2")
    proc = start(argv, start_new_session=True)  # its own process group: a scheduler's SIGTERM reaches them all
    path = run_dir / "samples" / f"{TASK}.jsonl"
    wait_for_records(path, 4, proc)
    mid_latency(fake_llm, 4)
    os.killpg(proc.pid, signal.SIGTERM)
    stopped = ended(proc)
    assert stopped.returncode == 143, stopped.stderr
    assert "stopped by SIGTERM" in one_line_error(stopped)
    time.sleep(0.3)
    usage = invocations(run_dir)[0]["usage"]["fake-model"]
    kept = read_jsonl(path)
    assert usage["requests"] == fake_llm.count and len(kept) == usage["successes"]
    fake_llm.reset()
    fake_llm.latency = 0.0
    assert cli(argv).returncode == 0 and fake_llm.count == n - len(kept)


# ---------------------------------------------------------------- A. the run dir on disk


@pytest.mark.parametrize("where", ["a file", "under a file", "read-only", "full"])
def test_a_run_dir_the_filesystem_refuses_stops_before_any_request(fake_llm, tmp_path, tmpfs, where):
    if where == "a file":
        run_dir = tmp_path / "taken"
        run_dir.write_text("not a folder")
        named, errno_name = run_dir, "EEXIST"
    elif where == "under a file":
        (tmp_path / "taken").write_text("not a folder")
        run_dir = named = tmp_path / "taken" / "run"
        errno_name = "ENOTDIR"
    elif where == "read-only":
        run_dir = named = tmpfs(readonly=True)
        errno_name = "EROFS"
    else:
        folder = tmpfs(size="1m")
        fill(folder)
        run_dir = named = folder
        errno_name = "ENOSPC"
    proc = cli(args(fake_llm.base_url, data(tmp_path, 3), run_dir))
    assert proc.returncode == 2, proc.stderr
    line = one_line_error(proc)
    assert f"cannot use {named} as the run dir" in line and errno_name in line and "nothing was sent" in line
    assert fake_llm.count == 0


@pytest.mark.parametrize("where", ["read-only", "full"])
def test_a_cache_dir_the_filesystem_refuses_is_one_line_before_any_request(fake_llm, tmp_path, tmpfs, where):
    folder = tmpfs(readonly=True) if where == "read-only" else tmpfs(size="1m")
    if where == "full":
        fill(folder)
    proc = cli(args(fake_llm.base_url, data(tmp_path, 3), tmp_path / "run", "cache.enabled=true",
                    f"cache.dir={folder}"))
    assert proc.returncode == 2, proc.stderr
    line = one_line_error(proc)
    assert f"cache.dir={folder}: the response cache cannot be written there" in line and "cache.enabled=false" in line
    assert fake_llm.count == 0


@pytest.mark.parametrize("workers", [1, 2])
def test_a_disk_that_fills_mid_run_keeps_every_record_and_the_usage(fake_llm, tmp_path, tmpfs, workers):
    fake_llm.latency = 0.4
    folder = tmpfs(size="4m")
    run_dir, n = folder / "run", 60
    argv = args(fake_llm.base_url, data(tmp_path, n), run_dir, f"workers={workers}", concurrency=workers)
    proc = start(argv)
    path = run_dir / "samples" / f"{TASK}.jsonl"
    wait_for_records(path, 4, proc)
    mid_latency(fake_llm, workers)
    fill(folder)
    stopped = ended(proc)
    assert stopped.returncode == 2, stopped.stderr
    line = one_line_error(stopped)
    assert f"cannot write {path}" in line and "ENOSPC" in line and f"hydra.run.dir={run_dir}" in line
    time.sleep(0.3)
    raw = path.read_bytes()
    kept = [json.loads(x) for x in raw.splitlines()]  # no torn line: the failed write was taken back
    assert raw.endswith(b"\n") and len(kept) >= 4
    [invocation] = invocations(run_dir)
    assert invocation["outcome"] == "failed"
    assert invocation["usage"]["fake-model"]["requests"] == fake_llm.count

    os.unlink(folder / "filler")
    fake_llm.reset()
    fake_llm.latency = 0.0
    again = cli(argv)
    assert again.returncode == 0, again.stderr
    assert fake_llm.count == n - len(kept)
    assert len(read_jsonl(path)) == n


# ---------------------------------------------------------------- B. untrusted replies, usage and rows


def test_lone_surrogates_and_nuls_in_replies_are_recorded_with_a_note_everywhere(fake_llm, tmp_path):
    fake_llm.default = "Answer: A \ud83d and a NUL \x00 here"
    run_dir = tmp_path / "run"
    argv = [a for a in args(fake_llm.base_url, data(tmp_path, 3), run_dir)
            if a not in ("tracker=none", "cache.enabled=false")] + ["tracker=wandb", f"cache.dir={tmp_path / 'c'}"]
    proc = cli(argv)
    assert proc.returncode == 0, proc.stderr
    records = read_jsonl(run_dir / "samples" / f"{TASK}.jsonl")
    assert [r["response"] for r in records] == ["Answer: A \ufffd and a NUL \x00 here"] * 3
    assert all(r["status"] == "ok" and "lone surrogates" in r["notes"][0] and "fake-model" in r["notes"][0]
               for r in records)
    assert results(run_dir)["tasks"][TASK]["metrics"]["accuracy"] == 1.0
    assert list(run_dir.glob("wandb/offline-run-*"))
    view = cli(["view", str(run_dir)])
    assert view.returncode == 0, view.stderr
    # The cache kept the reply as recorded: another run dir gets it from there, the same.
    cached = cli([*argv[:-3], f"hydra.run.dir={tmp_path / 'again'}", "tracker=none", f"cache.dir={tmp_path / 'c'}"])
    assert cached.returncode == 0 and fake_llm.count == 3
    assert read_jsonl(tmp_path / "again" / "samples" / f"{TASK}.jsonl")[0]["response"] == records[0]["response"]


def test_a_tool_name_with_a_lone_surrogate_comes_back_as_text_with_a_note(fake_llm):
    tools = [{"type": "function", "function": {"name": "look_up", "parameters": {"type": "object"}}}]
    fake_llm.tool_scripts = [("find", [{"tool_calls": [{"name": "look\ud83d", "arguments": '{"q": "\udc00"}'}]}])]
    endpoint = Endpoint(name="m", model="openai/fake-model", api_base=fake_llm.base_url, api_key="k")

    async def ask() -> tuple[Any, list[str]]:
        notes: list[str] = []
        CURRENT_NOTES.set(notes)
        return await endpoint.complete([{"role": "user", "content": "find it"}], tools=tools), notes

    out, notes = asyncio.run(ask())
    assert [(c["name"], c["arguments"]) for c in out.tool_calls] == [("look\ufffd", '{"q": "\ufffd"}')]
    assert len(notes) == 1 and "reply of m" in notes[0]


def test_hostile_data_rows_are_error_records_and_the_rest_is_scored(fake_llm, tmp_path):
    deep = '{"Question": "deep?", "Choices": ["a", "b"], "Answer": "A", "x": ' + "[" * 100_000 + "]" * 100_000 + "}"
    lone = '{"Question": "half an emoji \\ud83d?", "Choices": ["a", "b"], "Answer": "A"}'
    pair = '{"Question": "a whole one \\ud83d\\ude00?", "Choices": ["a", "b"], "Answer": "A"}'
    nul = '{"Question": "a NUL \\u0000?", "Choices": ["a", "b"], "Answer": "A"}'
    folder = data(tmp_path, 3, [deep, lone, pair, nul])
    with open(folder / f"{TASK}.jsonl", "ab") as fh:
        fh.write(b'{"Question": "bytes \xff\xfe?", "Choices": ["a", "b"], "Answer": "A"}\n')
    run_dir = tmp_path / "run"
    proc = cli(args(fake_llm.base_url, folder, run_dir))
    assert proc.returncode == 1, proc.stderr
    assert "3 of 8 sample(s) ended as errors" in one_line_error(proc)
    records = {r["id"]: r for r in read_jsonl(run_dir / "samples" / f"{TASK}.jsonl")}
    assert "nested too deeply" in records[3]["error"] and "lone surrogate" in records[4]["error"]
    assert "not UTF-8" in records[7]["error"]
    assert [records[i]["status"] for i in (0, 1, 2, 5, 6)] == ["ok"] * 5
    assert "\U0001f600" in records[5]["prompt"][-1]["content"] and "\x00" in records[6]["prompt"][-1]["content"]
    assert fake_llm.count == 5 and results(run_dir)["tasks"][TASK]["n_errors"] == 3


@pytest.mark.parametrize("usage", [{"prompt_tokens": -5_000_000, "completion_tokens": -1_000_000},
                                   {"completion_tokens": 10**15}])
def test_impossible_token_counts_count_zero_with_an_unknown_cost_never_a_negative_one(fake_llm, tmp_path, usage):
    fake_llm.usage = usage
    run_dir = tmp_path / "run"
    proc = cli(args(fake_llm.base_url, data(tmp_path, 3), run_dir,
                    "model.pricing={input_per_mtok:1.0,output_per_mtok:2.0}"))
    assert proc.returncode == 0, proc.stderr
    spent = results(run_dir)["usage"]["fake-model"]
    assert spent["cost_usd"] is None and results(run_dir)["totals"]["cost_usd"] is None
    assert all(spent[key] == 0 for key in usage)
    assert "cost unknown" in proc.stdout
    for record in read_jsonl(run_dir / "samples" / f"{TASK}.jsonl"):
        assert record["usage"]["model"]["cost"] is None and "counted as 0 tokens" in record["notes"][0]


# ---------------------------------------------------------------- C. statuses as the README says


@pytest.mark.parametrize("value", [7, "garbage", ["x"]])
def test_a_hand_edited_fingerprint_is_one_exit_2_line_and_refresh_asks_that_sample(fake_llm, tmp_path, value):
    run_dir = tmp_path / "run"
    argv = args(fake_llm.base_url, data(tmp_path, 3), run_dir)
    assert cli(argv).returncode == 0
    path = run_dir / "samples" / f"{TASK}.jsonl"
    records = read_jsonl(path)
    records[1]["fingerprint"] = value
    write_jsonl(path, records)
    fake_llm.reset()
    refused = cli(argv)
    assert refused.returncode == 2, refused.stderr
    line = one_line_error(refused)
    assert f"sample 1: {value!r}" in line and "edited by hand" in line and "resume=refresh" in line
    assert fake_llm.count == 0
    assert cli([*argv, "resume=refresh"]).returncode == 0 and fake_llm.count == 1


@pytest.mark.parametrize("rows_, fewshot, expected", [(0, 0, "has no rows"), (3, 3, "are few-shot examples"),
                                                      (2, 5, "are few-shot examples")])
def test_a_task_with_nothing_to_ask_is_bad_input_exit_2(fake_llm, tmp_path, rows_, fewshot, expected):
    proc = cli(args(fake_llm.base_url, data(tmp_path, rows_), tmp_path / "run", f"benchmark.num_fewshot={fewshot}"))
    assert proc.returncode == 2, proc.stderr
    assert expected in one_line_error(proc) and fake_llm.count == 0


@pytest.mark.parametrize("override", ["model.concurrency=0", "model.concurrency=-3", "judges.panel.0.concurrency=0"])
def test_a_concurrency_below_one_is_a_config_error(fake_llm, tmp_path, override):
    write_jsonl(tmp_path / "data" / "open_ended.jsonl", [{"Question": "Why?", "Answer": "Because."}])
    argv = [a for a in args(fake_llm.base_url, data(tmp_path, 3), tmp_path / "run") if not a.startswith("judges")]
    proc = cli([*argv, fake_model_overrides(fake_llm.base_url)[-2], "benchmark.tasks=[mcqa_single_answer,open_ended]",
                override])
    assert proc.returncode == 2, proc.stderr
    line = one_line_error(proc)
    assert "concurrency=" in line and "at least 1" in line and fake_llm.count == 0


MALFORMED: dict[str, Any] = {
    "variant 1?": {"id": "x", "object": "chat.completion", "model": "m"},
    "variant 2?": {"id": "x", "object": "chat.completion", "model": "m", "choices": []},
    "variant 3?": {"id": "x", "object": "chat.completion", "model": "m",
                   "choices": [{"index": 0, "message": None, "finish_reason": "stop"}]},
    "variant 4?": b"<html>502 Bad Gateway</html>",
    "variant 5?": b'{"id": "x", "choices": [{"index": 0, "message": {"role": "assistant", "content": "A \xff"}}]}',
}
SAID = ["it has no choices", "its choices are empty", "choices[0].message is null", "its body is not JSON",
        "its body is not UTF-8 text"]


def test_malformed_replies_fail_their_sample_naming_the_endpoint_and_what_was_wrong(fake_llm, tmp_path):
    def raw(body: dict[str, Any]) -> Any:
        text = body["messages"][-1]["content"]
        return next((reply for key, reply in MALFORMED.items() if key in text), None)

    fake_llm.raw_reply = raw
    run_dir = tmp_path / "run"
    proc = cli(args(fake_llm.base_url, data(tmp_path, 8), run_dir, "model.max_retries=1", concurrency=1))
    assert proc.returncode == 1, proc.stderr
    assert "5 of 8 sample(s) ended as errors" in one_line_error(proc) and "is the server running" not in proc.stderr
    records = {r["id"]: r for r in read_jsonl(run_dir / "samples" / f"{TASK}.jsonl")}
    for i, said in enumerate(SAID, start=1):
        error = records[i]["error"]
        assert f"fake-model (openai/fake-model at {fake_llm.base_url})" in error and said in error, error
        assert "Traceback" not in error and "received_args" not in error
    assert [records[i]["status"] for i in (0, 6, 7)] == ["ok"] * 3


def test_an_endpoint_that_dies_mid_run_stops_it_after_ten_failed_calls_in_a_row(fake_llm, tmp_path):
    fake_llm.latency = 0.2
    run_dir, n = tmp_path / "run", 100
    proc = start(args(fake_llm.base_url, data(tmp_path, n), run_dir))
    path = run_dir / "samples" / f"{TASK}.jsonl"
    wait_for_records(path, 8, proc)
    fake_llm.stop()
    began = time.monotonic()
    stopped = ended(proc)
    assert stopped.returncode == 3, stopped.stderr
    line = one_line_error(stopped)
    assert "fake-model stopped answering: its last 10 calls failed after their retries" in line
    assert time.monotonic() - began < 30
    records = read_jsonl(path)
    ok = [r for r in records if r["status"] == "ok"]
    usage = invocations(run_dir)[0]["usage"]["fake-model"]
    # the tenth stops it; calls already in their last attempt (four in flight) may end as failures beside it
    assert len(ok) == usage["successes"] >= 8 and 10 <= usage["failures"] <= 13
    assert len(records) < n  # the samples left were never asked


def test_a_refused_file_outside_the_run_dir_is_not_called_the_run_dir(tmp_path):
    refused = PermissionError(13, "Permission denied", "/data/mcqa_single_answer.jsonl")
    error = disk_error(refused, tmp_path / "run", started=False)
    assert error is not None and error.exit_code == 2
    assert str(error) == ("cannot use /data/mcqa_single_answer.jsonl: Permission denied (errno 13, EACCES); nothing "
                          "was sent")
    assert disk_error(ConnectionRefusedError(111, "Connection refused"), tmp_path, started=True) is None
