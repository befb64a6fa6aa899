"""interpreters/pool/launcher.py: sandboxed kernels start on one thread that lives as long as the process.

That a sandbox dies with a host killed while it starts is checked in ``tests/adversarial/test_sandbox.py``.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading

import pytest

from deepagent_magics.interpreters.pool.launcher import launch

MARK: contextvars.ContextVar[str] = contextvars.ContextVar("mark", default="unset")


def test_the_coroutine_runs_to_its_value_on_the_launcher_thread():
    async def where():
        await asyncio.sleep(0)
        return threading.current_thread()

    thread = launch(where)
    assert thread is not threading.current_thread() and thread.name == "deepagent-kernel-launcher" and thread.daemon


def test_every_launch_from_any_thread_uses_the_same_living_thread():
    async def where():
        return threading.current_thread()

    seen = [launch(where)]
    helper = threading.Thread(target=lambda: seen.append(launch(where)))
    helper.start()
    helper.join()
    assert seen[0] is seen[1] and seen[0].is_alive() and not helper.is_alive()


def test_an_exception_of_the_coroutine_reaches_the_caller():
    async def fail():
        raise ValueError("bwrap said no")

    with pytest.raises(ValueError, match="bwrap said no"):
        launch(fail)

    async def fine():
        return "still serving"

    assert launch(fine) == "still serving"


def test_each_launch_gets_a_fresh_event_loop_and_context():
    MARK.set("the caller's")

    async def inside():
        before = MARK.get()
        MARK.set("the launch's own")
        return before, asyncio.get_running_loop()

    first, loop_one = launch(inside)
    second, loop_two = launch(inside)
    assert (first, second) == ("unset", "unset") and loop_one is not loop_two
    assert MARK.get() == "the caller's"
