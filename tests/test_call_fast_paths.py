"""The call layer's fast paths keep its behaviour: litellm's `completion()` runs inline only where it cannot
block, batched cache writes lose no reply on a normal exit or an interrupt, and a fully cached re-run never
imports litellm."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import gc
import json
import sqlite3
import subprocess
import sys
import threading
import warnings
from pathlib import Path
from typing import Any

import pytest
from conftest import EVE_SAMPLE, ROOT, cli, fake_model_overrides
from fake_llm import FakeLLM

from runner.models import cache as cache_module
from runner.models.cache import ResponseCache
from runner.models.inline_calls import InlineExecutor, _runs_inline
from runner.models.litellm_model import Endpoint, _import_litellm

litellm = _import_litellm()
HELLO = [{"role": "user", "content": "hello"}]


def as_acompletion_hands_it(**kw: Any) -> Any:
    """What `litellm.acompletion` passes to `loop.run_in_executor`: `completion` bound to its arguments,
    run in a copy of the context."""
    call = functools.partial(litellm.main.completion, **{"messages": HELLO, "acompletion": True, **kw})
    return functools.partial(contextvars.copy_context().run, call)


def test_only_calls_whose_synchronous_path_cannot_block_run_inline():
    assert _runs_inline(as_acompletion_hands_it(model="openai/fake", api_base="http://127.0.0.1:9/v1"))
    assert _runs_inline(as_acompletion_hands_it(model="gpt-4o-mini"))
    pdf = [{"role": "user", "content": [{"type": "text", "text": "read"},
                                        {"type": "file", "file": {"file_id": "https://x/y.pdf"}}]}]
    keeps_the_thread = [
        as_acompletion_hands_it(model="openai/fake", messages=pdf),  # litellm downloads PDF URLs
        as_acompletion_hands_it(model="anthropic/claude-haiku-4-5"),  # another provider's path
        as_acompletion_hands_it(model="openai/fake", stream=True),
        as_acompletion_hands_it(model="openai/fake", acompletion=False),
        functools.partial(contextvars.copy_context().run, functools.partial(print, "x")),
        functools.partial(litellm.main.completion, model="openai/fake", messages=HELLO, acompletion=True),
    ]
    assert not any(_runs_inline(fn) for fn in keeps_the_thread)
    litellm.input_callback = [lambda *a, **k: None]  # registered the way a user registers one
    try:
        assert not _runs_inline(as_acompletion_hands_it(model="openai/fake"))
    finally:
        litellm.input_callback = []


def test_the_loop_runs_litellm_inline_and_everything_else_in_threads(fake_llm: FakeLLM):
    endpoint = Endpoint(name="fake", model="openai/fake", api_base=fake_llm.base_url, api_key="k")

    async def main() -> tuple[list[Any], int, Any]:
        outs = await asyncio.gather(*(endpoint.complete([{"role": "user", "content": f"q{i}"}]) for i in range(8)))
        other = await asyncio.get_running_loop().run_in_executor(None, threading.get_ident)
        return outs, other, getattr(asyncio.get_running_loop(), "_default_executor", None)

    outs, other_thread, executor = asyncio.run(main())
    assert [o.text for o in outs] == ["A"] * 8 and len(fake_llm.requests) == 8
    assert isinstance(executor, InlineExecutor)
    assert other_thread != threading.get_ident()  # blocking work (DNS, files) still leaves the loop
    assert len(executor._threads) <= 1  # that call's thread: no litellm call needed one (8 would make 6)


def test_an_error_raised_while_building_the_request_is_the_same_inline_as_in_a_thread():
    async def ask(executor: Any) -> BaseException:
        asyncio.get_running_loop().set_default_executor(executor)
        try:  # an unsupported parameter, refused in completion() itself before anything is sent
            await litellm.acompletion(model="openai/fake", api_base="http://127.0.0.1:9/v1", api_key="k",
                                      messages=HELLO, top_k=3, drop_params=False)
        except Exception as exc:  # noqa: BLE001 - compared below
            return exc
        raise AssertionError("litellm accepted top_k for openai")

    from concurrent.futures import ThreadPoolExecutor

    inline, threaded = asyncio.run(ask(InlineExecutor())), asyncio.run(ask(ThreadPoolExecutor()))
    assert type(inline) is type(threaded) and str(inline) == str(threaded)


def test_calls_cancelled_when_the_run_stops_leave_no_unawaited_coroutine():
    with FakeLLM(default="A", latency=2.0) as srv:
        endpoint = Endpoint(name="fake", model="openai/fake", api_base=srv.base_url, api_key="k", concurrency=16)

        async def main(steps: int, wait: float) -> None:
            calls = [asyncio.ensure_future(endpoint.complete([{"role": "user", "content": f"q{steps}-{i}"}]))
                     for i in range(16)]
            for _ in range(steps):  # while litellm builds the requests (with the thread hop: in the pool)
                await asyncio.sleep(0)
            await asyncio.sleep(wait)
            for call in calls:
                call.cancel()
            await asyncio.gather(*calls, return_exceptions=True)

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for steps, wait in ((1, 0.0), (2, 0.0), (3, 0.0), (1, 0.001), (1, 0.01), (1, 0.2)):
                asyncio.run(main(steps, wait))
                gc.collect()
    assert not [w for w in caught if "never awaited" in str(w.message)], [str(w.message) for w in caught]


def rows(path: Path) -> dict[str, Any]:
    with sqlite3.connect(path / "responses.sqlite") as conn:
        return {k: json.loads(v) for k, v in conn.execute("SELECT key, value FROM responses")}


def test_cache_writes_are_batched_in_the_loop_and_served_meanwhile(tmp_path):
    cache = ResponseCache(tmp_path)

    async def main() -> None:
        for i in range(5):
            cache.put(f"k{i}", {"text": str(i)})
        assert rows(tmp_path) == {}  # pending: no write per reply
        assert cache.get("k3") == {"text": "3"} and cache.get_many(["k1", "nope"]) == {"k1": {"text": "1"}}
        await asyncio.sleep(cache_module.FLUSH_S + 0.1)
        assert len(rows(tmp_path)) == 5  # the timer wrote them
        for i in range(cache_module.FLUSH_ROWS):
            cache.put(f"n{i}", {"text": str(i)})
        assert len(rows(tmp_path)) == 5 + cache_module.FLUSH_ROWS  # a full batch is written at once

    asyncio.run(main())
    cache.put("sync", {"text": "now"})  # no event loop: written at once
    assert rows(tmp_path)["sync"] == {"text": "now"}
    cache.close()


def test_pending_replies_survive_an_interrupt_and_a_plain_exit(tmp_path):
    cache = ResponseCache(tmp_path / "a")

    async def interrupted() -> None:
        cache.put("k", {"text": "kept"})
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        asyncio.run(interrupted())
    cache.close()  # what the run does in its `finally`
    assert rows(tmp_path / "a") == {"k": {"text": "kept"}}

    script = ("import asyncio, sys; from runner.models.cache import ResponseCache\n"
              "c = ResponseCache(sys.argv[1])\n"
              "async def main():\n    c.put('k', {'text': 'at exit'})\n    raise KeyboardInterrupt\n"
              "asyncio.run(main())\n")
    proc = subprocess.run([sys.executable, "-c", script, str(tmp_path / "b")], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode != 0 and "KeyboardInterrupt" in proc.stderr  # never closed, interrupted
    assert rows(tmp_path / "b") == {"k": {"text": "at exit"}}


def test_a_failed_call_is_not_cached_and_a_reply_is(tmp_path):
    cache = ResponseCache(tmp_path)
    with FakeLLM(default="A", faults=["500"]) as srv:
        failing = Endpoint(name="fake", model="openai/fake", api_base=srv.base_url, api_key="k", max_retries=0,
                           cache=cache, backoff_base=0.01)
        with pytest.raises(Exception):  # noqa: B017, PT011 - CallError; the kind is test_trust's business
            asyncio.run(failing.complete(HELLO))
        cache.flush()
        # Only what the endpoint sends for these params is kept (runner/models/sent_params.py), no reply.
        assert [v for v in rows(tmp_path).values() if "text" in v] == []
        assert list(rows(tmp_path).values()) == [{"params": {}, "dropped": {}, "seed": True, "structured": True}]
        ok = Endpoint(name="fake", model="openai/fake", api_base=srv.base_url, api_key="k", max_retries=3,
                      cache=cache, backoff_base=0.01)
        assert asyncio.run(ok.complete(HELLO)).text == "A"
    cache.close()
    assert [v["text"] for v in rows(tmp_path).values() if "text" in v] == ["A"]


NO_LITELLM = ("import sys, runpy\nsys.argv = ['runner', *sys.argv[1:]]\n"
              "try:\n    runpy.run_module('runner', run_name='__main__')\n"
              "finally:\n    print('LITELLM_IMPORTED=%s' % ('litellm' in sys.modules))\n")


@pytest.mark.parametrize("model", ["openai/fake-model", "openai/gpt-4o-mini"])
def test_a_fully_cached_rerun_never_imports_litellm(tmp_path, model):
    with FakeLLM(default="Answer: B") as srv:
        args = fake_model_overrides(srv.base_url) + [
            f"model.model={model}", "benchmark=eve", f"benchmark.data_dir={EVE_SAMPLE}",
            "benchmark.tasks=[mcqa_single_answer]", "benchmark.limit=4", "tracker=none", "progress=false",
            f"cache.dir={tmp_path / 'cache'}"]
        first = cli([*args, f"hydra.run.dir={tmp_path / 'a'}"])
        assert first.returncode == 0, first.stderr
        sent = srv.count
        second = subprocess.run([sys.executable, "-c", NO_LITELLM, *args, f"hydra.run.dir={tmp_path / 'b'}"],
                                cwd=ROOT, capture_output=True, text=True, timeout=180)
        assert second.returncode == 0, second.stderr
        assert srv.count == sent and "LITELLM_IMPORTED=False" in second.stdout
    usage = [json.loads((tmp_path / d / "results.json").read_text())["usage"]["fake-model"] for d in "ab"]
    assert usage[1]["cache_hits"] == usage[0]["requests"] == 4
    assert usage[1]["saved_usd"] == usage[0]["cost_usd"]  # null for the unknown model, litellm's cost else


IMPORT_WHILE_LOOP_RUNS = """
import asyncio, json, time
from runner.models.litellm_import import litellm_ready

