"""How agent code calls a tool: positional or keyword arguments, bound to the tool's signature.

RLM hands interpreters keyword-only wrappers (``invoke(**kwargs)``) that carry the
original function's ``__signature__``; models write ``read_file("a.txt", 10)``.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from typing import Any, Callable


def accept_positional(name: str, tool: Callable[..., Any]) -> Callable[..., Any]:
    """``tool`` callable with positional arguments too, bound to its signature."""
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
    """Give a wrapper the tool's name, docstring and signature (what RLM and the agent read)."""
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


def run_coroutine(coroutine: Any) -> Any:
    """Run a coroutine to completion from synchronous code, in this thread or (when a loop
    already runs here, as on a notebook's main thread) in a helper thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = asyncio.run(coroutine)
        except BaseException as exc:
            outcome["error"] = exc

    helper = threading.Thread(target=run, name="deepagent-run-coroutine", daemon=True)
    helper.start()
    helper.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")
