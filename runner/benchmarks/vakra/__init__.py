"""VAKRA: replay recorded tool-call trajectories against MCP servers, then judge (see benchmark.py).

Modules: dialogues (files, pairing, turns), servers (mcp_connection_config.yaml, server lifetimes),
coerce (arguments to schema), replay (capability rules), scoring (exact match, judges, aggregation),
policy (the policy-judge plug-in), task (one domain), report (the figures; runner/benchmarks/vakra/reporter.py
writes the VAKRA-shaped report file from them).
`bundled/` is a standalone MCP server with its own data, not part of the runner's code.
"""
