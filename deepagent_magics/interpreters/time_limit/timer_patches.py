"""While agent code runs under a time limit, it may not touch the process's timers or the limit's signal.

Agent code that times out tends to look for the timer: ``signal.setitimer(ITIMER_REAL,
0)``, ``signal.alarm(0)``, ``signal.signal(SIGALRM, SIG_IGN)``, or blocking SIGALRM. The
time limit does not use SIGALRM (`wake_signal`), but an alarm the code set would fire
after the block, when SIGALRM's default action ends the kernel, and cancelling one cancels
the user's (or the test runner's). The limit's own signal, `wake_signal.WAKE`, may not be
ignored, handled, blocked or made to restart system calls either.

`make_timer_patches` returns the `Patches` that, while any limited block runs, refuse
those calls with a `PermissionError` the agent reads when ``agent_calling()`` says agent
code made them (the calling thread runs a limited block, or agent code is on its stack: a
thread the code started), and replace ``time.sleep`` with the limit's interruptible sleep.
Host code is never refused: pytest-timeout cancelling its alarm in the main thread while
an agent's block runs in a worker thread, or anything after the last block ended, passes.
Other signals and ``ITIMER_VIRTUAL``/``ITIMER_PROF`` pass.
"""

from __future__ import annotations

import signal
import time
from typing import Any, Callable

from ..guards import Patches
from .wake_signal import WAKE

_real = {name: getattr(signal, name, None)
         for name in ("signal", "setitimer", "alarm", "siginterrupt", "pthread_sigmask")}
_GUARDED = {s for s in (getattr(signal, "SIGALRM", None), WAKE) if s is not None}


def _refuse(what: str) -> None:
    raise PermissionError(f"{what} is refused: code running under a time limit may not change the process's "
                          "timers or the signals that stop it.")


def make_timer_patches(sleep: Callable[[float], None], agent_calling: Callable[[], bool]) -> Patches:
    """The patches for time-limited blocks, with ``sleep`` standing in for ``time.sleep``."""

    def make(patches: Patches) -> list[tuple[Any, str, Any]]:
        def refusing() -> bool:
            return patches.active() and agent_calling()

        def signal_(signalnum, handler):
            if signalnum in _GUARDED and refusing():
                _refuse(f"signal.signal({_name(signalnum)}, ...)")
            return _real["signal"](signalnum, handler)

        def setitimer(which, seconds, interval=0.0):
            if which == signal.ITIMER_REAL and refusing():
                _refuse("signal.setitimer(ITIMER_REAL, ...)")
            return _real["setitimer"](which, seconds, interval)

        def alarm(seconds):
            if refusing():
                _refuse("signal.alarm()")
            return _real["alarm"](seconds)

        def siginterrupt(signalnum, flag):
            if signalnum in _GUARDED and refusing():
                _refuse(f"signal.siginterrupt({_name(signalnum)}, ...)")
            return _real["siginterrupt"](signalnum, flag)

        def pthread_sigmask(how, mask):
            mask = list(mask)
            if how != signal.SIG_UNBLOCK and _GUARDED.intersection(mask) and refusing():
                _refuse(f"signal.pthread_sigmask blocking {', '.join(sorted(_name(s) for s in _GUARDED))}")
            return _real["pthread_sigmask"](how, mask)

        replacements = {"signal": signal_, "setitimer": setitimer, "alarm": alarm,
                        "siginterrupt": siginterrupt, "pthread_sigmask": pthread_sigmask}
        out: list[tuple[Any, str, Any]] = [(time, "sleep", sleep)]
        if hasattr(signal, "SIGALRM"):
            out += [(signal, name, fn) for name, fn in replacements.items() if _real[name] is not None]
        return out

    return Patches(make)


def _name(signalnum: int) -> str:
    if signalnum == WAKE:
        return "the time limit's signal"
    try:
        return signal.Signals(signalnum).name
    except ValueError:
        return str(signalnum)
