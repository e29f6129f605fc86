"""Tests for the fake OpenAI-compatible server in tests/fake_llm.py, over real HTTP on 127.0.0.1."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).parent))  # robust even if tests/ becomes a package
from fake_llm import FakeLLM  # noqa: E402


def body(text: str, **extra: Any) -> dict[str, Any]:
    return {"model": "m1", "messages": [{"role": "user", "content": text}], **extra}


def chat(srv: FakeLLM, payload: dict[str, Any], timeout: float = 5.0) -> httpx.Response:
    return httpx.post(f"{srv.base_url}/chat/completions", json=payload, timeout=timeout)


@pytest.fixture
def srv() -> Iterator[FakeLLM]:
    with FakeLLM(rules=[(r"capital of France", "Paris")], default="A") as s:
        yield s


def test_start_returns_base_url_and_health(srv: FakeLLM) -> None:
    assert srv.base_url == f"http://127.0.0.1:{srv.port}/v1"
    assert httpx.get(f"http://127.0.0.1:{srv.port}/health").json() == {"status": "ok"}
    models = httpx.get(f"{srv.base_url}/models").json()
    assert models["object"] == "list" and len(models["data"]) == 1


def test_rule_default_and_response_shape(srv: FakeLLM) -> None:
    r = chat(srv, body("What is the capital of France?"))
    assert r.status_code == 200
    data = r.json()
    assert data["object"] == "chat.completion" and data["model"] == "m1"
    assert data["id"] and isinstance(data["created"], int)
    choice = data["choices"][0]
    assert choice["message"] == {"role": "assistant", "content": "Paris"}
    assert choice["finish_reason"] == "stop"
    assert chat(srv, body("something else")).json()["choices"][0]["message"]["content"] == "A"
    # Also served without the /v1 prefix.
    r2 = httpx.post(f"http://127.0.0.1:{srv.port}/chat/completions", json=body("capital of France"))
    assert r2.json()["choices"][0]["message"]["content"] == "Paris"


def test_matches_last_user_message_text_parts_only(srv: FakeLLM) -> None:
    payload = {
        "model": "m1",
        "messages": [
            {"role": "system", "content": "capital of France"},  # not the user message
            {"role": "user", "content": "capital of France"},
            {"role": "assistant", "content": "Paris"},
            {
                "role": "user",
                "content": [
                    {"type": "input_audio", "input_audio": {"data": "capital of France", "format": "wav"}},
                    {"type": "text", "text": "next question"},
                ],
            },
        ],
    }
    assert chat(srv, payload).json()["choices"][0]["message"]["content"] == "A"
    payload["messages"][-1]["content"][1]["text"] = "and the capital of\nFrance?"
    assert chat(srv, payload).json()["choices"][0]["message"]["content"] == "A"
    srv.rules = [(r"capital of.France", "Paris")]  # re.S: '.' spans the newline
    assert chat(srv, payload).json()["choices"][0]["message"]["content"] == "Paris"


def test_callables_and_runtime_replacement(srv: FakeLLM) -> None:
    srv.rules = [(r"echo (\w+)", lambda b: b["messages"][-1]["content"].split()[-1].upper())]
    srv.default = lambda b: f"model={b['model']}"
    assert chat(srv, body("echo hello")).json()["choices"][0]["message"]["content"] == "HELLO"
    assert chat(srv, body("hi")).json()["choices"][0]["message"]["content"] == "model=m1"


def test_usage_counts_words(srv: FakeLLM) -> None:
    payload = {
        "model": "m1",
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": [{"type": "text", "text": "one two three"}]},
        ],
    }
    srv.default = "four words of reply"
    usage = chat(srv, payload).json()["usage"]
    assert usage == {"prompt_tokens": 5, "completion_tokens": 4, "total_tokens": 9}
    srv.default = ""
    usage = chat(srv, body("")).json()["usage"]
    assert usage == {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}


def test_records_requests_count_and_reset(srv: FakeLLM) -> None:
    chat(srv, body("a"))
    chat(srv, body("b", temperature=0))
    assert srv.count == 2
    assert srv.requests == [body("a"), body("b", temperature=0)]
    assert sorted(srv.attempts.values()) == [1, 1]
    srv.reset()
    assert (srv.count, srv.requests, srv.attempts) == (0, [], {})


def test_stream_rejected(srv: FakeLLM) -> None:
    r = chat(srv, body("hi", stream=True))
    assert r.status_code == 400
    assert "stream" in r.json()["error"]["message"]


@pytest.mark.parametrize("kind", ["401", "403", "404", "429", "500", "503"])
def test_status_faults_then_success(kind: str) -> None:
    with FakeLLM(faults=[kind], retry_after="7") as srv:
        r = chat(srv, body("q"))
        assert r.status_code == int(kind)
        assert r.json()["error"]["message"]
        if kind == "429":
            assert r.headers["Retry-After"] == "7"
        assert chat(srv, body("q")).status_code == 200
        # A different body has its own attempt counter, so it fails first too.
        assert chat(srv, body("other")).status_code == int(kind)
        assert srv.count == 3


def test_a_wrong_or_missing_key_gets_401_like_a_real_provider() -> None:
    with FakeLLM(api_key="right") as srv:
        assert chat(srv, body("q")).status_code == 401
        wrong = httpx.post(f"{srv.base_url}/chat/completions", json=body("q"), timeout=5,
                           headers={"Authorization": "Bearer wrong"})
        assert wrong.status_code == 401 and wrong.json()["error"]["code"] == "invalid_api_key"
        right = httpx.post(f"{srv.base_url}/chat/completions", json=body("q"), timeout=5,
                           headers={"Authorization": "Bearer right"})
        assert right.status_code == 200


def test_an_unknown_model_gets_404() -> None:
    with FakeLLM(models=["m1"]) as srv:
        assert chat(srv, body("q")).status_code == 200
        missing = chat(srv, {**body("q"), "model": "m2"})
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "model_not_found"


def test_fault_sequence_is_per_attempt() -> None:
    with FakeLLM(faults=["500", "429"]) as srv:
        codes = [chat(srv, body("q")).status_code for _ in range(3)]
        assert codes == [500, 429, 200]
        # Key is the canonical JSON: reordered keys are the same request.
        same = {"messages": [{"content": "q", "role": "user"}], "model": "m1"}
        assert chat(srv, same).status_code == 200


def test_broken_json_then_success() -> None:
    with FakeLLM(faults=["broken"]) as srv:
        r = chat(srv, body("q"))
        assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")
        with pytest.raises(ValueError):
            r.json()
        assert chat(srv, body("q")).json()["choices"][0]["message"]["content"] == "A"


def test_disconnect_then_success() -> None:
    with FakeLLM(faults=["disconnect"]) as srv:
        with pytest.raises(httpx.TransportError):
            chat(srv, body("q"))
        assert chat(srv, body("q")).status_code == 200
        assert srv.count == 2


def test_timeout_then_success() -> None:
    with FakeLLM(faults=["timeout"], hang=1.0) as srv:
        with pytest.raises(httpx.TimeoutException):
            chat(srv, body("q"), timeout=0.3)
        assert chat(srv, body("q"), timeout=2.0).status_code == 200


def test_fault_only_matching() -> None:
    with FakeLLM(faults=["500"], fault_only_matching=r"flaky") as srv:
        assert chat(srv, body("stable")).status_code == 200
        assert chat(srv, body("flaky one")).status_code == 500
        assert chat(srv, body("flaky one")).status_code == 200


def test_stop_does_not_hang_with_requests_in_flight() -> None:
    srv = FakeLLM(faults=["timeout"], hang=30.0)
    srv.start()
    errors: list[BaseException] = []

    def hung_call() -> None:
        try:
            chat(srv, body("q"), timeout=10.0)
        except BaseException as exc:  # the connection is expected to be cut
            errors.append(exc)

    t = threading.Thread(target=hung_call)
    t.start()
    deadline = time.monotonic() + 5
    while srv.count == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    started = time.monotonic()
    srv.stop()
    srv.stop()  # idempotent
    assert time.monotonic() - started < 3
    t.join(timeout=5)
    assert not t.is_alive() and errors


def test_concurrent_requests_overlap() -> None:
    with FakeLLM(latency=0.2) as srv, httpx.Client(limits=httpx.Limits(max_connections=64)) as client:
        started = time.monotonic()
        with ThreadPoolExecutor(max_workers=64) as pool:
            codes = list(pool.map(
                lambda i: client.post(f"{srv.base_url}/chat/completions", json=body(f"q{i}")).status_code, range(64)))
        elapsed = time.monotonic() - started
        assert codes == [200] * 64 and srv.count == 64
        assert elapsed < 5.0  # serial would take 12.8 s


def test_cli_ready_line_stats_and_clean_exit() -> None:
    script = Path(__file__).with_name("fake_llm.py")
    cmd = [sys.executable, str(script), "--port", "0", "--default", "B", "--faults", "429"]
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) as proc:
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline().strip()
            assert line.startswith("READY http://127.0.0.1:") and line.endswith("/v1")
            base = line.split()[1]
            payload = body("q")
            assert httpx.post(f"{base}/chat/completions", json=payload).status_code == 429
            reply = httpx.post(f"{base}/chat/completions", json=payload).json()
            assert reply["choices"][0]["message"]["content"] == "B"
            stats = httpx.get(base.removesuffix("/v1") + "/stats").json()
            assert stats["count"] == 2 and stats["cpu_seconds"] >= 0
            proc.terminate()
            assert proc.wait(timeout=5) == 0
            assert proc.stdout.read() == ""  # exactly one line on stdout
        finally:
            if proc.poll() is None:
                proc.kill()
