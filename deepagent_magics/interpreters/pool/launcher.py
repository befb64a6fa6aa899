"""The one thread that starts sandboxed kernels: it lives as long as this process.

``bwrap --die-with-parent`` kills a sandbox (SIGKILL, the kernel and everything in its PID namespace
with it) when the *thread* that started ``bwrap`` ends: Linux's parent-death signal follows the
thread, not the process. Kernels are started from passing threads (a pool's filler, a sub-agent's
thread, the helper thread that runs a coroutine beside a notebook's event loop), so each sandbox is
started here instead, on a thread that ends only with the process. Then a host that dies in any way
(SIGKILL included), even while a kernel is still starting (before the kernel watches its lifeline
and before the keeper is told of it), takes its sandboxes along.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import queue
import threading
from typing import Any, Awaitable, Callable

_jobs: "queue.SimpleQueue[tuple[Callable[[], Awaitable[Any]], dict[str, Any], threading.Event]]"
_jobs = queue.SimpleQueue()
_thread: threading.Thread | None = None
_owner: int | None = None
_lock = threading.Lock()


def launch(make: Callable[[], Awaitable[Any]]) -> Any:
    """Run the coroutine ``make()`` returns to completion on the launcher thread; its value or its exception."""
    _ensure_thread()
    outcome: dict[str, Any] = {}
    done = threading.Event()
    _jobs.put((make, outcome, done))
    done.wait()
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


def _ensure_thread() -> None:
    global _thread, _owner, _jobs
    with _lock:
        if _thread is not None and _owner == os.getpid() and _thread.is_alive():
            return
        if _owner != os.getpid():  # a forked child: its parent's thread and queue are not its own
            _jobs = queue.SimpleQueue()
        _owner = os.getpid()
        _thread = threading.Thread(target=_serve, args=(_jobs,), name="deepagent-kernel-launcher", daemon=True)
        _thread.start()


def _serve(jobs: "queue.SimpleQueue[Any]") -> None:
    while True:
        make, outcome, done = jobs.get()
        try:
            outcome["value"] = contextvars.Context().run(asyncio.run, make())  # a fresh loop and context each
        except BaseException as exc:  # noqa: BLE001 - handed to the caller, which raises it
            outcome["error"] = exc
        finally:
            done.set()
