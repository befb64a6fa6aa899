"""A time limit ends with its block, whatever the load (issue 30, item 9).

On a machine with a load average of 5 to 8, ``make test`` saw a time limit outlive its block:
its alarm raised `ExecutionTimeout` into a weakref callback, an atexit handler and pytest's own
clean-up; its guard refused pytest-timeout's cancel of its own alarm ("agent code may not call
it"); its trace function raised ``TypeError: 'NoneType' object is not callable`` from a garbage
collector at shutdown; and the process hung when a delivery landed inside the watchdog's wake-up.
Each test here is one of those, done on purpose: many short limits ending just as they fire,
on three threads at once with processes spinning on every core; host code touching its own
timers while an agent's block runs; agent code keeping the limit's trace function or its timer
functions for later; an interrupt landing while a block puts the trace function back.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from tests.busy import busy_machine

from deepagent_magics import DeepAgent
from deepagent_magics.interpreters.time_limit import limit as time_limit
from deepagent_magics.interpreters.time_limit import TimeLimit
from deepagent_magics.testing import ScriptedLM

HAMMER = Path(__file__).with_name("time_limit_hammer.py")
HANG = 240  # seconds: a hammer that has not reported by then hung (it takes a few seconds, or a minute when busy)


@pytest.mark.subprocess
@pytest.mark.parametrize("load", ["busy machine", "idle machine"])
def test_many_short_limits_ending_as_they_fire_leave_nothing_behind(load):
    """Hundreds of limits of 0 to 3 ms on blocks of 0 to 4 ms, on the main thread and two workers, the
    GIL handed over every 10 microseconds: nothing reaches the code after a block, host code is never
    refused, and at the end no block, trace function, patch or signal handler of a limit is left."""
    command = [sys.executable, str(HAMMER), "400"]
    try:
        if load == "busy machine":
            with busy_machine():
                done = subprocess.run(command, capture_output=True, text=True, timeout=HANG)
        else:
            done = subprocess.run(command, capture_output=True, text=True, timeout=HANG)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the hammer hung for {HANG} s (a lock left held by a delivery?)")
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["timeouts"] > 0  # the limits did fire: the race was run
    assert report == {**report, "late": 0, "alarm_handler_calls": 0, "refused": [], "errors": [],
                      "traces_left": [], "live_blocks": 0, "patched_left": [], "alarm_handler_kept": True,
                      "wake_handler_left": None}, report
    assert "Exception ignored" not in done.stderr, done.stderr[-3000:]  # nothing raised into a callback


def _hostile_run_in_a_worker(tmp_path, code):
    """An agent's run in a worker thread whose step fights its 2 s limit; returns (thread, box, started)."""
    started, box = threading.Event(), {}
    lm = ScriptedLM([("Fight.", "started.set()\n" + code), ("Done.", "SUBMIT(result='done')")])

    def work():
        box["run"] = DeepAgent(lm=lm, workspace=tmp_path, timeout=2).run("fight", {"started": started})

    worker = threading.Thread(target=work)
    worker.start()
    assert started.wait(120), "the agent's step never started"
    return worker, box


SETITIMER_FIRST = ("import signal, time\ntry:\n    signal.setitimer(signal.ITIMER_REAL, 0)\nexcept Exception as exc:\n"
                   "    print('refused:', exc)\nwhile True:\n    try:\n        time.sleep(1)\n    except BaseException:\n"
                   "        pass")


def test_host_code_may_touch_its_own_timers_while_an_agents_block_runs_in_another_thread(tmp_path):
    """pytest-timeout re-arms and cancels its SIGALRM on the main thread while an evaluation's agent runs in a
    worker: host code is not refused. The agent's own attempt, in its block, still is."""
    worker, box = _hostile_run_in_a_worker(tmp_path, SETITIMER_FIRST)
    try:
        handler = signal.getsignal(signal.SIGALRM)
        signal.setitimer(signal.ITIMER_REAL, *signal.getitimer(signal.ITIMER_REAL))  # pytest-timeout's, unchanged
        signal.signal(signal.SIGALRM, handler)
        signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGALRM])
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGALRM])
    finally:
        worker.join(240)
    assert not worker.is_alive()
    first = box["run"].steps[0].output
    assert "refused:" in first and "TimeoutError" in first, first


