"""While a time-limited block runs, the calls that would switch its timer off are refused.

Agent code that times out tends to look for the timer: ``signal.setitimer(ITIMER_REAL,
0)``, ``signal.alarm(0)``, ``signal.signal(SIGALRM, SIG_IGN)``, or blocking SIGALRM.
`make_timer_patches` returns the `Patches` that, while any limited block runs (in any
thread), refuse those calls with a `PermissionError` the agent reads, and replace
``time.sleep`` with the limit's interruptible sleep. An alarm the code set would also
fire after the block, when SIGALRM's default action ends the process: refusing it
protects the kernel too. Other signals and ``ITIMER_VIRTUAL``/``ITIMER_PROF`` pass.
"""

from __future__ import annotations

import signal
import time
from typing import Any, Callable

from .guards import Patches

_real = {name: getattr(signal, name, None)
         for name in ("signal", "setitimer", "alarm", "siginterrupt", "pthread_sigmask")}


def _refuse(what: str) -> None:
    raise PermissionError(f"{what} would switch off the time limit of this code; agent code may not call it.")


def make_timer_patches(sleep: Callable[[float], None]) -> Patches:
    """The patches for time-limited blocks, with ``sleep`` standing in for ``time.sleep``."""

    def make(patches: Patches) -> list[tuple[Any, str, Any]]:
        def signal_(signalnum, handler):
            if patches.active() and signalnum == signal.SIGALRM:
                _refuse("signal.signal(SIGALRM, ...)")
            return _real["signal"](signalnum, handler)

        def setitimer(which, seconds, interval=0.0):
            if patches.active() and which == signal.ITIMER_REAL:
                _refuse("signal.setitimer(ITIMER_REAL, ...)")
            return _real["setitimer"](which, seconds, interval)

        def alarm(seconds):
            if patches.active():
                _refuse("signal.alarm()")
            return _real["alarm"](seconds)

        def siginterrupt(signalnum, flag):
            if patches.active() and signalnum == signal.SIGALRM:
                _refuse("signal.siginterrupt(SIGALRM, ...)")
            return _real["siginterrupt"](signalnum, flag)

        def pthread_sigmask(how, mask):
            mask = list(mask)
            if patches.active() and how != signal.SIG_UNBLOCK and signal.SIGALRM in mask:
                _refuse("signal.pthread_sigmask blocking SIGALRM")
            return _real["pthread_sigmask"](how, mask)

        replacements = {"signal": signal_, "setitimer": setitimer, "alarm": alarm,
                        "siginterrupt": siginterrupt, "pthread_sigmask": pthread_sigmask}
        out: list[tuple[Any, str, Any]] = [(time, "sleep", sleep)]
        if hasattr(signal, "SIGALRM"):
            out += [(signal, name, fn) for name, fn in replacements.items() if _real[name] is not None]
        return out

    return Patches(make)
