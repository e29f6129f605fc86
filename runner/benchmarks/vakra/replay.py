"""Replaying a dialogue's tool calls against the domain's MCP server: the fresh responses the scorer reads.

Predicted responses in the files are never trusted; the predicted calls and the ground-truth calls are
executed again, predicted first. Capability rules (from VAKRA's evaluator):
- capability 1 (BI APIs): the ground truth's leading `initialize_active_data` is dropped and both sides
  start with `get_data(tool_universe_id=<uuid>)`; each replay gets its own server, because the data-handle
  names it hands out count up per session (a shared session made equal calls answer differently).
- capability 4 (multi-turn): every ground-truth turn is replayed, in order; retriever calls (`query_*`)
  are reduced to the list of chunk texts, and the ground truth's retrieval is read from the stored
  `tool_response` instead of being run again.
A call the server answers with an error (unknown tool, bad arguments, a tool error result, a JSON-RPC
error) gets an "Error: ..." response, as in VAKRA, and the dialogue is still scored: that is data about the
call. A call the server never answers (it crashed, closed its pipe, hung past `tool_timeout`, or could not
start) raises `ReplayFault`: the dialogue is then an error, asked again on re-run, never scored on
responses that say nothing about its calls (a ground-truth call turned into "Error: ..." by a crash used to
score a right prediction wrong).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from runner.benchmarks.vakra.coerce import coerce_arguments, parse_arguments
from runner.benchmarks.vakra.dialogues import Call, stored_responses, tool_calls
from runner.benchmarks.vakra.mcp_env import MCPSession
from runner.benchmarks.vakra.servers import DomainServers, ServerUnavailable

RETRIEVER_PREFIX = "query_"
SETUP_TOOL = "initialize_active_data"
DATA_TOOL = "get_data"


class ReplayFault(ServerUnavailable):
    """A call got no answer because of the MCP server or its transport; the message is one line."""


@dataclass
class Outcome:
    """One executed call: what was sent and the response the scorer compares."""

    name: str
    arguments: Any
    response: str
    error: bool = False
    """The response is an error (from the tool, or because the call could not be made)."""
    source: str = "replay"
    """`replay` (executed now), `stored` (read from the file) or `none`."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form for the samples file."""
        return asdict(self)


