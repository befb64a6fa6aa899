"""interpreters/time_limit/wake_signal.py: the time limit's own signal, and its handler given back only once every
one sent has been delivered (a late one would meet the default action, which ends the process)."""

from __future__ import annotations

import signal
import threading

import pytest

from deepagent_magics.interpreters.time_limit import wake_signal

pytestmark = pytest.mark.skipif(wake_signal.WAKE is None, reason="no real-time signals on this platform")


def test_it_is_not_sigalrm():
    assert wake_signal.WAKE != signal.SIGALRM  # SIGALRM is the user's and the test runner's


def test_a_signal_sent_before_the_handler_goes_back_is_delivered_to_it():
    seen = []
    previous = wake_signal.install(lambda signum, frame: seen.append(signum))
    try:
        signal.pthread_kill(threading.get_ident(), wake_signal.WAKE)
        wake_signal.drain()
        assert seen == [wake_signal.WAKE]
    finally:
        wake_signal.give_back(previous)
    assert signal.getsignal(wake_signal.WAKE) == previous


def test_one_blocked_by_host_code_is_taken_instead_of_left_pending():
    seen = []
    previous = wake_signal.install(lambda signum, frame: seen.append(signum))
    signal.pthread_sigmask(signal.SIG_BLOCK, [wake_signal.WAKE])
    try:
        signal.pthread_kill(threading.get_ident(), wake_signal.WAKE)
        wake_signal.drain()
        assert wake_signal.WAKE not in signal.sigpending()
    finally:
        wake_signal.give_back(previous)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [wake_signal.WAKE])  # nothing pending: the process lives
