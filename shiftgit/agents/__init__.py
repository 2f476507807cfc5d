"""Agent integrations: hook entry points, the session brief, `init --agent`, the MCP server."""
