"""Headless Chromium driven over the DevTools protocol through a pipe (no port, no package beyond the stdlib).

Loads a page, runs scripts in it, takes screenshots, and keeps what the page did: console errors, uncaught
exceptions, browser log errors (a CSP violation, a failed load) and every request it started.

    with Browser() as browser:
        page = browser.page()
        page.goto(path.as_uri())
        page.eval("document.title")
        assert not page.errors() and page.requests() == [path.as_uri()]
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

CHROMIUM = Path("/usr/bin/chromium")
# --no-sandbox: CI runs as root, where Chromium's sandbox will not start. The rest keep a fresh profile from
# fetching anything of its own (updates, sync, field trials) and a small /dev/shm in a container from crashing it.
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-default-apps", "--disable-extensions", "--mute-audio", "--hide-scrollbars",
         "--disable-dev-shm-usage"]
TIMEOUT = 60.0


class BrowserError(RuntimeError):
    """Chromium answered a command with an error, stopped, or a wait ran out of time."""


def _high(fd: int) -> int:
    """The fd moved to 10 or above, so the 3 and 4 Chromium reads and writes never collide with it."""
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return moved


class Browser:
    """One headless Chromium with a fresh profile; `--remote-debugging-pipe` reads fd 3 and writes fd 4."""

    def __init__(self, executable: Path = CHROMIUM) -> None:
        self.profile = tempfile.mkdtemp(prefix="runner-chromium-")
        to_chrome_r, to_chrome_w = map(_high, os.pipe())
        from_chrome_r, from_chrome_w = map(_high, os.pipe())
        # bash maps the two pipe ends onto fds 3 and 4 and execs Chromium (Popen cannot renumber fds itself).
        self.proc = subprocess.Popen(
            ["bash", "-c", f'exec "$0" "$@" 3<&{to_chrome_r} 4>&{from_chrome_w}', str(executable), *FLAGS,
             "--remote-debugging-pipe", f"--user-data-dir={self.profile}", "about:blank"],
            pass_fds=(to_chrome_r, from_chrome_w), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._out = os.fdopen(to_chrome_w, "wb", buffering=0)
        self._in = os.fdopen(from_chrome_r, "rb", buffering=0)
        self._next = 0
        self._lock = threading.Lock()
        self._changed = threading.Condition()
        self._replies: dict[int, dict[str, Any]] = {}
        self.events: dict[str | None, list[dict[str, Any]]] = defaultdict(list)
        self._closed = False
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _read(self) -> None:
        buffer = b""
        while True:
            try:
                chunk = self._in.read(1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                break
            buffer += chunk
            *messages, buffer = buffer.split(b"\0")
            with self._changed:
                for raw in messages:
                    message = json.loads(raw)
                    if "id" in message:
                        self._replies[message["id"]] = message
                    else:
                        self.events[message.get("sessionId")].append(message)
                self._changed.notify_all()
        with self._changed:
            self._closed = True
            self._changed.notify_all()

    def call(self, method: str, params: dict[str, Any] | None = None, session: str | None = None,
             timeout: float = TIMEOUT) -> dict[str, Any]:
        """Send one command and return its result (a BrowserError for an error reply or no reply)."""
        with self._lock:
            self._next += 1
            ident = self._next
            message: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
            if session:
                message["sessionId"] = session
            self._out.write(json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        with self._changed:
            while ident not in self._replies:
                left = deadline - time.monotonic()
                if self._closed or left <= 0:
                    raise BrowserError(f"no reply to {method} ({'chromium stopped' if self._closed else 'timeout'})")
                self._changed.wait(left)
            reply = self._replies.pop(ident)
        if "error" in reply:
            raise BrowserError(f"{method}: {reply['error']}")
        return dict(reply.get("result") or {})

    def wait_event(self, session: str | None, method: str, since: int = 0, timeout: float = TIMEOUT) -> dict[str, Any]:
        """The first event `method` of the session at or after index `since` of its event list."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for event in self.events[session][since:]:
                    if event.get("method") == method:
                        return event
                left = deadline - time.monotonic()
                if self._closed or left <= 0:
                    raise BrowserError(f"no {method} event")
                self._changed.wait(left)

    def page(self, width: int = 1280, height: int = 900) -> Page:
        """A new tab, with the runtime, log, network and page events it needs switched on."""
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Network", "Page"):
            self.call(f"{domain}.enable", session=session)
        page = Page(self, session)
        page.resize(width, height)
        return page

    def close(self) -> None:
        """Stop Chromium and remove its profile."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for stream in (self._out, self._in):
            with contextlib.suppress(OSError):
                stream.close()
        shutil.rmtree(self.profile, ignore_errors=True)


class Page:
    """One tab: navigate, evaluate, screenshot, and what it logged and requested."""

    def __init__(self, browser: Browser, session: str) -> None:
        self.browser = browser
        self.session = session

    def _call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.browser.call(method, params, session=self.session)

    @property
    def _events(self) -> list[dict[str, Any]]:
        return self.browser.events[self.session]

    def resize(self, width: int, height: int) -> None:
        """The viewport size (CSS pixels, at scale 1)."""
        self._call("Emulation.setDeviceMetricsOverride",
                   {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})

    def goto(self, url: str, ready: str = "document.body && document.body.dataset.ready === '1'") -> float:
        """Load `url`, wait for its load event and for `ready` to hold; the seconds that took."""
        start, since = time.monotonic(), len(self._events)
        self._call("Page.navigate", {"url": url})
        self.browser.wait_event(self.session, "Page.loadEventFired", since)
        self.wait_for(ready)
        return time.monotonic() - start

    def eval(self, expression: str, await_promise: bool = False) -> Any:
        """The value of a JavaScript expression (JSON-able); a BrowserError if it threw."""
        result = self._call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                 "awaitPromise": await_promise})
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression!r} threw: {result['exceptionDetails']}")
        return result.get("result", {}).get("value")

    def wait_for(self, expression: str, timeout: float = TIMEOUT) -> Any:
        """Poll until the expression is truthy and return its value."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.eval(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise BrowserError(f"timed out waiting for {expression!r}")
            time.sleep(0.02)

    def screenshot(self, path: Path, width: int = 1280, max_height: int = 2400) -> Path:
        """A PNG of the page, as tall as its content (up to `max_height`)."""
        self.resize(width, 800)
        height = int(self.eval("document.documentElement.scrollHeight"))
        self.resize(width, min(max(height, 400), max_height))
        self.eval("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))", await_promise=True)
        data = self._call("Page.captureScreenshot", {"format": "png"})["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path

    def heap_mb(self) -> float:
        """The page's JavaScript heap in use, in MB."""
        return float(self._call("Runtime.getHeapUsage")["usedSize"]) / 1e6

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and browser log errors (CSP violations, failed loads)."""
        out = []
        for event in list(self._events):
            method, params = event.get("method"), event.get("params") or {}
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                out.append("console: " + " ".join(str(a.get("value", a.get("description"))) for a in params["args"]))
            elif method == "Runtime.exceptionThrown":
                details = params.get("exceptionDetails") or {}
                out.append("exception: " + str((details.get("exception") or {}).get("description") or details))
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                out.append("log: " + str(params["entry"].get("text")))
        return out

    def requests(self) -> list[str]:
        """The URL of every request the page started, in order (data: URLs are not requests and are left out)."""
        return [e["params"]["request"]["url"] for e in list(self._events)
                if e.get("method") == "Network.requestWillBeSent"
                and not e["params"]["request"]["url"].startswith("data:")]

    def clear(self) -> None:
        """Forget the events seen so far (before the next page of a test)."""
        with self.browser._changed:
            self._events.clear()
