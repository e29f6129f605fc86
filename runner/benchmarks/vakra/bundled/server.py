"""The bundled VAKRA-style environment: a standalone MCP server over stdio (not part of the runner).

Run as its own process (`python server.py`, stdin/stdout speak MCP); the runner starts one per domain
through `mcp_connection_config.yaml`, exactly as it would start VAKRA's servers. It is written with the
`mcp` SDK's low-level server API and imports nothing from the runner.

Environment:
- `MCP_DOMAIN` (required): which domain to serve (`library` or `weather`; a file `domains/<d>.sql`).
  The domain's SQLite database is built in memory from that SQL file at start-up.
- `CAPABILITY_ID` (default 2): 1 = stateful data-handle tools keyed by a tool universe (`get_data` ...),
  2 and 3 = the domain's typed REST-style tools, 4 = those plus one retriever `query_<domain>` per domain.
- `VAKRA_BUNDLED_TEST_HOOKS=1`: also offer `crash_server` (the process exits) and `sleep_seconds`, so
  tests can exercise a crash and a timeout against a real process.

Every tool answers with one text block holding `json.dumps(result, indent=2)`, like VAKRA's servers; a
bad call answers "Error: ..." (flagged is_error) instead of a protocol error.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

HERE = Path(__file__).resolve().parent
DOMAINS = HERE / "domains"
JSON_TYPES: dict[str, type | tuple[type, ...]] = {"string": str, "integer": int, "number": (int, float),
                                                   "boolean": bool}


class ToolError(Exception):
    """A bad call: becomes an "Error: ..." answer."""


def load_database(domain: str) -> sqlite3.Connection:
    db = sqlite3.connect(":memory:")
    db.executescript((DOMAINS / f"{domain}.sql").read_text(encoding="utf-8"))
    return db


def check_arguments(spec: dict[str, Any], args: dict[str, Any]) -> dict[str, Any]:
    """Strict like a typed REST endpoint: a number sent as a string is refused (that is what coercion fixes)."""
    out = {}
    for name, param in spec.items():
        if name not in args:
            raise ToolError(f"missing required parameter '{name}'")
        value = args[name]
        expected = JSON_TYPES[param["type"]]
        if isinstance(value, bool) and param["type"] != "boolean" or not isinstance(value, expected):
            raise ToolError(f"parameter '{name}' must be of type {param['type']}, got {json.dumps(value)}")
        out[name] = value
    return out


def shape(rows: list[tuple[Any, ...]], columns: list[str], how: str) -> Any:
    if how == "value":
        return rows[0][0] if rows and rows[0][0] is not None else []
    if how == "column":
        return [r[0] for r in rows]
    if how == "row":
        return dict(zip(columns, rows[0], strict=True)) if rows else []
    return [dict(zip(columns, r, strict=True)) for r in rows]


class RestTools:
    """The domain's typed tools: each runs one parameterized SQL query."""

    def __init__(self, domain: str) -> None:
        self.db = load_database(domain)
        self.specs = {t["name"]: t for t in json.loads((DOMAINS / f"{domain}.tools.json").read_text())}

    def listing(self) -> list[types.Tool]:
        return [types.Tool(name=t["name"], description=t["description"],
                           input_schema={"type": "object", "properties": t["params"], "required": list(t["params"])})
                for t in self.specs.values()]

    def call(self, name: str, args: dict[str, Any]) -> Any:
        spec = self.specs[name]
        cur = self.db.execute(spec["sql"], check_arguments(spec["params"], args))
        rows = cur.fetchall()
        columns = [d[0] for d in cur.description]
        return {spec["result"]["key"]: shape(rows, columns, spec["result"]["shape"])}


