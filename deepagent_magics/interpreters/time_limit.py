"""The time limit of one code block: raise `ExecutionTimeout` in the code once it has run too long.

On the main thread a SIGALRM timer raises it; elsewhere (evaluation runs agents in
worker threads) a watchdog thread raises it asynchronously in the executing thread.
Time spent inside tools (a sub-agent, an LM call) does not count: the interpreter
reports it through ``in_tool``/``tool_seconds``.
"""

from __future__ import annotations

import ctypes
import signal
import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator


class ExecutionTimeout(BaseException):
    """Raised inside agent code that ran past its time limit (a BaseException, so `except Exception` can't eat it)."""


class TimeLimit:
    """``with limit:`` bounds the block to ``seconds`` of its own time (tools excluded)."""

    def __init__(self, seconds: float, in_tool: Callable[[], int], tool_seconds: Callable[[], float]):
        self.seconds = seconds
        self.in_tool = in_tool
        self.tool_seconds = tool_seconds
        self.deadline = 0.0

    def left(self) -> float:
        """Seconds left (extended by time spent in tools); <= 0 when expired."""
        if self.in_tool():
            return 0.5
        return self.deadline + self.tool_seconds() - time.monotonic()

    @contextmanager
    def __call__(self) -> Iterator[None]:
        self.deadline = time.monotonic() + self.seconds
        if threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer"):
            with self._alarm():
                yield
        else:
            with self._watchdog():
                yield

    @contextmanager
    def _alarm(self) -> Iterator[None]:
        def on_alarm(signum, frame):
            left = self.left()
            if left > 0 or self.in_tool():
                signal.setitimer(signal.ITIMER_REAL, max(left, 0.05))
                return
            raise ExecutionTimeout()

        previous = signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, self.seconds)
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)

    @contextmanager
    def _watchdog(self) -> Iterator[None]:
        target = threading.get_ident()
        done = threading.Event()

        def watch() -> None:
            while not done.wait(max(0.05, min(self.left(), 1.0))):
                if self.left() <= 0:
                    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(target), ctypes.py_object(ExecutionTimeout))
                    return

        watcher = threading.Thread(target=watch, daemon=True, name="deepagent-timeout")
        watcher.start()
        try:
            yield
        finally:
            done.set()
