"""The todo tools: the agent's plan, a list of items each pending, in progress or completed.

The list lives on the run (``run.todos``, a `todos` event on every change), so the
dashboard shows it and the record keeps it.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from ..core.loop.capability import ToolLine
from ..core.run import session as _session
from .tool_call import tool

TODO_STATUSES = ("pending", "in_progress", "completed")


@tool
def write_todos(todos: list[dict[str, str]] | str) -> str:
    """Replace your plan: [{"content": str, "status": "pending"|"in_progress"|"completed"}].

    ``todos`` may also be that list as a JSON string. Keep exactly one item in_progress while you
    work, and mark items completed as soon as they are done. Returns a one-line confirmation."""
    items = _parse_todos(todos)
    _session.current().run.set_todos(items)
    done = sum(item["status"] == "completed" for item in items)
    return f"Todo list updated: {len(items)} items, {done} completed."


@tool
def read_todos() -> list[dict[str, str]]:
    """Your plan."""
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


TODO_TOOLS: list[Callable[..., Any]] = [write_todos, read_todos]
TODO_LINES = {"write_todos": ToolLine(order=10),  # first: the plan heads the tool list
              "read_todos": ToolLine(order=10, beside="write_todos", needs="write_todos")}
write_todos.writes = True  # refused to a read-only agent (tool_call)