class Retrievers:
    """`query_<domain>`: keyword-overlap search over each domain's few documents (a stand-in for ChromaDB)."""

    def __init__(self) -> None:
        self.docs = {p.name.split(".")[0]: json.loads(p.read_text()) for p in sorted(DOMAINS.glob("*.docs.json"))}

    def listing(self) -> list[types.Tool]:
        schema = {"type": "object", "required": ["question"], "properties": {
            "question": {"type": "string", "description": "What to look for."},
            "n_results": {"type": "integer", "description": "How many passages to return (default 3)."}}}
        return [types.Tool(name=f"query_{d}", description=f"Search the {d} documents.", input_schema=schema)
                for d in self.docs]

    def call(self, name: str, args: dict[str, Any]) -> Any:
        domain = name.removeprefix("query_")
        question = args.get("question")
        n = args.get("n_results", 3)
        if not isinstance(question, str) or not isinstance(n, int) or isinstance(n, bool):
            raise ToolError("query tools take question (string) and n_results (integer)")
        words = set(re.findall(r"[a-z0-9]+", question.lower()))
        scored = []
        for doc in self.docs[domain]:
            overlap = len(words & set(re.findall(r"[a-z0-9]+", doc["text"].lower())))
            scored.append((-overlap, doc["id"], doc))
        scored.sort(key=lambda s: (s[0], s[1]))
        return {"results": [{"id": d["id"], "text": d["text"], "distance": round(1 / (1 - s), 4),
                             "metadata": d["metadata"]} for s, _, d in scored[:n]]}


class DataHandles:
    """Capability-1 style tools: get_data loads a tool universe's table, later tools work on named handles.

    Handle numbers count up per session and restart only when the universe changes (as in VAKRA), which is
    why a replay must not share a session with another replay of the same dialogue.
    """

    OPS: dict[str, Callable[[Any, Any], bool]] = {
        "equal_to": lambda a, b: a == b, "not_equal_to": lambda a, b: a != b,
        "greater_than": lambda a, b: a > b, "less_than": lambda a, b: a < b,
        "contains": lambda a, b: str(b).lower() in str(a).lower()}
    AGGREGATES = ("count", "sum", "mean", "min", "max")

    def __init__(self, domain: str) -> None:
        self.domain = domain
        self.db = load_database(domain)
        self.universes = json.loads((HERE / "universes.json").read_text())
        self.universe: str | None = None
        self.tables: dict[str, list[dict[str, Any]]] = {}
        self.counters: dict[str, int] = {}

    def listing(self) -> list[types.Tool]:
        def tool(name: str, description: str, **params: tuple[str, str]) -> types.Tool:
            props = {k: {"type": t, "description": d} for k, (t, d) in params.items()}
            return types.Tool(name=name, description=description,
                              input_schema={"type": "object", "properties": props, "required": list(props)})

        label = ("string", "A data handle returned by an earlier call.")
        key = ("string", "A column name.")
        return [
            tool("get_data", "Load the data of a tool universe; returns a handle and a peek.",
                 tool_universe_id=("string", "The tool universe id.")),
            tool("filter_data", "Keep the records whose key compares true with value.", data_label=label,
                 key_name=key, operator=("string", "equal_to, not_equal_to, greater_than, less_than or contains"),
                 value=("string", "The value to compare with.")),
            tool("sort_data", "Sort the records by a key.", data_label=label, key_name=key,
                 ascending=("boolean", "True for ascending order.")),
            tool("aggregate_data", "count, sum, mean, min or max of a key.", data_label=label, key_name=key,
                 operation=("string", "count, sum, mean, min or max")),
            tool("retrieve_data", "The first values of a key.", data_label=label, key_name=key,
                 limit=("integer", "How many values.")),
        ]

    def _new_handle(self, kind: str, rows: list[dict[str, Any]]) -> str:
        self.counters[kind] = self.counters.get(kind, 0) + 1
        handle = f"{kind}_{self.counters[kind]}"
        self.tables[handle] = rows
        return handle

    def _rows(self, label: Any) -> list[dict[str, Any]]:
        if label not in self.tables:
            raise ToolError(f"unknown data handle {json.dumps(label)}")
        return self.tables[label]

    def call(self, name: str, args: dict[str, Any]) -> Any:
        specs = {t.name: t.input_schema["properties"] for t in self.listing()}
        args = check_arguments(specs[name], args)
        if name == "get_data":
            uid = args["tool_universe_id"]
            universe = self.universes.get(uid)
            if not isinstance(universe, dict) or universe["domain"] != self.domain:
                raise ToolError(f"no tool universe {json.dumps(uid)} in domain {self.domain}")
            if uid != self.universe:
                self.universe, self.tables, self.counters = uid, {}, {}
            cur = self.db.execute(universe["sql"])
            columns = [d[0] for d in cur.description]
            rows = [dict(zip(columns, r, strict=True)) for r in cur.fetchall()]
            handle = self._new_handle("retrieved_data", rows)
            details = [{"name": c, "dtype": type(rows[0][c]).__name__ if rows else "str",
                        "first_3_values": [r[c] for r in rows[:3]]} for c in columns]
            return {"handle": handle, "num_records": len(rows), "key_details": details}
        rows = self._rows(args["data_label"])
        column = args["key_name"]
        if rows and column not in rows[0]:
            raise ToolError(f"no key {json.dumps(column)}; keys are {', '.join(rows[0])}")
        if name == "filter_data":
            op = self.OPS.get(args["operator"])
            if op is None:
                raise ToolError(f"unknown operator {json.dumps(args['operator'])}")
            value: Any = args["value"]
            kept = [r for r in rows if op(r[column], type(r[column])(value) if args["operator"] != "contains"
                                          and isinstance(r[column], (int, float)) else value)]
            return {"handle": self._new_handle("filtered_data", kept), "num_records": len(kept)}
        if name == "sort_data":
            ordered = sorted(rows, key=lambda r: r[column], reverse=not args["ascending"])
            return {"handle": self._new_handle("sorted_data", ordered), "num_records": len(ordered)}
        values = [r[column] for r in rows]
        if name == "retrieve_data":
            return {"values": values[:args["limit"]]}
        operation = args["operation"]
        if operation not in self.AGGREGATES:
            raise ToolError(f"unknown operation {json.dumps(operation)}")
        if operation == "count":
            return {"result": len(values)}
        if not values:
            return {"result": []}
        aggregate: dict[str, Callable[[list[Any]], Any]] = {"sum": sum, "min": min, "max": max,
                                                            "mean": lambda v: sum(v) / len(v)}
        result = aggregate[operation](values)
        return {"result": round(result, 4) if isinstance(result, float) else result}


