"""Widget messages handled while a cell runs: a widget's comm routed to a kernel subshell.

While a cell runs, the kernel's main thread is busy with it and handles no shell message, widget
clicks included, until the cell ends. ipykernel 7 has *subshells*: threads with their own event
loop that handle shell messages concurrently with the main one, and it routes each ``comm_msg``
to the subshell a comm names (``comm._reply_subshell_for``, consulted by the shell-channel thread
for every incoming comm message). `route_to_subshell` starts one subshell per kernel (once) and
points the given widgets' comms at it, so a click or a typed value reaches the widget's handlers
at once, on that thread, while the cell runs on.

Why not jupyter-ui-poll: it calls ``kernel.do_one_iteration()`` between work items, a method
ipykernel 7.4 no longer has (it swallows the AttributeError, so nothing is processed), and it
could only process messages between steps, where a subshell processes them as they come.

Handlers run on the subshell's thread: they must only post to something thread-safe (the run's
steering inbox). Where there are no subshells (another kernel, ipykernel < 7, a test shell),
`route_to_subshell` returns False and the caller says the controls cannot work mid-cell.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

_subshells: dict[int, str] = {}  # id(kernel) -> the subshell handling our widgets' messages
_lock = threading.Lock()
START_TIMEOUT = 5.0


def _kernel() -> Any:
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    shell = get_ipython()
    return getattr(shell, "kernel", None)


def subshell_id(kernel: Any = None) -> str | None:
    """This kernel's widget subshell, started on first use (None where the kernel has no subshells)."""
    kernel = kernel or _kernel()
    if kernel is None or not getattr(kernel, "_supports_kernel_subshells", False):
        return None
    manager = getattr(getattr(kernel, "shell_channel_thread", None), "manager", None)
    loop = getattr(manager, "_shell_channel_io_loop", None)
    if manager is None or loop is None or not hasattr(manager, "_create_subshell"):
        return None
    with _lock:
        found = _subshells.get(id(kernel))
        if found is not None and found in manager.list_subshell():
            return found
        made: dict[str, Any] = {}
        done = threading.Event()

        def create() -> None:  # subshells are made on the shell-channel thread
            try:
                made["id"] = manager._create_subshell()
            except Exception as exc:  # an ipykernel that changed: no routing, the caller says so
                made["error"] = exc
            finally:
                done.set()

        loop.add_callback(create)
        if not done.wait(START_TIMEOUT) or "id" not in made:
            return None
        _subshells[id(kernel)] = made["id"]
        return made["id"]


def route_to_subshell(widgets: Iterable[Any]) -> bool:
    """Have the kernel handle these widgets' messages on its widget subshell; False if it cannot."""
    widgets = list(widgets)
    comms = [getattr(widget, "comm", None) for widget in widgets]
    if any(comm is None or not hasattr(comm, "_reply_subshell_for") for comm in comms):
        return False
    target = subshell_id()
    if target is None:
        return False
    for comm in comms:
        comm._reply_subshell_for = lambda data, default, _target=target: _target
    return True
