"""The ``@tool`` decorator: what every built-in tool does around its own work.

Each call is recorded on the current run (a `tool_call` event), and a user mistake
inside a tool (a bad path, an edit that does not apply, a malformed argument) comes
back as a string starting with ``Error:``, so the agent reads it and carries on.
The arguments are recorded short, and scrubbed of secrets before they are cut
(a cut secret would no longer match the whole value).
"""

from __future__ import annotations

import functools
import reprlib
from typing import Any, Callable

from ..core.run import session as _session
from ..core.run.secrets import scrub
from ..core.workspace.workspace import WorkspaceError


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
        text = value if isinstance(value, str) else _bounded_repr(value)
        text = scrub(text[: limit + 256])  # any piece of a secret, even one cut here, is found
        out[key] = text if len(text) <= limit else text[: limit - 3] + "..."
    return out


def _bounded_repr(value: Any, limit: int = 4000) -> str:
    """``repr(value)``, but a huge list is not rendered whole only to be cut to 80 characters."""
    shortener = reprlib.Repr()
    shortener.maxstring = shortener.maxother = shortener.maxlong = limit
    shortener.maxlist = shortener.maxtuple = shortener.maxdict = shortener.maxset = 50
    try:
        return shortener.repr(value)
    except Exception as exc:  # a repr that raises must not fail the tool call
        return f"<{type(value).__name__}: repr failed: {type(exc).__name__}>"
