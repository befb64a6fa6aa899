"""``python -m deepagent_magics.mcp``: run the deep agent's MCP server (see `server.main`)."""

from .server import main

main()
