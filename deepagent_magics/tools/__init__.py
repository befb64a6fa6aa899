"""The agent's tools: plain typed callables whose docstrings RLM puts in the prompt.

- `todos`: ``write_todos``, ``read_todos``
- `files`: ``ls``, ``read_file``, ``write_file``, ``edit_file``, ``glob``, ``grep``
- `delegation`: ``delegate``, ``delegate_batched``, ``review`` (sub-agents in kernels of their own)

RLM adds ``llm_query``, ``llm_query_batched`` and ``SUBMIT`` itself.
"""

from .._compat import old_paths

__path__ = old_paths(__path__)  # tools.mcp: now mcp_servers

from typing import Any, Callable

from ..core.loop.capability import Capability
from ..core.run.event_kinds import FILE_WRITTEN, TODOS
from .files import WORKSPACE_LINES, WORKSPACE_TOOLS, edit_file, glob, grep, ls, read_file, write_file
from .todos import TODO_LINES, TODO_STATUSES, TODO_TOOLS, read_todos, write_todos
from .tool_call import tool

TODOS_AND_FILES = Capability("todos_and_files", tools=TODO_TOOLS + WORKSPACE_TOOLS,
                             lines={**TODO_LINES, **WORKSPACE_LINES}, events=(TODOS, FILE_WRITTEN))


def base_tools() -> list[Callable[..., Any]]:
    """The todo and file tools (delegation registers its own set)."""
    return TODO_TOOLS + WORKSPACE_TOOLS


__all__ = ["TODOS_AND_FILES", "base_tools", "tool", "TODO_STATUSES", "TODO_TOOLS", "WORKSPACE_TOOLS", "write_todos", "read_todos",
           "ls", "read_file", "write_file", "edit_file", "glob", "grep"]
