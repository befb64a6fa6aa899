"""interpreters/async_raise.py: an exception raised in another thread, and one taken back before it lands."""

from __future__ import annotations

import threading
import time

from deepagent_magics.interpreters.async_raise import raise_in, take_back


class Stop(Exception):
    pass


def test_an_exception_lands_in_the_other_threads_python_code():
    seen, ready = [], threading.Event()

    def spin():
        ready.set()
        try:
            while True:
                time.sleep(0.001)
        except Stop:
            seen.append("stopped")

    thread = threading.Thread(target=spin, daemon=True)
    thread.start()
    ready.wait()
    raise_in(thread.ident, Stop)
    thread.join(10)
    assert seen == ["stopped"]


def test_one_taken_back_never_lands_and_the_caller_goes_on():
    gate, seen = threading.Event(), []

    def wait_then_count():
        gate.wait()  # a C wait: nothing is delivered before it returns
        try:
            for _ in range(1000):
                pass
            seen.append("finished")
        except Stop:
            seen.append("raised")

    thread = threading.Thread(target=wait_then_count, daemon=True)
    thread.start()
    time.sleep(0.05)
    raise_in(thread.ident, Stop)
    take_back(thread.ident)
    gate.set()
    thread.join(10)
    assert seen == ["finished"]
    assert sum(range(10)) == 45  # the taking thread goes on as before


def test_a_prepared_send_is_one_call_and_a_prepared_withdrawal_takes_it_back():
    from deepagent_magics.interpreters.async_raise import Reset, prepared

    gate, seen = threading.Event(), []

    def wait_then_count():
        gate.wait()
        try:
            for _ in range(1000):
                pass
            seen.append("finished")
        except Stop:
            seen.append("raised")

    thread = threading.Thread(target=wait_then_count, daemon=True)
    thread.start()
    time.sleep(0.05)
    prepared(thread.ident, Stop)()
    prepared(thread.ident, None)()  # withdrawn: the eval breaker stays set until an exception is raised
    try:
        prepared(threading.get_ident(), Reset)()  # so this thread raises one of its own, at once
    except Reset:
        pass
    gate.set()
    thread.join(10)
    assert seen == ["finished"]
