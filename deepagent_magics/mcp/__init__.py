"""Agent out: an MCP server that lets other agents hand work to a deep agent and read what it did.

``python -m deepagent_magics.mcp`` (or ``deepagent-mcp``) serves ``run_task``, ``list_runs`` and
``get_run`` over stdio (or streamable HTTP), so Claude Code, jupyter-ai personas or any MCP
client can use ours. See docs/mcp.md; the server is built in `server`.
"""

from .server import build_server, main

__all__ = ["build_server", "main"]
