"""Capture what agent code prints, per thread.

IPython's ``capture_output`` swaps ``sys.stdout`` for the whole process, which is
right on the main thread and wrong when several agents run at once (an evaluation
running examples in threads). Here ``sys.stdout``/``sys.stderr`` are wrapped once
by a router that sends each write to the buffer of the capture active in the
writing thread. A thread the agent's code started itself has no capture of its
own; its writes go to the most recent capture, else to the real stream. The main
thread is never such a helper: while agents run in worker threads (a benchmark,
an evaluation), what the host prints there (its progress, the table of a run
stopped by ^C) goes to the real stream, not into an agent's step.
"""

from __future__ import annotations

import io
import sys
import threading
from collections import deque
from contextlib import contextmanager
from typing import Iterator

_local = threading.local()
_lock = threading.Lock()
_active: list[io.StringIO] = []
_installed = 0


class _Router:
    def __init__(self, stream, name: str):
        self._stream = stream
        self._name = name

    def write(self, text: str) -> int:
        buffer = _target()
        if buffer is None:
            return self._stream.write(text)
        return buffer.write(text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if _target() is None:
            self._stream.flush()

    def isatty(self) -> bool:
        return False

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def _target() -> io.StringIO | None:
    buffer = getattr(_local, "buffer", None)
    if buffer is not None:
        return buffer
    if threading.current_thread() is threading.main_thread():  # the host's, not a helper of agent code
        return None
    with _lock:
        return _active[-1] if _active else None


def _install() -> None:
    global _installed
    with _lock:
        if _installed == 0:
            sys.stdout = _Router(sys.stdout, "stdout")
            sys.stderr = _Router(sys.stderr, "stderr")
        _installed += 1


def _uninstall() -> None:
    global _installed
    with _lock:
        _installed -= 1
        if _installed == 0:
            for name in ("stdout", "stderr"):
                stream = getattr(sys, name)
                if isinstance(stream, _Router):
                    setattr(sys, name, stream._stream)


KEPT = 200_000  # characters of one step's output kept: the first half and the last half


class BoundedBuffer:
    """A text buffer that keeps the first and the last `KEPT` // 2 characters written and counts the rest:
    a step printing a gigabyte costs the time to print it, never the memory to hold it."""

    def __init__(self, kept: int = KEPT):
        self._half = kept // 2
        self._head: list[str] = []
        self._head_size = 0
        self._tail: deque[str] = deque()
        self._tail_size = 0
        self.written = 0
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        text = text if isinstance(text, str) else str(text)
        size = len(text)
        with self._lock:
            self.written += size
            room = self._half - self._head_size
            if room > 0:
                self._head.append(text[:room])
                self._head_size += min(room, size)
                text = text[room:]
            if len(text) >= self._half:
                self._tail.clear()
                self._tail.append(text[-self._half:])
                self._tail_size = self._half
            elif text:
                self._tail.append(text)
                self._tail_size += len(text)
                while self._tail_size - len(self._tail[0]) >= self._half:
                    self._tail_size -= len(self._tail.popleft())
        return size

    def getvalue(self) -> str:
        with self._lock:
            head, tail, written = "".join(self._head), "".join(self._tail)[-self._half:], self.written
        left_out = written - len(head) - len(tail)
        if left_out <= 0:
            return head + tail
        return f"{head}\n... ({left_out:,} characters of output left out here) ...\n{tail}"

    def flush(self) -> None:
        pass


@contextmanager
def capture_streams() -> Iterator[BoundedBuffer]:
    """Collect stdout and stderr written by this thread (and its unowned helpers) into one bounded buffer."""
    buffer = BoundedBuffer()
    previous = getattr(_local, "buffer", None)
    _install()
    _local.buffer = buffer
    with _lock:
        _active.append(buffer)
    try:
        yield buffer
    finally:
        with _lock:
            _active.remove(buffer)
        _local.buffer = previous
        _uninstall()


@contextmanager
def capture_displays(shell, into: BoundedBuffer) -> Iterator[None]:
    """Write ``display()`` output, as text, into ``into`` where it happens (main thread only).

    ``display()`` publishes through the process's IPython singleton, which may not be
    the ``shell`` handed to us (tests, embedded shells): both are redirected.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    from IPython.core.displaypub import DisplayPublisher
    from IPython.core.interactiveshell import InteractiveShell

    shells = {id(s): s for s in (shell, InteractiveShell.initialized() and InteractiveShell.instance()) if s}
    if not shells:
        yield
        return

    class TextPublisher(DisplayPublisher):
        def publish(self, data, metadata=None, source=None, *, transient=None, update=False, **kwargs):
            into.write(bundle_to_text(data).rstrip("\n") + "\n")

        def clear_output(self, wait=False):
            pass

        def set_parent(self, parent):  # a kernel subshell handling a widget click mid-step sets every shell's parent
            pass

    saved = {key: s.display_pub for key, s in shells.items()}
    for s in shells.values():
        s.display_pub = TextPublisher()
    try:
        yield
    finally:
        for key, s in shells.items():
            s.display_pub = saved[key]


def bundle_to_text(data: dict) -> str:
    """The text an LM should see for one rich output."""
    for mime in ("text/markdown", "text/plain"):
        if mime in data:
            text = data[mime]
            return text if isinstance(text, str) else "".join(text)
    kinds = ", ".join(sorted(data))
    return f"[rich output: {kinds}]"
