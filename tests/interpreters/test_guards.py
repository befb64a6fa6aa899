"""interpreters/guards.py: while agent code runs, what would end the user's kernel is refused; afterwards nothing is
(the exit paths in a real kernel: tests/adversarial/test_kernel_survives.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from deepagent_magics.interpreters.guards import ORIGINAL, Refused, exit_error, guarded


def test_exits_and_self_signals_are_refused_inside_and_real_outside():
    with guarded():
        for call, says in [(lambda: os._exit(0), "os._exit()"), (lambda: os.abort(), "os.abort()"),
                           (lambda: os.kill(os.getpid(), signal.SIGTERM), "SIGTERM"),
                           (lambda: os.kill(0, signal.SIGKILL), "SIGKILL"), (lambda: os.kill(-1, signal.SIGTERM), "-1"),
                           (lambda: signal.raise_signal(signal.SIGTERM), "raise_signal"),
                           (lambda: exit(), "ends the user's kernel")]:
            with pytest.raises(Refused, match=says):
                call()
        os.kill(os.getpid(), 0)  # an existence check passes
    assert os._exit is ORIGINAL["_exit"] and os.kill is ORIGINAL["kill"]


@pytest.mark.subprocess
def test_signals_to_other_processes_and_handled_ones_pass():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        with guarded():
            os.kill(child.pid, signal.SIGTERM)  # a sub-agent's kernel, say: not this process
            with pytest.raises(KeyboardInterrupt):
                os.kill(os.getpid(), signal.SIGINT)  # Python's handler: an interrupt, not an end
        assert child.wait(10) == -signal.SIGTERM
    finally:
        child.kill()


def test_nesting_keeps_the_refusals_until_the_last_block_ends():
    with guarded():
        with guarded(kills=False):
            pass
        with pytest.raises(Refused):
            os._exit(0)
    with guarded(kills=False):
        assert os._exit is ORIGINAL["_exit"]  # exits only
        with pytest.raises(Refused):
            quit()


def test_what_the_agent_reads_for_sys_exit():
    assert exit_error(SystemExit(0)) == ("SystemExit: sys.exit() ends the user's kernel; agent code may not call it. "
                                         "To finish, call SUBMIT(...).")
    assert exit_error(GeneratorExit()).startswith("GeneratorExit: raise GeneratorExit")
