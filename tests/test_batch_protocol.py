"""The fake server's Files and Batches endpoints speak OpenAI's protocol (issue 36): what a batch goes through
when nothing but HTTP drives it, so the batch tests test the runner against a real protocol."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any

import pytest
from fake_llm import FakeLLM


def call(srv: FakeLLM, method: str, path: str, body: Any = None, *, raw: bytes | None = None,
         content_type: str = "application/json") -> Any:
    data = raw if raw is not None else None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"{srv.base_url}{path}", data=data, method=method,
                                     headers={"Content-Type": content_type, "Authorization": "Bearer k"})
    with urllib.request.urlopen(request, timeout=10) as reply:
        payload = reply.read()
    return payload if path.endswith("/content") else json.loads(payload)


def upload(srv: FakeLLM, lines: list[Any]) -> str:
    boundary = "runner-test"
    data = "".join((json.dumps(line) if not isinstance(line, str) else line) + "\n" for line in lines).encode()
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n--{boundary}\r\n"
            f"Content-Disposition: form-data; name=\"file\"; filename=\"in.jsonl\"\r\n"
            f"Content-Type: application/jsonl\r\n\r\n").encode() + data + f"\r\n--{boundary}--\r\n".encode()
    return str(call(srv, "POST", "/files", raw=body, content_type=f"multipart/form-data; boundary={boundary}")["id"])


def line(i: int, text: str) -> dict[str, Any]:
    return {"custom_id": f"r{i}", "method": "POST", "url": "/v1/chat/completions",
            "body": {"model": "m", "messages": [{"role": "user", "content": text}]}}


def create(srv: FakeLLM, file_id: str) -> dict[str, Any]:
    return dict(call(srv, "POST", "/batches", {"input_file_id": file_id, "endpoint": "/v1/chat/completions",
                                               "completion_window": "24h"}))


def test_a_batch_moves_through_its_statuses_over_polls_and_time_and_writes_output_and_error_files():
    with FakeLLM(default="A", batch_polls=3, batch_seconds=0.3, faults=["500"], fault_only_matching="bad") as srv:
        batch = create(srv, upload(srv, [line(0, "good"), line(1, "bad")]))
        seen = [batch["status"]]
        while seen[-1] != "completed":
            seen.append(call(srv, "GET", f"/batches/{batch['id']}")["status"])
        # in progress until its third poll at the earliest, and after that until its 0.3 s have passed
        assert seen[0] == "validating" and set(seen[1:-1]) == {"in_progress"} and len(seen) >= 4
        assert time.monotonic() - srv.batches[batch["id"]]["_t0"] >= 0.3
        done = call(srv, "GET", f"/batches/{batch['id']}")
        assert done["request_counts"] == {"total": 2, "completed": 1, "failed": 1}
        output = [json.loads(x) for x in call(srv, "GET", f"/files/{done['output_file_id']}/content").splitlines()]
        errors = [json.loads(x) for x in call(srv, "GET", f"/files/{done['error_file_id']}/content").splitlines()]
        assert [(x["custom_id"], x["response"]["status_code"]) for x in output] == [("r0", 200)]
        assert output[0]["response"]["body"]["choices"][0]["message"]["content"] == "A"
        assert [(x["custom_id"], x["response"]["status_code"]) for x in errors] == [("r1", 500)]
        listed = call(srv, "GET", "/batches?limit=1")
        assert [b["id"] for b in listed["data"]] == [batch["id"]] and not listed["has_more"]


def test_cancel_expiry_and_a_refused_file():
    with FakeLLM(default="A", batch_script=[{"status": "expired", "done": 1}]) as srv:
        expired = create(srv, upload(srv, [line(0, "a"), line(1, "b")]))
        while (state := call(srv, "GET", f"/batches/{expired['id']}"))["status"] != "expired":
            pass
        errors = call(srv, "GET", f"/files/{state['error_file_id']}/content").splitlines()
        assert [json.loads(x)["error"]["code"] for x in errors] == ["batch_expired"]
        srv.batch_hold = True
        held = create(srv, upload(srv, [line(0, "a")]))
        assert call(srv, "POST", f"/batches/{held['id']}/cancel")["status"] == "cancelling"
        assert call(srv, "GET", f"/batches/{held['id']}")["status"] == "cancelled"
        bad = create(srv, upload(srv, [line(0, "a"), line(0, "again"), "not json"]))
        failed = call(srv, "GET", f"/batches/{bad['id']}")
        assert failed["status"] == "failed"
        assert [e["code"] for e in failed["errors"]["data"]] == ["duplicate_custom_id", "invalid_json_line"]


def test_a_server_without_batches_answers_404():
    with FakeLLM(batches=False) as srv, pytest.raises(urllib.error.HTTPError) as refused:
        call(srv, "GET", "/batches?limit=1")
    assert refused.value.code == 404