def test_a_timer_function_agent_code_kept_refuses_nothing_after_the_run(tmp_path):
    """Agent code keeps ``signal.setitimer`` (the limit's refusing stand-in while its block runs) in the
    namespace; the user's later cell that calls it is host code, and no block runs: it passes."""
    lm = ScriptedLM([("Keep.", "import signal\nkept = signal.setitimer\nkept_signal = signal.signal\nprint('kept')"),
                     ("Done.", "SUBMIT(result='done')")])
    namespace: dict = {}
    run = DeepAgent(lm=lm, workspace=tmp_path, timeout=30).run("keep", namespace)
    assert run.steps[0].output == "kept"
    namespace["kept"](signal.ITIMER_REAL, *signal.getitimer(signal.ITIMER_REAL))
    namespace["kept_signal"](signal.SIGALRM, signal.getsignal(signal.SIGALRM))


KEEPS_THE_TRACER = r"""
import sys, tempfile
from deepagent_magics import DeepAgent
from deepagent_magics.testing import ScriptedLM

# The agent's code defines a helper outside its own step (another file name: a frame the limit does not
# trace) that waits for the timeout, catches it and returns the trace function the limit set on the step.
CODE = '''import sys
exec(compile("def probe():\\n    try:\\n        while True:\\n            pass\\n    except BaseException:\\n"
             "        return sys._getframe(1).f_trace\\n", "helper.py", "exec"), globals())
kept = [probe()]
while True:
    pass
'''
namespace = {}
lm = ScriptedLM([("Fight.", CODE), ("Done.", "SUBMIT(result='done')")])
run = DeepAgent(lm=lm, workspace=tempfile.mkdtemp(), timeout=0.5).run("fight", namespace)
assert "TimeoutError" in run.steps[0].output, run.steps[0].output
tracer = namespace["kept"][0]
assert tracer(sys._getframe(), "line", None) is None  # its block has ended: it does nothing

# Interpreter shutdown sets every name of a module to None before a garbage collector's last runs call
# what is left (CPython's _PyModule_ClearDict); done here first, then the kept function is called.
module = sys.modules["deepagent_magics.interpreters.time_limit.limit"]
for name in [name for name in vars(module) if not name.startswith("__")]:
    setattr(module, name, None)
for event in ("call", "line", "return"):
    assert tracer(sys._getframe(), event, None) is None
print("kept", flush=True)
"""


@pytest.mark.subprocess
def test_a_trace_function_of_an_ended_block_is_harmless_even_at_shutdown():
    done = subprocess.run([sys.executable, "-c", KEEPS_THE_TRACER], capture_output=True, text=True, timeout=HANG)
    assert done.returncode == 0 and "kept" in done.stdout, done.stderr[-3000:]
    assert "Exception ignored" not in done.stderr and "TypeError" not in done.stderr, done.stderr[-3000:]


SPIN_UNTIL_STOPPED = compile("while True:\n    pass\n", "<agent step 1>", "exec")


class _InterruptAsTheBlockEnds:
    """Raises KeyboardInterrupt the first time the block's ending calls it (a stop button landing there),
    then calls through."""

    def __init__(self, call):
        self.call, self.fired = call, False

    def __call__(self, *args):
        if not self.fired and sys._getframe(1).f_code.co_name in ("close", "end"):
            self.fired = True
            raise KeyboardInterrupt
        return self.call(*args)


@pytest.mark.parametrize("where", ["_settrace", "take_back"])
def test_an_interrupt_landing_as_a_block_ends_leaves_no_trace_function(monkeypatch, where):
    """The block's time is up and its trace function armed on the thread; a KeyboardInterrupt lands as the
    block puts the thread's trace function back (or takes back a delivery): the block still ends whole."""
    monkeypatch.setattr(time_limit, where, _InterruptAsTheBlockEnds(getattr(time_limit, where)))
    try:
        with pytest.raises(KeyboardInterrupt):
            with TimeLimit(0.05, lambda: 0, lambda: 0.0) as limit:
                limit.code_running = True  # what exec_step does; here the trace function is still on as it ends
                exec(SPIN_UNTIL_STOPPED, {})
        assert getattr(time_limit, where).fired
        left = sys.gettrace()
        assert left is None, f"the limit's trace function was left on the thread: {left!r}"
        assert not [block for block in getattr(time_limit._local, "stack", ()) if block.active]
        time.sleep(0.3)  # past the block's limit: nothing may be delivered here
    finally:
        sys.settrace(None)
