"""The MCP layer against real stdio server processes (the bundled server): sessions, failures as values,
crash and restart, timeouts, argument coercion against a strictly typed server, capability-1 state, and
container-exec mode through a stand-in container runtime."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT

from runner.benchmarks.vakra.dialogues import Call
from runner.benchmarks.vakra.mcp_env import MCPSession, ServerSpec, ServerStartError
from runner.benchmarks.vakra.replay import Replayer, ReplayFault
from runner.benchmarks.vakra.servers import DomainServers, ServerUnavailable, server_entry, server_spec

BUNDLED = ROOT / "runner" / "benchmarks" / "vakra" / "bundled"


def bundled(domain: str, capability: str = "2", hooks: bool = False) -> ServerSpec:
    env = {"MCP_DOMAIN": domain, "CAPABILITY_ID": capability}
    if hooks:
        env["VAKRA_BUNDLED_TEST_HOOKS"] = "1"
    return ServerSpec(command=sys.executable, args=("server.py",), env=env, cwd=str(BUNDLED), label=f"srv {domain}")


def test_a_session_lists_typed_tools_and_failed_calls_come_back_as_values() -> None:
    async def scenario() -> None:
        async with MCPSession(bundled("weather", hooks=True), call_timeout=1.0) as session:
            schema = session.tools["get_stations_above_elevation"].input_schema
            assert schema["properties"]["min_elevation"]["type"] == "integer"
            result = await session.call_tool("get_station_city", {"station_name": "Harbor Point"})
            assert result.text == json.dumps({"city": "Eastbrook"}, indent=2) and not result.is_error
            refused = await session.call_tool("get_stations_above_elevation", {"min_elevation": "500"})
            assert refused.is_error and refused.text.startswith("Error: parameter 'min_elevation'")
            started = time.monotonic()
            slow = await session.call_tool("sleep_seconds", {"seconds": 5})
            assert slow.error == "no reply from srv weather within 1s" and time.monotonic() - started < 4
            assert (await session.call_tool("get_station_elevation", {"station_name": "High Tarn"})).text == \
                json.dumps({"elevation_m": 1120}, indent=2)  # still usable after a timeout
            crashed = await session.call_tool("crash_server", {})
            assert crashed.error is not None and "exited during the call" in crashed.error
            assert not session.alive
            after = await session.call_tool("get_station_city", {"station_name": "Harbor Point"})
            assert after.error is not None and "not running" in after.error

    asyncio.run(scenario())


@pytest.mark.parametrize(("spec", "timeout", "message"), [
    (ServerSpec(command="/nonexistent/vakra-server", label="srv"), 20,
     "command '/nonexistent/vakra-server' not found"),
    (bundled("atlantis"), 20, "exited before completing the MCP handshake (its last stderr line: vakra bundled "
                              "server: unknown MCP_DOMAIN 'atlantis'"),
    (ServerSpec(command=sys.executable, args=("-c", "import sys; sys.stdin.read()"), label="mute"), 1,
     "mute did not complete the MCP handshake within 1s"),
])
def test_a_server_that_cannot_start_is_one_clear_error_not_a_hang(spec: ServerSpec, timeout: float,
                                                                   message: str) -> None:
    async def scenario() -> None:
        started = time.monotonic()
        with pytest.raises(ServerStartError) as info:
            async with MCPSession(spec, start_timeout=timeout):
                pass
        assert message in str(info.value) and "\n" not in str(info.value)
        assert time.monotonic() - started < 8

    asyncio.run(scenario())


def test_a_shared_server_is_restarted_after_a_crash_and_a_failed_start_fails_the_domain_fast() -> None:
    async def scenario() -> None:
        servers = DomainServers(bundled("library", hooks=True), fresh=False, start_timeout=20, call_timeout=5)
        replayer = Replayer(servers, "capability_dashboard_apis", tool_timeout=5)
        # A crash is no response to score: the replay stops, naming the call (the dialogue becomes an error).
        with pytest.raises(ReplayFault, match=r"exited during the call.*\(predicted call 2 of 3: crash_server\)"):
            await replayer.prediction("u1", {"sequence": {"tool_call": [
                {"name": "count_books_by_genre", "arguments": {"genre": "poetry"}},
                {"name": "crash_server", "arguments": {}},
                {"name": "count_books_by_genre", "arguments": {"genre": "poetry"}}]}})
        replayed = await replayer.ground_truth("u1", [{"sequence": {"tool_call": [
            {"name": "count_books_by_genre", "arguments": {"genre": "poetry"}}]}}])
        assert replayed[0][0].response == json.dumps({"count": 3}, indent=2)
        assert servers.starts == 2  # the ground-truth replay got a new server
        await servers.close()

        failing = DomainServers(bundled("atlantis"), fresh=False, start_timeout=20, call_timeout=5)
        for _ in range(2):
            with pytest.raises(ServerUnavailable, match="unknown MCP_DOMAIN 'atlantis'"):
                async with failing.session():
                    pass
        assert failing.starts == 1  # the second dialogue did not wait for another start
        await failing.close()

    asyncio.run(scenario())


def test_replayed_arguments_are_coerced_to_the_schema_and_bad_calls_become_error_responses() -> None:
    async def scenario() -> None:
        servers = DomainServers(bundled("library"), fresh=False, start_timeout=20, call_timeout=5)
        replayer = Replayer(servers, "capability_dashboard_apis", tool_timeout=5)
        async with servers.session() as session:
            ok = await replayer.execute(session, Call("get_books_published_after", '{"year": "2015", "limit": "2"}'))
            missing = await replayer.execute(session, Call("get_member_loans", {"member": "J. Okonkwo"}))
            unparsable = await replayer.execute(session, Call("count_books_by_genre", "{genre: poetry"))
        assert ok.arguments == {"year": 2015, "limit": 2} and not ok.error
        assert json.loads(ok.response) == {"books": [{"title": "Orbit of Small Things", "year": 2016},
                                                     {"title": "Night Ferry to Aarhus", "year": 2017}]}
        assert missing.error and missing.response == "Error: the MCP server offers no tool named 'get_member_loans'"
        assert unparsable.error and unparsable.response.startswith("Error: arguments are not valid JSON")
        await servers.close()

    asyncio.run(scenario())


def test_capability_1_replays_get_fresh_servers_so_equal_calls_answer_alike() -> None:
    gt_turn = {"sequence": {"tool_call": [
        {"name": "initialize_active_data", "arguments": {}},
        {"name": "aggregate_data", "arguments": {"data_label": "retrieved_data_1", "key_name": "name",
                                                 "operation": "count"}}]}}
    pred_turn = {"sequence": {"tool_call": [
        {"name": "aggregate_data", "arguments": {"data_label": "retrieved_data_1", "key_name": "name",
                                                 "operation": "count"}}]}}

    async def scenario() -> None:
        fresh = DomainServers(bundled("library", "1"), fresh=True, start_timeout=20, call_timeout=5)
        replayer = Replayer(fresh, "capability_bi_apis", tool_timeout=5)
        predicted = await replayer.prediction("bi-library-002", pred_turn)
        (truth,) = await replayer.ground_truth("bi-library-002", [gt_turn])
        # initialize_active_data is dropped and get_data(tool_universe_id=uuid) comes first on both sides.
        assert [o.name for o in predicted] == [o.name for o in truth] == ["get_data", "aggregate_data"]
        assert predicted[0].arguments == {"tool_universe_id": "bi-library-002"}
        assert [o.response for o in predicted] == [o.response for o in truth]
        assert json.loads(predicted[0].response)["handle"] == "retrieved_data_1"
        assert json.loads(predicted[1].response) == {"result": 8}
        assert fresh.starts == 2
        # Why: in one shared session the same get_data call answers with another handle name.
        async with MCPSession(bundled("library", "1")) as shared:
            first = await shared.call_tool("get_data", {"tool_universe_id": "bi-library-002"})
            second = await shared.call_tool("get_data", {"tool_universe_id": "bi-library-002"})
        assert json.loads(first.text)["handle"] == "retrieved_data_1"
        assert json.loads(second.text)["handle"] == "retrieved_data_2"

    asyncio.run(scenario())


FAKE_RUNTIME = """#!{python}
# Stands in for `docker`: `exec -i -e K=V ... <container> <command...>` runs the command here.
import os, sys
args = sys.argv[1:]
assert args[:2] == ["exec", "-i"], args
args, env = args[2:], dict(os.environ)
while args[0] == "-e":
    key, _, value = args[1].partition("=")
    env[key], args = value, args[2:]
if args[0] != "vakra-bundled":
    sys.exit("Error: No such container: " + args[0])
command = [sys.executable if a == "python" else a for a in args[1:]]
os.chdir({bundled!r})
os.execve(command[0], command, env)
"""


def test_container_exec_mode_runs_the_server_through_the_runtime_with_mcp_domain(tmp_path: Path) -> None:
    runtime = tmp_path / "fake-docker"
    runtime.write_text(FAKE_RUNTIME.format(python=sys.executable, bundled=str(BUNDLED)))
    runtime.chmod(0o755)
    config = tmp_path / "mcp.yaml"
    config.write_text(f"tasks:\n  2:\n    container_name: vakra-bundled\n    container_runtime: {runtime}\n"
                      "    container_env: {CAPABILITY_ID: '2'}\n    container_command: [python, server.py]\n")
    spec = server_spec(server_entry(config, "capability_dashboard_apis", 2), "weather")

    async def scenario() -> None:
        async with MCPSession(spec) as session:
            assert "get_station_city" in session.tools  # the weather domain: MCP_DOMAIN reached the server
            result = await session.call_tool("get_station_city", {"station_name": "Signal Hill"})
            assert json.loads(result.text) == {"city": "Norholm"}

    asyncio.run(scenario())
