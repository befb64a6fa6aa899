"""interpreters/timer_patches.py: while a time-limited block runs, the calls that would switch its timer off are
refused and sleep is the limit's own (the fights: tests/adversarial/test_time_limits.py)."""

from __future__ import annotations

import signal
import time

import pytest

from deepagent_magics.interpreters.timer_patches import make_timer_patches


def test_switching_the_timer_off_is_refused_only_while_a_block_runs():
    slept = []
    patches = make_timer_patches(lambda seconds: slept.append(seconds))
    real_sleep = time.sleep
    with patches:
        for call in (lambda: signal.alarm(0), lambda: signal.setitimer(signal.ITIMER_REAL, 0),
                     lambda: signal.signal(signal.SIGALRM, signal.SIG_IGN),
                     lambda: signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGALRM]),
                     lambda: signal.siginterrupt(signal.SIGALRM, True)):
            with pytest.raises(PermissionError, match="would switch off the time limit"):
                call()
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)  # other timers pass
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGALRM])
        time.sleep(0.25)
    assert slept == [0.25] and time.sleep is real_sleep
    assert type(signal.alarm).__name__ == "builtin_function_or_method"  # put back: the real call
    assert type(signal.setitimer).__name__ == "builtin_function_or_method"
