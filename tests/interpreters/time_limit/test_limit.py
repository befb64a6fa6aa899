"""interpreters/time_limit/limit.py: a block past its time is stopped even when its code catches the exception; time
in tools does not count; nothing is delivered outside the code the block runs (the fights, threads and kernels:
tests/adversarial/test_time_limits.py; the races: tests/adversarial/test_time_limit_ends_with_its_block.py)."""

from __future__ import annotations

import threading
import time

import pytest

from deepagent_magics.interpreters.time_limit import ExecutionTimeout, TimeLimit
from deepagent_magics.interpreters.time_limit.limit import interruptible_sleep

AGENT = "<agent step 1>"


def no_tool():
    return 0


def zero():
    return 0.0


def agent_code(source):
    namespace = {}
    exec(compile(source, AGENT, "exec"), namespace)
    return namespace["work"]


def test_code_that_catches_the_timeout_is_stopped_anyway():
    work = agent_code("def work():\n    while True:\n        try:\n            while True:\n                pass\n"
                      "        except BaseException:\n            pass\n")
    started = time.monotonic()
    with pytest.raises(ExecutionTimeout):
        with TimeLimit(0.3, no_tool, zero) as limit:
            limit.code_running = True  # what exec_step says while the agent's code runs
            work()
    assert time.monotonic() - started < 30


def test_sleep_is_interrupted_in_a_worker_thread_too():
    seen = []

    def worker():
        try:
            with TimeLimit(0.2, no_tool, zero) as limit:
                limit.code_running = True
                time.sleep(60)
        except ExecutionTimeout:
            seen.append("stopped")

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join(30)
    assert seen == ["stopped"]


def test_time_inside_tools_does_not_count():
    in_tool = [1]
    limit = TimeLimit(0.05, lambda: in_tool[0], zero)
    with limit:
        time.sleep(0.2)  # "inside a tool": the limit keeps half a second ahead
        in_tool[0] = 0
    assert limit.left() < 0.05


def test_a_block_that_ends_in_time_delivers_nothing_later():
    with TimeLimit(0.2, no_tool, zero):
        pass
    time.sleep(0.4)  # nothing lands here
    interruptible_sleep(0.01)  # outside a block: the real sleep


def test_nothing_is_delivered_while_the_block_runs_host_code():
    """Past its time, a block whose code is not running (the host's code before and after it) gets nothing."""
    with TimeLimit(0.05, no_tool, zero) as limit:
        end = time.monotonic() + 0.4
        while time.monotonic() < end:
            pass
    assert limit.sent == 0


def test_cut_short_ends_the_block_in_that_thread_now_and_says_who_stopped_it():
    """A cancelled run (an MCP task): its block ends at once, long before its time, even past a bare except;
    a block in another thread keeps its own time."""
    from deepagent_magics.interpreters.time_limit import cut_short

    work = agent_code("def work():\n    while True:\n        try:\n            time.sleep(1)\n"
                      "        except BaseException:\n            pass\nimport time\n")
    ended, started, limits = {}, threading.Event(), {}

    def worker(name, seconds):
        limits[name] = limit = TimeLimit(seconds, no_tool, zero)
        try:
            with limit:
                limit.code_running = True  # what exec_step says while the agent's code runs
                if name == "cut":
                    started.set()
                work()
        except ExecutionTimeout:
            ended[name] = limit.stopped_by

    cut = threading.Thread(target=worker, args=("cut", 600), daemon=True)
    other = threading.Thread(target=worker, args=("other", 2.0), daemon=True)
    other.start()
    cut.start()
    assert started.wait(30)
    assert not cut_short(threading.get_ident(), "nothing runs here")  # no block in this thread: nothing cut
    assert cut_short(cut.ident, "the run was cancelled")
    cut.join(30)
    assert not cut.is_alive() and ended["cut"] == "the run was cancelled"
    other.join(30)
    assert ended["other"] == ""  # ended by its own time, not cut



@pytest.mark.timeout(120)
def test_an_interrupt_sent_to_another_thread_stops_a_long_sleep_on_the_main_thread():
    """A Jupyter interrupt (or an ACP cancel) is a SIGINT the OS may hand to any thread of the kernel; Python runs
    its handler only when the main thread next runs bytecode. A step sleeping 600 seconds in one C call would
    ignore it: then, after a generous wait, this test's thread interrupts the main thread itself and the test fails."""
    import signal
    import sys

    main = threading.main_thread().ident
    stopped, lost = threading.Event(), []

    def interrupt_from_this_thread():
        while True:  # once the main thread sleeps: a signal before that would be handled anyway
            frame = sys._current_frames().get(main)
            if frame is not None and frame.f_code is interruptible_sleep.__code__:
                break
            time.sleep(0.01)
        time.sleep(0.2)
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)  # the OS signal lands on this thread
        if not stopped.wait(30):
            lost.append("the main thread slept through the interrupt")
            signal.pthread_kill(main, signal.SIGINT)  # wake it: the test fails, the run goes on

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            with TimeLimit(3600, no_tool, zero) as limit:
                limit.code_running = True
                sender = threading.Thread(target=interrupt_from_this_thread, daemon=True)
                sender.start()
                try:
                    interruptible_sleep(600)
                finally:
                    stopped.set()
    finally:
        signal.signal(signal.SIGINT, previous)
    sender.join(60)
    assert lost == []
