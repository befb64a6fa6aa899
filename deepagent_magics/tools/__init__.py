"""The agent's tools: plain typed callables whose docstrings RLM puts in the prompt.

- `todos`: ``write_todos``, ``read_todos``
- `files`: ``ls``, ``read_file``, ``write_file``, ``edit_file``, ``glob``, ``grep``
- `delegation`: ``delegate``, ``delegate_batched``, ``review`` (sub-agents in kernels of their own)

RLM adds ``llm_query``, ``llm_query_batched`` and ``SUBMIT`` itself.
"""

from typing import Any, Callable

from .files import WORKSPACE_TOOLS, edit_file, glob, grep, ls, read_file, write_file
from .todos import TODO_STATUSES, TODO_TOOLS, read_todos, write_todos
from .tool_call import tool


def base_tools() -> list[Callable[..., Any]]:
    """The todo and file tools (delegation registers its own set)."""
    return TODO_TOOLS + WORKSPACE_TOOLS


__all__ = ["base_tools", "tool", "TODO_STATUSES", "TODO_TOOLS", "WORKSPACE_TOOLS", "write_todos", "read_todos",
           "ls", "read_file", "write_file", "edit_file", "glob", "grep"]
