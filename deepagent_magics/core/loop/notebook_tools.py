"""The user's own functions as agent tools (``--tools f,g``, ``SubAgentType(tools=[...])``).

A notebook function keeps its name, signature and docstring (what the agent reads), and
runs where it was defined: in the notebook's process, with the notebook's state, also when
a sub-agent in another kernel calls it (over the kernel's tool bridge). Around it:

- a coroutine it returns is awaited (`coroutines.run_coroutine`, in a copy of the caller's context);
- an exception it raises comes back to the agent as an ``Error: ...`` string, which the agent
  reads and acts on: it never ends the run (a KeyboardInterrupt, or a stopped sub-agent's
  cancellation, still does: they are not the tool's failure);
- the call is recorded on the run (a ``tool_call`` event), its arguments cut short.
"""

from __future__ import annotations

import functools
import inspect
import keyword
from typing import Any, Callable

from ..run import session as _session
from ...coroutines import run_coroutine
from ..run.secrets import scrub

MARK = "__deepagent_notebook_tool__"
# Names a tool may not take: the REPL's own (RLM's), the facade's, the agent's inputs.
RESERVED = frozenset({"SUBMIT", "llm_query", "llm_query_batched", "print", "dspy", "task", "context",
                      "notebook_variables"})


def taken_names() -> set[str]:
    """The names of every built-in tool (the registered tool sets) and the reserved ones."""
    from . import extensions

    return {tool.__name__ for tool in extensions.default().builtin_tools()} | set(RESERVED)


ERROR_CHARS = 500


def check_tool(func: Any, label: str = "tool", name: str | None = None) -> Callable[..., Any]:
    """``func`` if it can be offered as a tool (under ``name``, default its own): a function with a
    docstring and a signature. (A callable object's docstring is its class's, so only functions,
    methods and builtins are taken.)"""
    name = name or getattr(func, "__name__", None)
    if not callable(func):
        raise ValueError(f"{label} {name or repr(func)[:60]!r} is not callable")
    if not inspect.isroutine(func):
        raise ValueError(f"{label} {name or repr(func)[:60]!r} is a {type(func).__name__}, not a function; "
                         "wrap it in a def with a docstring")
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
        raise ValueError(f"{label} {repr(func)[:60]} has no usable name; define it with def")
    if name.startswith("_"):
        raise ValueError(f"{label} {name!r}: a tool's name may not start with '_'")
    if name in taken_names():
        raise ValueError(f"{label} {name!r}: that is a built-in tool's or the REPL's own name; rename your function")
    if not (inspect.getdoc(func) or "").strip():
        raise ValueError(f"{label} {name!r} has no docstring; add one saying what it does "
                         "(the agent reads it to know when and how to call it)")
    try:
        inspect.signature(func)
    except (TypeError, ValueError):
        raise ValueError(f"{label} {name!r} has no readable signature; wrap it in a def") from None
    return func


def as_tool(func: Callable[..., Any], name: str | None = None) -> Callable[..., Any]:
    """``func`` as an agent tool named ``name`` (default: its own name; checked by `check_tool`)."""
    check_tool(func, name=name)
    name = name or func.__name__
    if getattr(func, MARK, False) and func.__name__ == name:
        return func

    @functools.wraps(func)
    def tool(*args: Any, **kwargs: Any) -> Any:
        try:
            value = func(*args, **kwargs)
            if inspect.isawaitable(value):
                value = run_coroutine(value, copy_context=True)
        except (Exception, SystemExit) as exc:  # sys.exit() in a tool is its failure, not the run's end
            message = f"Error: {name}() raised {type(exc).__name__}: {_short(exc)}"
            _record(name, kwargs, message)
            return message
        _record(name, kwargs, None)
        return value

    tool.__signature__ = inspect.signature(func)  # type: ignore[attr-defined]
    tool.__name__ = tool.__qualname__ = name
    setattr(tool, MARK, True)
    return tool


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or "(no message)"
    text = scrub(text)
    return text if len(text) <= ERROR_CHARS else text[: ERROR_CHARS - 1] + "…"


def _record(name: str, kwargs: dict[str, Any], error: str | None) -> None:
    session = _session.active()
    if session is None:
        return
    args = {key: scrub(value if isinstance(value, str) else repr(value)[:200])[:80] for key, value in kwargs.items()}
    try:
        session.run.record_tool_call(name, args, error=error)
    except Exception:  # recording never fails the tool
        pass
