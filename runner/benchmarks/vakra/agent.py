"""The model under test as a VAKRA agent: it answers a dialogue's last turn with the domain's MCP tools.

A tool-calling loop through the runner's one call layer (`Endpoint.complete`: cache, retries, concurrency,
cost). The server's tools are offered as function tools (shortlisted when there are more than the
provider accepts); each call the model asks for runs on the live server, in the order the model gave
them, and its result goes back as a tool message. The loop ends at a reply without tool calls (the
answer), or after `max_steps` model calls (recorded; the answer is then empty, as VAKRA's agent gives
none). A failing tool (unknown name, bad arguments, an error) is the model's to handle: it reads the
"Error: ..." text and goes on. A server that dies, hangs past `tool_timeout` or cannot start ends the
dialogue as an error (asked again on re-run): the model is never handed an infrastructure fault as a tool's
answer.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from runner.benchmarks.vakra.coerce import parse_arguments
from runner.benchmarks.vakra.dialogues import Call
from runner.benchmarks.vakra.mcp_env import MCPSession, Tool
from runner.benchmarks.vakra.replay import Outcome, Replayer, ReplayFault
from runner.benchmarks.vakra.shortlist import Shortlist, shortlist
from runner.errors import CallError
from runner.types import Usage

if TYPE_CHECKING:
    from runner.models.litellm_model import Endpoint


class AgentAborted(Exception):
    """The dialogue cannot go on (its MCP server stopped); `trajectory` holds what happened until then."""

    def __init__(self, message: str, trajectory: Trajectory) -> None:
        super().__init__(message)
        self.trajectory = trajectory


@dataclass
class Trajectory:
    """Everything one agent run did: kept whole in the sample record."""

    messages: list[dict[str, Any]]
    calls: list[dict[str, Any]] = field(default_factory=list)
    """Each call the model made, in order: id, name, arguments (as parsed), response, error, step."""
    prelude: list[dict[str, Any]] = field(default_factory=list)
    """Calls the runner made before the model's first turn (capability 1's `get_data`)."""
    steps: int = 0
    """Model calls made."""
    answer: str = ""
    max_steps_reached: bool = False
    offered: list[str] = field(default_factory=list)
    shortlist: dict[str, Any] | None = None
    usage: Usage = field(default_factory=lambda: Usage(cost=0.0))
    served_model: str | None = None
    duration_s: float = 0.0
    turns: list[dict[str, Any]] = field(default_factory=list)
    """Each model call's ending: step, `finish_reason` and reasoning tokens (the final reply's is the record's)."""
    finish_reason: str | None = None
    reasoning: str | None = None
    """The final reply's reasoning (never in `answer`)."""

    def tool_calls(self) -> list[dict[str, Any]]:
        """The model's calls in VAKRA's submission form (`sequence.tool_call`)."""
        return [{"name": c["name"], "arguments": c["arguments"]} for c in self.calls]

    def to_dict(self) -> dict[str, Any]:
        return {"messages": self.messages, "calls": self.calls, "prelude": self.prelude, "steps": self.steps,
                "answer": self.answer, "max_steps_reached": self.max_steps_reached, "offered_tools": self.offered,
                "shortlist": self.shortlist, "duration_s": round(self.duration_s, 3), "turns": self.turns}


def function_tools(tools: Sequence[Tool]) -> list[dict[str, Any]]:
    """MCP tools as OpenAI-style function tools."""
    out = []
    for tool in tools:
        schema = tool.input_schema if isinstance(tool.input_schema, dict) and tool.input_schema else \
            {"type": "object", "properties": {}}
        out.append({"type": "function",
                    "function": {"name": tool.name, "description": tool.description, "parameters": schema}})
    return out