async def main():
    gaps, last = [], time.monotonic()
    async def ticker():
        nonlocal last
        while True:
            await asyncio.sleep(0.005)
            now = time.monotonic()
            gaps.append(now - last)
            last = now
    tick = asyncio.ensure_future(ticker())
    t0 = time.monotonic()
    misses = []
    for _ in range(8):  # a cache miss every 50 ms while it imports
        misses.append(asyncio.ensure_future(litellm_ready()))
        await asyncio.sleep(0.05)
    await asyncio.gather(*misses)
    tick.cancel()
    print(json.dumps({"import_s": time.monotonic() - t0, "max_gap_s": max(gaps), "ticks": len(gaps)}))

asyncio.run(main())
"""


def test_the_event_loop_keeps_running_while_litellm_imports():
    proc = subprocess.run([sys.executable, "-c", IMPORT_WHILE_LOOP_RUNS], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    # Every caller awaits the one import; none holds the loop while it runs (it used to, for the whole import).
    assert seen["max_gap_s"] < max(0.5, seen["import_s"] / 3), seen


CANCEL_ONE_WAITER = """
import asyncio
from runner.models.litellm_import import litellm_ready

async def main():
    first = asyncio.ensure_future(litellm_ready())
    await asyncio.sleep(0.1)  # the import is under way
    first.cancel()  # a sample stopped while it waited for litellm
    litellm = await litellm_ready()
    await asyncio.sleep(0.2)  # time for the import thread to report anything it hit
    print("IMPORTED", litellm.__name__, first.cancelled())

asyncio.run(main())
"""


def test_a_caller_cancelled_while_litellm_imports_does_not_fail_the_import_for_the_others():
    # Cancelling one waiter used to cancel the shared import: every other caller got CancelledError, and
    # the import thread printed a traceback, which cut into the run's one error line (seen in CI).
    proc = subprocess.run([sys.executable, "-c", CANCEL_ONE_WAITER], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["IMPORTED", "litellm", "True"]
    assert "Exception in thread" not in proc.stderr, proc.stderr
