"""Tool environments a benchmark replays calls against (today: MCP servers over stdio, `mcp_env`)."""
