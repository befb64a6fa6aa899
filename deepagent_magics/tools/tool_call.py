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

from ..core.loop.tool_binding import ANSWERS_ERRORS  # marks a tool whose bad calls come back as Error: text
from ..core.policy.spend import CapReached
from ..core.run import session as _session
from ..core.run.stopping import StopRun
from ..core.run.secrets import scrub
from ..core.workspace.workspace import WorkspaceError


MESSAGE_CHARS = 600  # an error message quoting an argument's repr stays this short


def tool(func: Callable[..., Any]) -> Callable[..., Any]:
    """Record the call on the run and turn any error into an ``Error: ...`` string (the tool never raises
    at the model). A run's stop and a spend cap still end the run; a tool marked ``writes`` is refused to
    a read-only agent (the reviewer)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        session = _session.current()
        run = session.run
        if getattr(wrapper, "writes", False) and getattr(session.agent, "read_only", False):
            message = (f"Error: {func.__name__}() is not available to you: your tools only read. Report what "
                       "needs changing in your verdict; the author fixes it.")
            run.record_tool_call(func.__name__, _short_args(kwargs), error=message)
            return message
        try:
            result = func(*args, **kwargs)
        except (StopRun, CapReached):
            raise
        except WorkspaceError as exc:
            message = _bounded(str(exc))
        except (ValueError, TypeError, OSError) as exc:
            message = _bounded(f"Error: {exc}")
        except Exception as exc:  # noqa: BLE001 - whatever a tool hits is the model's to read, not to crash on
            message = _bounded(f"Error: {type(exc).__name__}: {exc}")
        else:
            run.record_tool_call(func.__name__, _short_args(kwargs))
            return result
        run.record_tool_call(func.__name__, _short_args(kwargs), error=message)
        return message

    wrapper.__annotations__ = {}  # no types for DSPy's Tool to check first: this wrapper answers bad arguments
    setattr(wrapper, ANSWERS_ERRORS, True)
    return wrapper


def _bounded(message: str) -> str:
    return message if len(message) <= MESSAGE_CHARS else message[: MESSAGE_CHARS - 1] + "…"


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
