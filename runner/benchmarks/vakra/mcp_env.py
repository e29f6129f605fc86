"""One MCP server session over stdio: start it, list its tools, call a tool with a timeout, stop it.

The only module of the runner that imports `mcp` (the 2.x SDK, imported lazily: it takes about a second).
A container-exec server (`docker exec -i <container> <cmd>`) is just another stdio command here; the
caller builds that command line from its own config. Failures are values, never hangs: a server that
cannot start raises `ServerStartError` (one clear line); a call that does not complete returns a `ToolResult`
whose `error` says why. `ToolResult.fault` tells the two kinds of failed call apart: the server answered
with an error (a tool error result, or a JSON-RPC error: data about the call), or the call never got an
answer because of the server process or its transport (not running, exited or closed its pipe, no reply in
time: an infrastructure fault, which says nothing about the call).

WebSocket is not offered: mcp 2.x removed its WebSocket client (it was never part of the MCP spec).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import IO, Any

_MAX_TOOL_PAGES = 100  # a server whose tools/list cursor never ends must not hang start-up
_CLOSE_TIMEOUT = 10.0  # the SDK's own stdio shutdown is bounded (~6 s: grace, SIGTERM, SIGKILL)


@dataclass(frozen=True)
class ServerSpec:
    """How to start one MCP server process that speaks MCP on its stdin/stdout."""

    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    """Extra environment variables, on top of the SDK's safe defaults (HOME, PATH, USER, ...)."""
    cwd: str | None = None
    label: str = "MCP server"
    """Names the server in error messages, e.g. "MCP server for domain 'library'"."""

    def command_line(self) -> str:
        """The command as one would type it (for messages)."""
        return " ".join([self.command, *self.args])


@dataclass(frozen=True)
class Tool:
    """A tool the server offers."""

    name: str
    description: str
    input_schema: dict[str, Any]
    """The tool's JSON Schema for its arguments (`{"type": "object", "properties": ...}`)."""


@dataclass(frozen=True)
class ToolResult:
    """What one tool call gave back."""

    text: str = ""
    """The first content block's text ("" when the tool returned no content)."""
    is_error: bool = False
    """The tool itself reported an error (its `text` says what)."""
    error: str | None = None
    """Set when the call gave no result: the server answered a JSON-RPC error, or (`fault`) no answer came."""
    fault: bool = False
    """No answer came because of the server or its transport: it is not running, exited or closed its pipe
    during the call (the session is then no longer `alive`), or did not reply in time (it stays usable: other
    calls may be answered). Either way the result says nothing about the call itself."""


class ServerStartError(Exception):
    """The server could not be started or did not complete the MCP handshake (the message is one line)."""


