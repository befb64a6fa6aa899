"""What the tools act on during one run, and how interpreters call them.

`dspy.RLM` is built once per agent with a fixed list of tools (so an optimiser
can tune it and `save` can store it). The tools find the run they belong to
through `current()`, which each interpreter sets around every tool call it makes,
from whatever thread the agent's code calls it.
"""

from __future__ import annotations

import contextvars
import inspect
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from .run import Run
from .workspace import Workspace

if TYPE_CHECKING:
    from .agent import DeepAgent

_current: contextvars.ContextVar["Session | None"] = contextvars.ContextVar("deepagent_session", default=None)


@dataclass
class Session:
    run: Run
    workspace: Workspace
    agent: "DeepAgent | None" = None
    extras: dict[str, Any] = field(default_factory=dict)

    def wrap_tool(self, name: str, tool: Callable[..., Any]) -> Callable[..., Any]:
        """``tool`` as agent code calls it: positional or keyword arguments, run inside this session."""
        inner = accept_positional(name, tool)
        session = self

        def call(*args: Any, **kwargs: Any) -> Any:
            token = _current.set(session)
            try:
                return inner(*args, **kwargs)
            finally:
                _current.reset(token)

        copy_metadata(call, inner)
        return call


def accept_positional(name: str, tool: Callable[..., Any]) -> Callable[..., Any]:
    """Bind positional arguments to the tool's signature, so ``read_file("a.txt", 10)`` works.

    RLM hands interpreters keyword-only wrappers (``invoke(**kwargs)``) that carry the
    original function's ``__signature__``.
    """
    try:
        signature = inspect.signature(tool)
    except (TypeError, ValueError):
        signature = None

    def call(*args: Any, **kwargs: Any) -> Any:
        if signature is not None:
            try:
                bound = signature.bind(*args, **kwargs)
            except TypeError as exc:
                raise TypeError(f"{name}(): {exc}") from None
            kwargs = _flatten(bound, signature)
        elif args:
            raise TypeError(f"{name}() takes keyword arguments only")
        return tool(**kwargs)

    call.__name__ = name
    call.__doc__ = getattr(tool, "__doc__", None)
    if signature is not None:
        call.__signature__ = signature  # type: ignore[attr-defined]
    return call


def copy_metadata(target: Callable[..., Any], source: Callable[..., Any]) -> None:
    target.__name__ = getattr(source, "__name__", "tool")
    target.__doc__ = getattr(source, "__doc__", None)
    if hasattr(source, "__signature__"):
        target.__signature__ = source.__signature__  # type: ignore[attr-defined]


def _flatten(bound: inspect.BoundArguments, signature: inspect.Signature) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in bound.arguments.items():
        kind = signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_KEYWORD:
            out.update(value)
        elif kind is inspect.Parameter.VAR_POSITIONAL:
            if value:
                raise TypeError(f"*{name} is not supported for tools")
        else:
            out[name] = value
    return out


def current() -> Session:
    session = _current.get()
    if session is None:
        raise RuntimeError("This tool can only be called by an agent's code during a run.")
    return session


def activate(session: Session) -> contextvars.Token:
    return _current.set(session)


def deactivate(token: contextvars.Token) -> None:
    _current.reset(token)
