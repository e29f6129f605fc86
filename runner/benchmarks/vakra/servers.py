"""Which MCP server serves a domain (VAKRA's mcp_connection_config.yaml) and keeping it running for replays.

The config has one entry per capability id under `tasks:`. An entry is a local stdio subprocess
(`command`, `args`; plus the runner's own `env` and `cwd`, relative to the config file) or a container
exec (`container_name`, `container_runtime`, `container_env`, `container_command`), which becomes
`docker exec -i -e K=V ... <container> <command>` over stdio. `MCP_DOMAIN=<domain>` is always injected.
Problems with the file itself stop the run (ConfigError). A server that cannot start fails only its domain,
unless no server can start at all: a command (or container runtime) that does not exist, or every domain
that has dialogues to replay failing to start before any server did, stops the run (EndpointError, exit 3).
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from runner.benchmarks.vakra.mcp_env import MCPSession, ServerSpec, ServerStartError, command_problem
from runner.errors import ConfigError, EndpointError

log = logging.getLogger("runner")

IDLE_CLOSE_S = 10.0
"""A shared server nobody used for this long is stopped (VAKRA runs dozens of domains in one container)."""
_CONTAINER_CLIENT_ENV = ("DOCKER_HOST", "DOCKER_CONTEXT", "DOCKER_CONFIG", "CONTAINER_HOST", "XDG_RUNTIME_DIR")


def server_entry(path: str | Path, capability: str, capability_id: int) -> dict[str, Any]:
    """The config entry for one capability, checked; ConfigError (one line) for anything unusable."""
    import yaml

    where = f"benchmark.mcp_config={path}"
    file = Path(path)
    if not file.is_file():
        raise ConfigError(f"{where}: no such file; point it at an mcp_connection_config.yaml, or set "
                          "benchmark.replay=false to score the tool responses stored in the files")
    try:
        data = yaml.safe_load(file.read_text(encoding="utf-8"))
    except (yaml.YAMLError, OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{where}: not a readable YAML file ({' '.join(str(exc).split())})") from None
    tasks = data.get("tasks") if isinstance(data, dict) else None
    if not isinstance(tasks, dict):
        raise ConfigError(f"{where}: expected a mapping 'tasks:' keyed by capability id (1-4)")
    entry = tasks.get(capability_id, tasks.get(str(capability_id)))
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: no entry tasks.{capability_id} for {capability} (ids present: "
                          f"{', '.join(str(k) for k in tasks) or 'none'}); add one, or set benchmark.replay=false")
    mode = entry.get("mode") or "stdio"
    if mode == "websocket":
        raise ConfigError(f"{where}: tasks.{capability_id} uses mode websocket, which the mcp 2.x SDK no longer "
                          "supports (it removed its WebSocket client); run the server over stdio (command/args) "
                          "or container exec (container_name)")
    if mode != "stdio":
        raise ConfigError(f"{where}: tasks.{capability_id}.mode must be stdio (or websocket), got {mode!r}")
    if not entry.get("command") and not entry.get("container_name"):
        raise ConfigError(f"{where}: tasks.{capability_id} has neither 'command' (a local stdio server) nor "
                          "'container_name' (a server run with docker/podman exec); give one of them")
    for key in ("args", "container_command"):
        if entry.get(key) is not None and not isinstance(entry[key], list):
            raise ConfigError(f"{where}: tasks.{capability_id}.{key} must be a list of strings")
    for key in ("env", "container_env"):
        if entry.get(key) is not None and not isinstance(entry[key], dict):
            raise ConfigError(f"{where}: tasks.{capability_id}.{key} must be a mapping of variable names to values")
    return {**entry, "_config_dir": str(file.resolve().parent), "_where": f"{where} tasks.{capability_id}"}


def server_spec(entry: Mapping[str, Any], domain: str) -> ServerSpec:
    """How to start the server of one domain, from its capability's config entry."""
    label = f"MCP server for domain '{domain}' ({entry['_where']})"
    if entry.get("command"):
        env = {str(k): str(v) for k, v in {**(entry.get("container_env") or {}), **(entry.get("env") or {})}.items()}
        env["MCP_DOMAIN"] = domain
        command = str(entry["command"])
        cwd = entry.get("cwd")
        if cwd is not None:
            cwd = str((Path(entry["_config_dir"]) / str(cwd)).resolve())
        return ServerSpec(command=sys.executable if command == "python" else command,
                          args=tuple(str(a) for a in entry.get("args") or ()), env=env, cwd=cwd, label=label)
    runtime = entry.get("container_runtime") or _container_runtime()
    pairs = [*((str(k), str(v)) for k, v in (entry.get("container_env") or {}).items()), ("MCP_DOMAIN", domain)]
    in_container = [str(c) for c in entry.get("container_command") or ("python", "mcp_server.py")]
    args = ["exec", "-i", *(flag for k, v in pairs for flag in ("-e", f"{k}={v}")), str(entry["container_name"]),
            *in_container]
    # The docker/podman client itself may need these to reach its daemon.
    env = {k: os.environ[k] for k in _CONTAINER_CLIENT_ENV if k in os.environ}
    return ServerSpec(command=str(runtime), args=tuple(args), env=env, label=label)