def build_server(domain: str, capability: str, test_hooks: bool) -> Server:
    if capability == "1":
        providers: list[Any] = [DataHandles(domain)]
    else:
        providers = [RestTools(domain)] + ([Retrievers()] if capability == "4" else [])
    owner = {tool.name: p for p in providers for tool in p.listing()}
    hooks = [types.Tool(name="crash_server", description="Test hook: the server process exits.",
                        input_schema={"type": "object", "properties": {}}),
             types.Tool(name="sleep_seconds", description="Test hook: answer after a delay.",
                        input_schema={"type": "object", "properties": {"seconds": {"type": "number"}},
                                      "required": ["seconds"]})] if test_hooks else []

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[t for p in providers for t in p.listing()] + hooks)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        name, args = params.name, dict(params.arguments or {})
        try:
            if test_hooks and name == "crash_server":
                os._exit(3)
            if test_hooks and name == "sleep_seconds":
                await anyio.sleep(float(args.get("seconds", 0)))
                result: Any = {"slept": args.get("seconds")}
            elif name in owner:
                result = owner[name].call(name, args)
            else:
                raise ToolError(f"unknown tool {json.dumps(name)} in domain {domain}")
        except (ToolError, sqlite3.Error, TypeError, ValueError) as exc:
            return types.CallToolResult(content=[types.TextContent(text=f"Error: {exc}")], is_error=True)
        return types.CallToolResult(content=[types.TextContent(text=json.dumps(result, indent=2))])

    return Server(f"vakra-bundled-{domain}", on_list_tools=list_tools, on_call_tool=call_tool)


def main() -> None:
    domain = os.environ.get("MCP_DOMAIN", "")
    available = sorted(p.stem for p in DOMAINS.glob("*.sql"))
    if domain not in available:
        print(f"vakra bundled server: unknown MCP_DOMAIN {domain!r}; this server serves {', '.join(available)}",
              file=sys.stderr)
        sys.exit(2)
    server = build_server(domain, os.environ.get("CAPABILITY_ID", "2"),
                          os.environ.get("VAKRA_BUNDLED_TEST_HOOKS") == "1")

    async def serve() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(serve)


if __name__ == "__main__":
    main()