class MCPSession:
    """An async context manager around one MCP server process and its client session.

    The SDK keeps its transport in anyio task groups that must be entered and left by one task, so a
    private owner task holds them; `start`, `call_tool`, `refresh_tools` and `close` work from any task.
    """

    def __init__(self, spec: ServerSpec, *, start_timeout: float = 60.0, call_timeout: float = 60.0,
                 log_path: Path | None = None) -> None:
        self.spec = spec
        self.start_timeout = float(start_timeout)
        self.call_timeout = float(call_timeout)
        self.log_path = log_path
        self.tools: dict[str, Tool] = {}
        self._session: Any = None
        self._dead = False
        self._failure: BaseException | None = None
        self._owner: asyncio.Task[None] | None = None
        self._scope: Any = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._log: IO[str] | None = None
        self._log_start = 0

    async def __aenter__(self) -> MCPSession:
        await self.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.close()

    @property
    def alive(self) -> bool:
        """Started, handshake done, and the server has not gone away since."""
        return self._session is not None and not self._dead

    async def start(self) -> None:
        """Spawn the server, do the MCP handshake and list its tools; ServerStartError if that fails."""
        if self._owner is not None:
            raise RuntimeError("an MCPSession starts once; make a new one to restart the server")
        _check_command(self.spec)
        if self.log_path is not None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log = open(self.log_path, "a+", encoding="utf-8")  # noqa: SIM115 - closed in close()
        else:
            self._log = tempfile.TemporaryFile("w+", encoding="utf-8")  # noqa: SIM115 - closed in close()
        self._log_start = self._log.seek(0, os.SEEK_END)
        self._owner = asyncio.get_running_loop().create_task(self._own(), name=f"mcp: {self.spec.label}")
        try:
            async with asyncio.timeout(self.start_timeout):  # not wait_for: on 3.11 it can swallow a Ctrl-C
                await self._ready.wait()
        except TimeoutError:
            await self.close()
            raise ServerStartError(f"{self.spec.label} did not complete the MCP handshake within "
                                   f"{self.start_timeout:g}s (command: {self.spec.command_line()})"
                                   f"{self._stderr_hint()}") from None
        if self._session is None:
            message = self._start_failure()
            await self.close()
            raise ServerStartError(message)

    async def close(self) -> None:
        """Stop the server (stdin closed, then SIGTERM/SIGKILL as the SDK's shutdown does). Idempotent."""
        owner, self._owner = self._owner, None
        if owner is not None:
            self._stop.set()
            if self._session is None and self._scope is not None:
                self._scope.cancel()  # still in the handshake: nothing waits on _stop yet
            try:
                await asyncio.wait_for(asyncio.shield(owner), _CLOSE_TIMEOUT)
            except Exception:  # noqa: BLE001 - closing must not fail the caller (a timeout included)
                owner.cancel()
                with contextlib.suppress(BaseException):
                    await owner
        self._session = None
        self._dead = True
        if self._log is not None:
            self._log.close()
            self._log = None

    async def refresh_tools(self) -> dict[str, Tool]:
        """List the tools again (some servers change them as state changes); the old list if that fails."""
        if self.alive:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(self.call_timeout):
                    self.tools = await _list_tools(self._session)
        return self.tools

    async def call_tool(self, name: str, arguments: Mapping[str, Any], timeout: float | None = None
                        ) -> ToolResult:
        """Call one tool; every failure comes back as `ToolResult.error`, never as an exception."""
        session = self._session
        if session is None or self._dead:
            return ToolResult(error=f"{self.spec.label} is not running{self._stderr_hint()}", fault=True)
        from mcp import types
        from mcp.shared.exceptions import MCPError

        limit = self.call_timeout if timeout is None else float(timeout)
        try:
            # The outer bound only matters if the SDK itself got stuck; its own timeout fires first.
            async with asyncio.timeout(limit + 5.0):
                result = await session.call_tool(name, dict(arguments), read_timeout_seconds=limit)
        except MCPError as exc:
            if exc.code == types.CONNECTION_CLOSED:
                return self._fault(f"{self.spec.label} exited during the call{self._stderr_hint()}")
            if exc.code == types.REQUEST_TIMEOUT:
                return ToolResult(error=f"no reply from {self.spec.label} within {limit:g}s", fault=True)
            # The server is there and answered: its error is about this call.
            return ToolResult(error=f"MCP error {exc.code} from {self.spec.label}: {exc.message}")
        except TimeoutError:
            return ToolResult(error=f"no reply from {self.spec.label} within {limit:g}s", fault=True)
        except Exception as exc:  # noqa: BLE001 - a broken pipe or a malformed result is this call's error
            if _transport_failure(exc) or self._owner is None or self._owner.done():
                return self._fault(f"{self.spec.label}: the connection broke during the call "
                                   f"({type(exc).__name__}: {exc}){self._stderr_hint()}")
            return ToolResult(error=f"{type(exc).__name__}: {exc}")
        return ToolResult(text=_first_text(result.content), is_error=bool(result.is_error))

    def _fault(self, message: str) -> ToolResult:
        """A call that lost its server: the session is done (the next lease starts a new server)."""
        self._dead = True
        return ToolResult(error=message, fault=True)

    async def _own(self) -> None:
        import anyio
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client

        params = StdioServerParameters(command=_resolve(self.spec.command), args=list(self.spec.args),
                                       env=dict(self.spec.env), cwd=self.spec.cwd)
        try:
            with anyio.CancelScope() as scope:
                self._scope = scope
                async with (stdio_client(params, errlog=self._log) as (read, write),  # type: ignore[arg-type]
                            ClientSession(read, write) as session):
                    await session.initialize()
                    self.tools = await _list_tools(session)
                    self._session = session
                    self._ready.set()
                    await self._stop.wait()
        except Exception as exc:  # noqa: BLE001 - reported by start() as one line
            self._failure = exc
        finally:
            self._dead = True
            self._ready.set()

    def _start_failure(self) -> str:
        exc = _root(self._failure)
        what = f"{self.spec.label} (command: {self.spec.command_line()})"
        from mcp import types
        from mcp.shared.exceptions import MCPError

        if isinstance(exc, MCPError) and exc.code == types.CONNECTION_CLOSED:
            return f"{what} exited before completing the MCP handshake{self._stderr_hint()}"
        if isinstance(exc, OSError):
            return f"{what} could not be started: {exc}"
        return f"{what} failed during the MCP handshake: {type(exc).__name__}: {exc}{self._stderr_hint()}"

    def _stderr_hint(self) -> str:
        """The server's last stderr line, which usually says why it stopped."""
        if self._log is None or self._log.closed:
            return ""
        with contextlib.suppress(OSError, ValueError):
            self._log.flush()
            self._log.seek(self._log_start)
            lines = [line.strip() for line in self._log.read().splitlines() if line.strip()]
            self._log.seek(0, os.SEEK_END)
            if lines:
                return f" (its last stderr line: {lines[-1][:300]})"
        return ""


