"""The signal the time limit wakes the main thread with, and how its handler is given back.

A limited block on the main thread may sit in a blocking C call (a sleep, a socket read, a
lock): only a signal interrupts it. The time limit uses a real-time signal of its own,
`WAKE`, not SIGALRM: SIGALRM belongs to the user and to the test runner (pytest-timeout's
alarm), and an alarm of ours that arrived late would have run their handler, or ended the
process under the default action, long after the block.

`install` puts the time limit's handler in place while limited blocks run on the main
thread; `give_back` puts the previous handler back once none does. Before it does, every
`WAKE` already sent is delivered to the time limit's own handler (`drain`): a real-time
signal's default action ends the process, so one still pending when the handler went back
would kill the user's kernel. The sender sends only to a live block, under the block's lock,
and the block is marked ended under that lock first: once `drain` has run, none is in flight.

Where the platform has no real-time signals (macOS), `WAKE` is None and the main thread is
treated as any other thread (an asynchronous exception, and sleeps in slices).
"""

from __future__ import annotations

import signal
from typing import Any, Callable

WAKE: int | None = signal.SIGRTMIN + 5 if hasattr(signal, "SIGRTMIN") else None

_real_signal = signal.signal
_sigpending = getattr(signal, "sigpending", None)
_sigtimedwait = getattr(signal, "sigtimedwait", None)


def install(handler: Callable[[int, Any], None]) -> Any:
    """Make ``handler`` `WAKE`'s (on the main thread); returns the handler it had."""
    return _real_signal(WAKE, handler)


def give_back(previous: Any) -> None:
    """After `drain`: `WAKE`'s handler is ``previous`` again."""
    _real_signal(WAKE, previous)


def drain() -> None:
    """Deliver, to the handler in place, every `WAKE` already sent to this thread."""
    pending = _sigpending() if _sigpending is not None else ()  # a system call: as it returns, the kernel
    if WAKE in pending and _sigtimedwait is not None:  # delivers what is pending and not blocked;
        _sigtimedwait([WAKE], 0)  # one blocked by host code is taken here instead
    _checkpoint()  # and the Python-level handler runs on entering a Python function


def _checkpoint() -> None:
    pass
