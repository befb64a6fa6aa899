"""How agent code calls a tool: positional or keyword arguments, bound to the tool's signature;
an async tool's coroutine run to completion.

RLM hands interpreters keyword-only wrappers (``invoke(**kwargs)``) that carry the
original function's ``__signature__``; models write ``read_file("a.txt", 10)``. For an
``async def`` tool RLM's wrapper is a coroutine function: agent code calls it like any
other tool and gets the value, as in DSPy's own interpreters (`awaiting`, `coroutines.run_coroutine`).
DSPy's sandbox facade call tool calls its LM with a Request, not ``messages=`` (`core.model.facade_requests`).
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

from ...coroutines import run_coroutine
from ..model.facade_requests import facade_requests
from .pipeline import through
from ..policy.spend import guard_tool
from ..run import session as _session

ANSWERS_ERRORS = "_deepagent_answers_errors"  # set by tools/tool_call.tool: bad calls answered with Error:


def accept_positional(name: str, tool: Callable[..., Any]) -> Callable[..., Any]:
    """``tool`` callable with positional arguments too, bound to its signature."""
    try:
        signature = inspect.signature(tool)
    except (TypeError, ValueError):
        signature = None

    answers = getattr(tool, ANSWERS_ERRORS, False)  # a built-in tool: a bad call is an Error: it reads

    def call(*args: Any, **kwargs: Any) -> Any:
        if signature is not None:
            try:
                bound = signature.bind(*args, **kwargs)
            except TypeError as exc:
                if answers:
                    return f"Error: {name}(): {exc}; call it as {name}{_plain(signature)}"
                raise TypeError(f"{name}(): {exc}") from None
            kwargs = _flatten(bound, signature)
        elif args:
            raise TypeError(f"{name}() takes keyword arguments only")
        return tool(**kwargs)

    call.__name__ = name
    call.__doc__ = getattr(tool, "__doc__", None)
    if signature is not None:
        call.__signature__ = signature  # type: ignore[attr-defined]
    if answers:
        setattr(call, ANSWERS_ERRORS, True)
    return call


def _plain(signature: inspect.Signature) -> str:
    """The signature without annotations: ``(path, offset=0)``."""
    return str(signature.replace(parameters=[p.replace(annotation=p.empty) for p in signature.parameters.values()],
                                 return_annotation=signature.empty))


def copy_metadata(target: Callable[..., Any], source: Callable[..., Any]) -> None:
    """Give a wrapper the tool's name, docstring and signature (what RLM and the agent read)."""
    target.__name__ = getattr(source, "__name__", "tool")
    target.__doc__ = getattr(source, "__doc__", None)
    if getattr(source, ANSWERS_ERRORS, False):
        setattr(target, ANSWERS_ERRORS, True)
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


def awaiting(tool: Callable[..., Any]) -> Callable[..., Any]:
    """``tool`` as a plain function: an awaitable it returns is run to completion (`run_coroutine`).

    DSPy's facade call tool is given its LM as a `RequestLM` (`core.model.facade_requests`)."""
    tool = facade_requests(tool, through)

    def call(*args: Any, **kwargs: Any) -> Any:
        result = tool(*args, **kwargs)
        return run_coroutine(result, copy_context=True) if inspect.isawaitable(result) else result

    copy_metadata(call, tool)
    if not hasattr(call, "__signature__"):
        try:
            call.__signature__ = inspect.signature(tool)  # type: ignore[attr-defined]
        except (TypeError, ValueError):
            pass
    return call




def binder(session: Any) -> Callable[[str, Callable[..., Any]], Callable[..., Any]]:
    """How an interpreter wraps each tool for ``session``'s run (`bind_tool`); plain positional binding
    when there is no session."""
    if session is None:
        return accept_positional
    return lambda name, tool: bind_tool(session, name, tool)


def bind_tool(session: Any, name: str, tool: Callable[..., Any]) -> Callable[..., Any]:
    """``tool`` as agent code calls it: positional or keyword arguments, run inside ``session``, behind
    the tree's spend caps (``llm_query``), through what the agent's capabilities put around a tool call
    (``Capability.around_tool``: tracing's span)."""
    inner = accept_positional(name, tool)

    def call(*args: Any, **kwargs: Any) -> Any:
        token = _session.activate(session)
        try:
            with guard_tool(session, name, args, kwargs):
                return inner(*args, **kwargs)
        finally:
            _session.deactivate(token)

    copy_metadata(call, inner)
    extensions = getattr(getattr(session, "agent", None), "extensions", None)
    wrapped = extensions.around_tool(session, name, call) if extensions is not None else call
    if wrapped is not call:
        copy_metadata(wrapped, inner)
    return wrapped
