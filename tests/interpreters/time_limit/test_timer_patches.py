"""interpreters/time_limit/timer_patches.py: while agent code runs under a time limit, the calls that would touch the
process's timers or the limit's signal are refused, host code's are not, and sleep is the limit's own (the fights:
tests/adversarial/test_time_limits.py)."""

from __future__ import annotations

import signal
import time

import pytest

from deepagent_magics.interpreters.time_limit.timer_patches import make_timer_patches
from deepagent_magics.interpreters.time_limit.wake_signal import WAKE


def test_switching_the_timer_off_is_refused_only_while_a_block_runs():
    slept = []
    patches = make_timer_patches(lambda seconds: slept.append(seconds), lambda: True)
    real_sleep = time.sleep
    with patches:
        for call in (lambda: signal.alarm(0), lambda: signal.setitimer(signal.ITIMER_REAL, 0),
                     lambda: signal.signal(signal.SIGALRM, signal.SIG_IGN),
                     lambda: signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGALRM]),
                     lambda: signal.siginterrupt(signal.SIGALRM, True),
                     lambda: signal.signal(WAKE, signal.SIG_IGN),
                     lambda: signal.pthread_sigmask(signal.SIG_SETMASK, [WAKE])):
            with pytest.raises(PermissionError, match="under a time limit may not change the process's timers"):
                call()
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)  # other timers pass
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGALRM])
        time.sleep(0.25)
    assert slept == [0.25] and time.sleep is real_sleep
    assert type(signal.alarm).__name__ == "builtin_function_or_method"  # put back: the real call
    assert type(signal.setitimer).__name__ == "builtin_function_or_method"


def test_host_code_is_never_refused():
    """``agent_calling`` says the host is calling (pytest-timeout cancelling its own alarm): it passes."""
    patches = make_timer_patches(time.sleep, lambda: False)
    handler = signal.getsignal(signal.SIGALRM)
    with patches:
        signal.setitimer(signal.ITIMER_REAL, *signal.getitimer(signal.ITIMER_REAL))
        signal.signal(signal.SIGALRM, handler)
    assert signal.getsignal(signal.SIGALRM) is handler