class Replayer:
    """Executes one domain's calls under one capability's rules."""

    def __init__(self, servers: DomainServers | None, capability: str, tool_timeout: float) -> None:
        self.servers = servers
        self.capability = capability
        self.tool_timeout = tool_timeout

    @property
    def stateful(self) -> bool:
        return self.capability == "capability_bi_apis"

    @property
    def retrievers_as_texts(self) -> bool:
        return self.capability == "capability_multiturn"

    def calls(self, uuid: str, turn: dict[str, Any], *, first: bool, ground_truth: bool) -> list[Call]:
        """The calls to execute for one turn, after the capability's set-up rules."""
        calls = tool_calls(turn)
        if self.stateful and first:
            if ground_truth and calls and calls[0].name == SETUP_TOOL:
                calls = calls[1:]
            calls = [Call(DATA_TOOL, {"tool_universe_id": uuid}), *calls]
        return calls

    async def prediction(self, uuid: str, turn: dict[str, Any]) -> list[Outcome]:
        """Replay the predicted turn."""
        if self.servers is None:
            return _as_stored(tool_calls(turn), stored_responses(turn))
        calls = self.calls(uuid, turn, first=True, ground_truth=False)
        async with self.servers.session() as session:
            return [await self._predicted(session, call, f"predicted call {i + 1} of {len(calls)}")
                    for i, call in enumerate(calls)]

    async def ground_truth(self, uuid: str, turns: list[dict[str, Any]]) -> list[list[Outcome]]:
        """Replay every ground-truth turn in order (one server for the whole dialogue)."""
        if self.servers is None:
            return [_as_stored(tool_calls(turn), stored_responses(turn)) for turn in turns]
        per_turn = [(turn, self.calls(uuid, turn, first=i == 0, ground_truth=True)) for i, turn in enumerate(turns)]
        async with self.servers.session() as session:
            out = []
            for n, (turn, calls) in enumerate(per_turn):
                stored = stored_responses(turn)
                out.append([await self._ground_truth(session, call, stored, i,
                                                     f"ground-truth call {i + 1} of {len(calls)} (turn {n + 1})")
                            for i, call in enumerate(calls)])
            return out

    async def _predicted(self, session: MCPSession, call: Call, which: str) -> Outcome:
        outcome = await self.execute(session, call, which)
        if self.retrievers_as_texts and call.name.startswith(RETRIEVER_PREFIX) and not outcome.error:
            outcome.response = _texts(retrieved_chunks(outcome.response))
        return outcome

    async def _ground_truth(self, session: MCPSession, call: Call, stored: list[Any], index: int,
                            which: str) -> Outcome:
        if self.retrievers_as_texts and call.name.startswith(RETRIEVER_PREFIX):
            # VAKRA scores retrieval against the chunks stored with the ground truth; only when none are
            # stored is the retrieval run again.
            chunks = retrieved_chunks(stored[index]) if index < len(stored) and stored[index] is not None else None
            if chunks is not None:
                return Outcome(call.name, call.arguments, _texts(chunks), source="stored")
            return await self._predicted(session, call, which)
        return await self.execute(session, call, which)

    async def execute(self, session: MCPSession, call: Call, which: str = "call") -> Outcome:
        """Run one call: arguments parsed and coerced to the tool's schema; the server's errors become error
        responses; ReplayFault (naming `which` call it was) when the server gave no answer."""
        try:
            arguments = parse_arguments(call.arguments)
        except ValueError as exc:
            return Outcome(call.name, call.arguments, f"Error: {exc}", error=True)
        if not call.name:
            return Outcome(call.name, arguments, "Error: the tool call has no tool name", error=True)
        tool = session.tools.get(call.name)
        if tool is None:
            tool = (await session.refresh_tools()).get(call.name)  # some servers add tools as state changes
        if tool is None:
            return Outcome(call.name, arguments, f"Error: the MCP server offers no tool named {call.name!r}",
                           error=True)
        arguments = coerce_arguments(arguments, tool.input_schema)
        result = await session.call_tool(call.name, arguments, timeout=self.tool_timeout)
        if result.fault:
            raise ReplayFault(f"{result.error} ({which}: {call.name}); the dialogue is not scored on a failed "
                              "environment; re-run with the same hydra.run.dir once the server is healthy")
        if self.stateful and call.name == DATA_TOOL:
            await session.refresh_tools()  # a new tool universe may bring its own tools
        if result.error is not None:
            return Outcome(call.name, arguments, f"Error: {result.error}", error=True)
        return Outcome(call.name, arguments, result.text, error=result.is_error)


def retrieved_chunks(response: Any) -> list[Any] | None:
    """Chunks of a retriever response: `{"results": [...]}`, a list of chunks, or JSON text of either."""
    if isinstance(response, str):
        try:
            response = json.loads(response)
        except json.JSONDecodeError:
            return None
    if isinstance(response, dict):
        response = response.get("results")
    return response if isinstance(response, list) else None


def _texts(chunks: list[Any] | None) -> str:
    # VAKRA compares retrieval by chunk texts only (ids and distances vary between index builds).
    texts = [c.get("text", "") if isinstance(c, dict) else str(c) for c in chunks or []]
    return json.dumps(texts, ensure_ascii=False)


def _as_stored(calls: list[Call], responses: list[Any]) -> list[Outcome]:
    """Without replay (benchmark.replay=false) the file's own responses are scored, padded with ''."""
    out = []
    for i, call in enumerate(calls):
        value = responses[i] if i < len(responses) else None
        text = value if isinstance(value, str) else "" if value is None else json.dumps(value, indent=2)
        out.append(Outcome(call.name, call.arguments, text, source="stored" if value is not None else "none"))
    return out