def preflight(entry: Mapping[str, Any]) -> None:
    """EndpointError (exit 3) when the entry's command cannot start for any domain: it (or the container
    runtime, or the working directory) does not exist. Nothing is started."""
    spec = server_spec(entry, "<domain>")
    problem = command_problem(ServerSpec(command=spec.command, args=spec.args, env=spec.env, cwd=spec.cwd,
                                         label=f"MCP server ({entry['_where']})"))
    if problem is not None:
        raise EndpointError(f"vakra: no MCP server can start: {problem}, or set benchmark.replay=false to "
                            "score the tool responses stored in the files")


class StartLedger:
    """Which domains of one run started an MCP server, and which failed to: when every domain that has
    dialogues to replay failed and none started, no MCP server is able to start and the run stops."""

    def __init__(self) -> None:
        self.expected: set[str] = set()
        """Domains with at least one dialogue to replay (set as the domains are loaded)."""
        self.started: set[str] = set()
        self.failed: dict[str, str] = {}

    def expect(self, domain: str) -> None:
        self.expected.add(domain)

    def start_ok(self, domain: str) -> None:
        self.started.add(domain)

    def start_failed(self, domain: str, message: str) -> None:
        """Note a failed start; EndpointError once no domain can start (the first failure names why)."""
        self.failed.setdefault(domain, message)
        if not self.started and self.expected and self.expected <= set(self.failed):
            first = next(iter(self.failed.values()))
            raise EndpointError(f"vakra: no MCP server was able to start ({len(self.failed)} domain(s) tried); "
                                f"first: {first}; check benchmark.mcp_config and the server, then re-run with "
                                "the same hydra.run.dir")


def _container_runtime() -> str:
    return next((r for r in ("docker", "podman") if shutil.which(r)), "docker")


class ServerUnavailable(Exception):
    """The domain's server cannot be started; the message is one line saying why."""


class DomainServers:
    """The MCP server of one domain, leased per replay.

    Shared: one server for all dialogues, restarted after a crash and stopped when idle. Fresh: a new
    server for every replay, for servers whose tools keep state (VAKRA's capability-1 data handles).
    After a failed start the domain stays failed for the run, so its dialogues fail fast instead of each
    waiting for a start-up timeout.
    """

    def __init__(self, spec: ServerSpec, *, fresh: bool, start_timeout: float, call_timeout: float,
                 log_path: Path | None = None, domain: str = "", ledger: StartLedger | None = None) -> None:
        self.spec = spec
        self.domain = domain
        self.ledger = ledger
        self.fresh = fresh
        self.start_timeout = start_timeout
        self.call_timeout = call_timeout
        self.log_path = log_path
        self.failure: str | None = None
        self.starts = 0
        self._shared: MCPSession | None = None
        self._users = 0
        self._lock = asyncio.Lock()
        self._idle: asyncio.TimerHandle | None = None
        self._closing: set[asyncio.Task[None]] = set()

    @asynccontextmanager
    async def session(self) -> AsyncIterator[MCPSession]:
        """A running session for one replay; ServerUnavailable if the server cannot be started."""
        if self.fresh:
            session = await self._start()
            try:
                yield session
            finally:
                await session.close()
            return
        async with self._lock:
            if self._shared is None or not self._shared.alive:
                if self._shared is not None:
                    await self._shared.close()  # it crashed: the next replay gets a new one
                    self._shared = None
                self._shared = await self._start()
            shared = self._shared
            self._users += 1
            if self._idle is not None:
                self._idle.cancel()
                self._idle = None
        try:
            yield shared
        finally:
            self._users -= 1
            if self._users == 0:
                loop = asyncio.get_running_loop()
                self._idle = loop.call_later(IDLE_CLOSE_S, self._close_when_idle)

    async def close(self) -> None:
        """Stop everything this domain started."""
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None
        if self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)
        if self._shared is not None:
            shared, self._shared = self._shared, None
            await shared.close()

    async def _start(self) -> MCPSession:
        if self.failure is not None:
            raise ServerUnavailable(self.failure)
        session = MCPSession(self.spec, start_timeout=self.start_timeout, call_timeout=self.call_timeout,
                             log_path=self.log_path)
        self.starts += 1
        try:
            await session.start()
        except ServerStartError as exc:
            if self.failure is None:
                self.failure = str(exc)
                if self.ledger is not None:
                    self.ledger.start_failed(self.domain, self.failure)  # EndpointError if none can start
                log.warning("vakra: %s; this domain's dialogues are recorded as errors (%s)", exc,
                            "re-run with the same hydra.run.dir once it is fixed")
            raise ServerUnavailable(self.failure) from None
        if self.ledger is not None:
            self.ledger.start_ok(self.domain)
        return session

    def _close_when_idle(self) -> None:
        self._idle = None

        async def close_if_idle() -> None:
            async with self._lock:
                if self._users == 0 and self._shared is not None:
                    shared, self._shared = self._shared, None
                    await shared.close()

        task = asyncio.get_running_loop().create_task(close_if_idle())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)
