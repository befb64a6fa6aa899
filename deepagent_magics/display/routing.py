"""Listeners called from any thread, as if from the cell that started the run.

Events come from any thread (sub-agents run beside the main one). ipykernel 7 takes
the parent header of what it sends from the current context, so a listener called
off the main thread runs inside a copy of the starting cell's context: updates from
a sub-agent's thread land in the running cell, not in whichever request a thread's
own context last saw. One lock serialises the calls.
"""

from __future__ import annotations

import contextvars
import threading
from typing import Callable

from ..core.run.run import Event


class Routed:
    """A listener called under one lock, in the starting cell's context whatever thread emits."""

    def __init__(self, listener: Callable[[Event], None]):
        self.listener = listener
        self.context = contextvars.copy_context()
        self.thread = threading.current_thread()
        self.lock = threading.RLock()

    def __call__(self, event: Event) -> None:
        with self.lock:
            if threading.current_thread() is self.thread:
                self.listener(event)
            else:
                self.context.copy().run(self.listener, event)