async def _list_tools(session: Any) -> dict[str, Tool]:
    from mcp import types

    tools: dict[str, Tool] = {}
    cursor = None
    for _ in range(_MAX_TOOL_PAGES):
        page = await session.list_tools(params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
        for tool in page.tools:
            tools[tool.name] = Tool(name=tool.name, description=tool.description or "",
                                    input_schema=dict(tool.input_schema or {}))
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


def _transport_failure(exc: BaseException) -> bool:
    """Whether an exception from a call is its pipe or stream giving way (not a bad answer from the server)."""
    import anyio

    return isinstance(_root(exc), (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream,
                                   ConnectionError, EOFError))


def _first_text(content: list[Any]) -> str:
    # VAKRA's servers answer with one text block; anything else is kept as its JSON form.
    if not content:
        return ""
    block = content[0]
    if getattr(block, "type", None) == "text":
        return str(block.text)
    return str(block.model_dump_json(exclude_none=True))


def _root(exc: BaseException | None) -> BaseException | None:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _resolve(command: str) -> str:
    return shutil.which(command) or command


def command_problem(spec: ServerSpec) -> str | None:
    """Why `spec` cannot be started at all (its command or working directory is missing), else None.

    One line naming the command and what to do; nothing is started.
    """
    command = spec.command
    if os.sep in command:
        path = Path(command)
        if not path.is_absolute() and spec.cwd:
            path = Path(spec.cwd) / path
        found = path.is_file() and os.access(path, os.X_OK)
    else:
        found = shutil.which(command) is not None
    if not found:
        return (f"{spec.label}: command '{command}' not found (not an executable file or not on PATH); "
                "install it or fix the command in the MCP config")
    if spec.cwd and not Path(spec.cwd).is_dir():
        return f"{spec.label}: working directory '{spec.cwd}' does not exist; fix cwd in the MCP config"
    return None


def _check_command(spec: ServerSpec) -> None:
    problem = command_problem(spec)
    if problem is not None:
        raise ServerStartError(problem)
