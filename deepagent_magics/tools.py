"""The agent's tools: plain typed callables whose docstrings RLM puts in the prompt.

Each tool acts on the current session's run and workspace. A user mistake inside
a tool (a bad path, an edit that does not apply) comes back as a string starting
with ``Error:``, so the agent can read it and carry on.
"""

from __future__ import annotations

import functools
import json
from typing import Any, Callable

from . import session as _session
from .workspace import WorkspaceError

TODO_STATUSES = ("pending", "in_progress", "completed")


def _tool(func: Callable[..., Any]) -> Callable[..., Any]:
    """Record the call on the run and turn a tool error into an ``Error: ...`` string."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        run = _session.current().run
        try:
            result = func(*args, **kwargs)
        except WorkspaceError as exc:
            run.record_tool_call(func.__name__, _short_args(kwargs), error=str(exc))
            return str(exc)
        except (ValueError, TypeError, OSError) as exc:
            message = f"Error: {exc}"
            run.record_tool_call(func.__name__, _short_args(kwargs), error=message)
            return message
        run.record_tool_call(func.__name__, _short_args(kwargs))
        return result

    return wrapper


def _short_args(kwargs: dict[str, Any], limit: int = 80) -> dict[str, str]:
    out = {}
    for key, value in kwargs.items():
        text = value if isinstance(value, str) else repr(value)
        out[key] = text if len(text) <= limit else text[: limit - 3] + "..."
    return out


# --------------------------------------------------------------------------- todos
@_tool
def write_todos(todos: list[dict[str, str]] | str) -> str:
    """Replace the todo list. `todos` is a list of {"content": str, "status": "pending"|"in_progress"|"completed"} (or that list as a JSON string). Keep exactly one item in_progress while you work, and mark items completed as soon as they are done."""
    items = _parse_todos(todos)
    _session.current().run.set_todos(items)
    done = sum(item["status"] == "completed" for item in items)
    return f"Todo list updated: {len(items)} items, {done} completed."


@_tool
def read_todos() -> list[dict[str, str]]:
    """Return the current todo list as a list of {"content", "status"} dicts."""
    return [dict(item) for item in _session.current().run.todos]


def _parse_todos(todos: Any) -> list[dict[str, str]]:
    if isinstance(todos, str):
        try:
            todos = json.loads(todos)
        except json.JSONDecodeError as exc:
            raise ValueError(f"todos is not valid JSON: {exc}") from None
    if not isinstance(todos, list):
        raise ValueError('todos must be a list of {"content": ..., "status": ...} dicts')
    items = []
    for position, item in enumerate(todos):
        if not isinstance(item, dict) or "content" not in item:
            raise ValueError(f'todo #{position} must be a dict with "content" and "status"')
        status = str(item.get("status", "pending"))
        if status not in TODO_STATUSES:
            raise ValueError(f"todo #{position} has status {status!r}; use one of {', '.join(TODO_STATUSES)}")
        items.append({"content": str(item["content"]), "status": status})
    return items


# ----------------------------------------------------------------------- workspace
@_tool
def ls(path: str = ".") -> str:
    """List a workspace directory: one entry per line, directories end with '/', files show their size."""
    return _session.current().workspace.ls(path)


@_tool
def read_file(path: str, offset: int = 0, limit: int = 2000) -> str:
    """Read a workspace text file as numbered lines, starting after line `offset`, at most `limit` lines."""
    return _session.current().workspace.read_file(path, offset, limit)


@_tool
def write_file(path: str, content: str) -> str:
    """Create or overwrite a workspace file with `content` (atomically; parent folders are created)."""
    return _session.current().workspace.write_file(path, content)


@_tool
def edit_file(path: str, old: str, new: str, replace_all: bool = False) -> str:
    """Replace the exact text `old` with `new` in a workspace file. `old` must occur exactly once unless replace_all=True."""
    return _session.current().workspace.edit_file(path, old, new, replace_all)


@_tool
def glob(pattern: str) -> list[str]:
    """Workspace paths matching a glob pattern such as '**/*.md' (sorted, relative to the workspace)."""
    return _session.current().workspace.glob(pattern)


@_tool
def grep(pattern: str, path: str = ".", glob: str | None = None) -> str:
    """Search workspace files for a regular expression; one 'file:line: text' per match (capped). `glob` filters file names, e.g. '*.py'."""
    return _session.current().workspace.grep(pattern, path, glob)


TODO_TOOLS = [write_todos, read_todos]
WORKSPACE_TOOLS = [ls, read_file, write_file, edit_file, glob, grep]


def base_tools() -> list[Callable[..., Any]]:
    return TODO_TOOLS + WORKSPACE_TOOLS
