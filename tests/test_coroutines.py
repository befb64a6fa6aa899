"""coroutines.py: a coroutine run to completion from synchronous code, in this thread or a helper's."""

from __future__ import annotations

import asyncio
import contextvars
import subprocess
import sys
from pathlib import Path

import pytest

from deepagent_magics.coroutines import run_coroutine

WHO = contextvars.ContextVar("who", default="nobody")
ROOT = Path(__file__).resolve().parents[1]


def test_a_coroutine_runs_to_completion_here_or_in_a_helper_thread_with_the_callers_context():
    async def value():
        await asyncio.sleep(0)
        return WHO.get()

    WHO.set("the run")
    assert run_coroutine(value()) == "the run"

    async def inside_a_loop():
        return run_coroutine(value(), copy_context=True), run_coroutine(value())

    assert asyncio.run(inside_a_loop()) == ("the run", "nobody")


def test_an_error_in_the_helper_thread_is_raised_in_the_caller():
    async def fails():
        raise KeyError("inside")

    async def inside_a_loop():
        return run_coroutine(fails())

    with pytest.raises(KeyError, match="inside"):
        asyncio.run(inside_a_loop())


@pytest.mark.subprocess
def test_the_kernels_room_loads_without_dspy():
    """The pool needs this helper; where it lived (core.loop.tool_binding) imported DSPy, so a command line's
    mistake about a gateway (``--gateway-url``) was told only after DSPy loaded."""
    code = ("import sys; import deepagent_magics.interpreters.pool.gateway, deepagent_magics.interpreters.pool.limits; "
            "print([name for name in ('dspy', 'litellm') if name in sys.modules])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