def input_turns(item: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The turns of an agent-input item; ValueError (one line) when it cannot be asked."""
    dialogue = item.get("dialogue")
    turns = dialogue.get("turns") if isinstance(dialogue, dict) else None
    if not isinstance(turns, list) or not turns or not all(isinstance(t, dict) for t in turns):
        raise ValueError("the agent input has no turns ('dialogue.turns' must be a non-empty list of turn objects)")
    if not str(turns[-1].get("query") or "").strip():
        raise ValueError("the last turn of the agent input has no 'query'")
    return turns


def conversation(item: Mapping[str, Any], system_prompt: str) -> list[dict[str, Any]]:
    """The messages before the agent's first step: the system prompt, the tool-use policy as its own
    system message, every earlier turn as a user query and the assistant's answer, then the last query."""
    messages: list[dict[str, Any]] = []
    if system_prompt:
        messages.append({"role": "system", "content": system_prompt})
    policy = item.get("additional_instructions")
    if isinstance(policy, str) and policy.strip():
        messages.append({"role": "system", "content": f"Tool usage constraint: {policy.strip()}"})
    turns = input_turns(item)
    for turn in turns[:-1]:
        messages.append({"role": "user", "content": str(turn.get("query") or "")})
        answer = turn.get("answer")
        if answer not in (None, "", []):
            text = answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
            messages.append({"role": "assistant", "content": text})
    messages.append({"role": "user", "content": str(turns[-1].get("query") or "")})
    return messages


class Agent:
    """Runs one dialogue; shared by every dialogue of a domain (it keeps no per-dialogue state)."""

    def __init__(self, replayer: Replayer, *, system_prompt: str, max_steps: int = 20, max_tools: int = 128,
                 shortlist_method: str = "bm25", embedding_model: str | None = None) -> None:
        self.replayer = replayer
        self.system_prompt = system_prompt
        self.max_steps = int(max_steps)
        self.max_tools = int(max_tools)
        self.shortlist_method = shortlist_method
        self.embedding_model = embedding_model

    async def run(self, model: Endpoint, session: MCPSession, item: Mapping[str, Any], *,
                  params: Mapping[str, Any] | None = None, prelude: Sequence[Call] = ()) -> Trajectory:
        """Answer the item's last turn on `session`; AgentAborted if the server stops meanwhile."""
        started = time.monotonic()
        trajectory = Trajectory(messages=conversation(item, self.system_prompt))
        try:
            await self._prelude(session, prelude, trajectory)
            query = "\n".join(m["content"] for m in trajectory.messages if m["role"] == "user")
            chosen = await self._shortlist(query, list(session.tools.values()))
            trajectory.offered = [t.name for t in chosen.tools]
            if chosen.method != "all":
                trajectory.shortlist = {"method": chosen.method, "kept": len(chosen.tools), "of": chosen.offered_of}
            tools = function_tools(chosen.tools)
            while trajectory.steps < self.max_steps:
                out = await model.complete(list(trajectory.messages), params=dict(params or {}), tools=tools or None)
                trajectory.steps += 1
                trajectory.usage = trajectory.usage + out.usage
                trajectory.served_model = out.model
                trajectory.turns.append({"step": trajectory.steps, "finish_reason": out.finish_reason,
                                         "reasoning_tokens": out.usage.reasoning_tokens})
                trajectory.finish_reason, trajectory.reasoning = out.finish_reason, out.reasoning
                if not out.tool_calls:
                    trajectory.answer = out.text
                    trajectory.messages.append({"role": "assistant", "content": out.text})
                    break
                trajectory.messages.append({"role": "assistant", "content": out.text or None, "tool_calls": [
                    {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
                    for c in out.tool_calls]})
                for call in out.tool_calls:  # in the model's order: later calls may depend on earlier ones
                    outcome = await self._execute(session, call["name"], call["arguments"], trajectory)
                    trajectory.calls.append({"id": call["id"], "name": call["name"],
                                             "arguments": _as_written(call["arguments"]),
                                             "response": outcome.response, "error": outcome.error,
                                             "step": trajectory.steps})
                    trajectory.messages.append({"role": "tool", "tool_call_id": call["id"],
                                                "content": outcome.response})
            else:
                trajectory.max_steps_reached = True
        except CallError as exc:
            raise AgentAborted(f"model call failed after {exc.attempts} attempt(s): {exc}", trajectory) from None
        finally:
            trajectory.duration_s = time.monotonic() - started
        return trajectory

    async def _prelude(self, session: MCPSession, prelude: Sequence[Call], trajectory: Trajectory) -> None:
        """Calls the runner makes for the agent (VAKRA's capability 1 loads the dialogue's data first); the
        model sees each as a call it made and its result, so it knows the data handle to use."""
        for i, call in enumerate(prelude):
            outcome = await self._execute(session, call.name, call.arguments, trajectory)
            trajectory.prelude.append(outcome.to_dict())
            call_id = f"call_setup_{i}"
            trajectory.messages.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": call_id, "type": "function",
                 "function": {"name": call.name, "arguments": json.dumps(call.arguments)}}]})
            trajectory.messages.append({"role": "tool", "tool_call_id": call_id, "content": outcome.response})

    async def _shortlist(self, query: str, tools: list[Tool]) -> Shortlist:
        if len(tools) <= self.max_tools:
            return shortlist(query, tools, self.max_tools, self.shortlist_method)
        # Embedding the tools is CPU work (seconds for a large domain the first time): off the event loop.
        return await asyncio.to_thread(shortlist, query, tools, self.max_tools, self.shortlist_method,
                                       self.embedding_model)

    async def _execute(self, session: MCPSession, name: str, arguments: Any, trajectory: Trajectory) -> Outcome:
        try:
            outcome = await self.replayer.execute(session, Call(name, arguments), f"the agent's call {name}")
        except ReplayFault as exc:  # never handed to the model as a tool's answer: it says nothing about the call
            raise AgentAborted(f"the MCP server stopped during the dialogue ({str(exc)[:400]}); it is restarted "
                               "for the next dialogue", trajectory) from None
        if not session.alive:
            raise AgentAborted(f"the MCP server stopped during the dialogue ({outcome.response[:300]}); it is "
                               "restarted for the next dialogue", trajectory)
        return outcome


def _as_written(arguments: str) -> Any:
    """The arguments object the model wrote; its raw text when that is not a JSON object (the replay then
    reports it as the model's error, as VAKRA's evaluator would)."""
    try:
        return parse_arguments(arguments)
    except ValueError:
        return arguments
