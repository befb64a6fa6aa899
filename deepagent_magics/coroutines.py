"""Running a coroutine to completion from synchronous code, whether or not an event loop runs here.

Its own module, with nothing of the agent's imported, because the kernels' room needs it too and must
load without DSPy (a command line's mistake about a gateway is told before DSPy is imported).
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import threading
from typing import Any


def run_coroutine(awaitable: Any, *, copy_context: bool = False) -> Any:
    """Run ``awaitable`` to completion from synchronous code and return its value.

    In this thread when no event loop runs here; else (a notebook's main thread runs
    ipykernel's loop, which cannot be re-entered) in a helper thread: with
    ``copy_context``, in a copy of this thread's context (so a tool sees the run's
    `dspy.context` settings and session); without, in a fresh one (jupyter_client caches
    its event loop in a context variable that must not cross threads).
    """
    coroutine = awaitable if inspect.iscoroutine(awaitable) else _await(awaitable)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    context = contextvars.copy_context() if copy_context else None
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = context.run(asyncio.run, coroutine) if context is not None else asyncio.run(coroutine)
        except BaseException as exc:  # everything, BaseException too: re-raised in the caller's thread
            outcome["error"] = exc

    helper = threading.Thread(target=run, name="deepagent-run-coroutine", daemon=True)
    helper.start()
    helper.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


async def _await(awaitable: Any) -> Any:
    return await awaitable
