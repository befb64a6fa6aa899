"""The ``@tool`` decorator: what every built-in tool does around its own work.

Each call is recorded on the current run (a `tool_call` event), and a user mistake
inside a tool (a bad path, an edit that does not apply, a malformed argument) comes
back as a string starting with ``Error:``, so the agent reads it and carries on.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from ..core import session as _session
from ..core.workspace import WorkspaceError


def tool(func: Callable[..., Any]) -> Callable[..., Any]:
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
