"""Time limits that hold (issue 10, item 5).

The per-block timeout must stop code that catches the exception (models write retry
loops with a bare ``except:``), code running off the main thread (evaluations run agents
in worker threads) and code that tries to switch the timer off. Each case is a real
`DeepAgent` run whose first step fights the limit; the test proves the step was stopped
(the code would run for ever, or far longer, unstopped), the agent read a TimeoutError,
and the next step ran normally with nothing delivered late. How promptly is measured
against the machine as it is during the test, not in seconds: the same run with a first
step that ends by itself just short of the limit (`baseline`), times `SLOWER`.
"""

from __future__ import annotations

import signal
import sys
import threading
import time

import pytest

from deepagent_magics import DeepAgent
from deepagent_magics.testing import ScriptedLM

LIMIT = 1.0
SLOWER = 3  # a stopped run takes less than this many times the baseline run on the same machine
HANG = 240  # seconds a worker thread's run is waited for: longer is a hang, not slowness

HOSTILE = {
    "bare except around sleep": "import time\nwhile True:\n    try:\n        time.sleep(1)\n    except:\n        pass",
    "except BaseException around sleep":
        "import time\nwhile True:\n    try:\n        time.sleep(5)\n    except BaseException:\n        continue",
    "retry loop with a counter":
        "import time\ntries = 0\nwhile tries < 10**9:\n    try:\n        time.sleep(0.5)\n"
        "    except BaseException as exc:\n        tries += 1\n        print('retrying after', type(exc).__name__)",
    "pure-Python loop with bare except":
        "n = 0\nwhile True:\n    try:\n        while True:\n            n += 1\n    except:\n        n = 0",
    "nested handlers":
        "import time\nwhile True:\n    try:\n        while True:\n            try:\n                time.sleep(1)\n"
        "            except BaseException:\n                pass\n    except BaseException:\n        pass",
    "three nested handlers, each looping":
        "import time\nwhile True:\n    try:\n        while True:\n            try:\n                while True:\n"
        "                    try:\n                        time.sleep(1)\n                    except BaseException:\n"
        "                        pass\n            except BaseException:\n                pass\n"
        "    except BaseException:\n        pass",
    "nested handlers in a busy loop":
        "n = 0\nwhile True:\n    try:\n        while True:\n            try:\n                while True:\n"
        "                    n += 1\n            except BaseException:\n                n = 0\n"
        "    except BaseException:\n        n = 0",
    "a finally that loops":
        "import time\ntry:\n    time.sleep(30)\nfinally:\n    while True:\n        try:\n            time.sleep(1)\n"
        "        except BaseException:\n            pass",
    "handler inside a function, re-entered":
        "import time\ndef patient():\n    try:\n        time.sleep(30)\n    except BaseException:\n        return patient()\n"
        "patient()",
    "setitimer(ITIMER_REAL, 0) first":
        "import signal, time\ntry:\n    signal.setitimer(signal.ITIMER_REAL, 0)\nexcept Exception as exc:\n"
        "    print('refused:', exc)\nwhile True:\n    try:\n        time.sleep(1)\n    except BaseException:\n        pass",
    "alarm(0) first":
        "import signal\ntry:\n    signal.alarm(0)\nexcept Exception as exc:\n    print('refused:', exc)\n"
        "while True:\n    pass",
    "SIGALRM ignored":
        "import signal\ntry:\n    signal.signal(signal.SIGALRM, signal.SIG_IGN)\nexcept Exception as exc:\n"
        "    print('refused:', exc)\nwhile True:\n    pass",
    "SIGALRM handler replaced":
        "import signal\ntry:\n    signal.signal(signal.SIGALRM, lambda *a: None)\nexcept Exception as exc:\n"
        "    print('refused:', exc)\nwhile True:\n    pass",
    "SIGALRM blocked":
        "import signal\ntry:\n    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGALRM])\nexcept Exception as exc:\n"
        "    print('refused:', exc)\nimport time\nwhile True:\n    time.sleep(1)",
    "tracing switched off in the handler":
        "import sys, time\nwhile True:\n    try:\n        time.sleep(1)\n    except BaseException:\n"
        "        sys.settrace(None)",
    "time.monotonic frozen": "import time\ntime.monotonic = lambda: 0.0\nwhile True:\n    pass",
    "the watchdog thread attacked":
        "import ctypes, sys, threading, time\n"
        "for _ in range(20):\n"
        "    for ident, frame in sys._current_frames().items():\n"
        "        if ident != threading.get_ident() and 'time_limit' in frame.f_code.co_filename:\n"
        "            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident), ctypes.py_object(SystemExit))\n"
        "    time.sleep(0.01)\n"
        "while True:\n    try:\n        time.sleep(1)\n    except BaseException:\n        pass",
    "a with-statement that swallows":
        "import time\nclass Swallow:\n    def __enter__(self):\n        return self\n"
        "    def __exit__(self, *exc):\n        return True\nwhile True:\n    with Swallow():\n        time.sleep(5)",
    "waiting on an event":
        "import threading\nwhile True:\n    try:\n        threading.Event().wait(5)\n    except BaseException:\n        pass",
    "a tool called in the handler":
        "import time\nwhile True:\n    try:\n        time.sleep(1)\n    except BaseException:\n        read_todos()",
    "from time import sleep":
        "from time import sleep\nwhile True:\n    try:\n        sleep(2)\n    except BaseException:\n        pass",
}


def run_hostile(code, namespace=None, tmp_path=None, timeout=LIMIT):
    lm = ScriptedLM([
        ("Fight the limit.", code),
        ("Carry on.", "import time\ntime.sleep(0.2)\nafter = 'alive'\nprint(after)"),
        ("Done.", "SUBMIT(result='done')"),
    ])
    agent = DeepAgent(lm=lm, workspace=tmp_path, timeout=timeout)
    started = time.monotonic()
    run = agent.run("fight", namespace if namespace is not None else {})
    return run, time.monotonic() - started


def baseline(tmp_path):
    """How long the same run takes on this machine now, with a first step that ends by itself at 0.8 x LIMIT."""
    _, elapsed = run_hostile(f"import time\ntime.sleep({LIMIT * 0.8})\nprint('in time')", {}, tmp_path / "baseline")
    return elapsed


def check_stopped(run, elapsed, tmp_path):
    """Stopped, and promptly: under `SLOWER` baseline runs. The load of a shared machine comes and goes, so a
    run over that is measured against the slowest of up to three baselines taken after it."""
    slowest = 0.0
    for _ in range(3):
        slowest = max(slowest, baseline(tmp_path))
        if elapsed < SLOWER * slowest:
            break
    assert elapsed < SLOWER * slowest, f"ran {elapsed:.1f} s under a {LIMIT} s limit (the baseline run: {slowest:.1f} s)"
    assert run.status == "finished", run.error
    first = run.steps[0].output
    assert "TimeoutError: this code ran longer than" in first, first
    assert run.steps[1].output == "alive"  # nothing delivered into the next step
    assert run.result == "done"


@pytest.mark.parametrize("case", list(HOSTILE))
def test_the_limit_stops_code_that_fights_it_on_the_main_thread(tmp_path, case):
    code = HOSTILE[case]
    real_monotonic = time.monotonic
    try:
        run, elapsed = run_hostile(code, {}, tmp_path)
    finally:
        time.monotonic = real_monotonic
    check_stopped(run, elapsed, tmp_path)
    if "refused" in code:
        assert "refused:" in run.steps[0].output and "time limit" in run.steps[0].output


@pytest.mark.parametrize("case", ["bare except around sleep", "except BaseException around sleep",
                                  "pure-Python loop with bare except", "nested handlers", "three nested handlers, each looping",
                                  "nested handlers in a busy loop", "a finally that loops",
                                  "from time import sleep", "a with-statement that swallows",
                                  "setitimer(ITIMER_REAL, 0) first", "the watchdog thread attacked",
                                  "plain sleep(15)"])
def test_the_limit_stops_code_in_a_worker_thread(tmp_path, case):
    """%deepagent_eval --threads runs agents in worker threads: no signal reaches them there."""
    code = "import time\ntime.sleep(15)" if case == "plain sleep(15)" else HOSTILE[case]
    box = {}

    def work():
        box["run"], box["elapsed"] = run_hostile(code, {}, tmp_path)

    worker = threading.Thread(target=work)
    worker.start()
    worker.join(HANG)
    assert not worker.is_alive(), "the worker thread's run never ended"
    check_stopped(box["run"], box["elapsed"], tmp_path)


EVERY_SIGNAL = {
    "ignored": "import signal\nrefused = []\nfor s in signal.valid_signals():\n    try:\n"
               "        signal.signal(s, signal.SIG_IGN)\n    except PermissionError as exc:\n        refused.append(str(exc))\n"
               "    except (OSError, ValueError, RuntimeError):\n        pass\nprint('refused:', *refused, sep='\\n')\n"
               "c_sleep(30)",
    "blocked": "import signal\ntry:\n    signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())\n"
               "except PermissionError as exc:\n    print('refused:', exc)\nc_sleep(30)",
}


@pytest.mark.parametrize("how", list(EVERY_SIGNAL))
def test_code_that_ignores_or_blocks_every_signal_is_stopped_anyway(tmp_path, how):
    """Whatever signal the limit wakes the main thread with, agent code that ignores or blocks them all, then
    sleeps in C, may not switch it off."""
    handlers = {s: signal.getsignal(s) for s in signal.valid_signals() if signal.getsignal(s) is not None}
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    try:
        run, elapsed = run_hostile(EVERY_SIGNAL[how], {"c_sleep": time.sleep}, tmp_path)
    finally:
        for s, handler in handlers.items():
            if signal.getsignal(s) is not handler:
                signal.signal(s, handler)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    check_stopped(run, elapsed, tmp_path)
    assert "refused:" in run.steps[0].output and "time limit" in run.steps[0].output


def test_a_blocking_c_call_on_the_main_thread_is_interrupted(tmp_path):
    """A sleep the code held before the limit patched time.sleep (the C one): the limit's signal interrupts it."""
    code = "while True:\n    try:\n        c_sleep(20)\n    except BaseException:\n        pass"
    run, elapsed = run_hostile(code, {"c_sleep": time.sleep}, tmp_path)
    check_stopped(run, elapsed, tmp_path)


def test_several_worker_threads_each_keep_their_own_limit(tmp_path):
    """Agents in parallel threads: each block is stopped on its own time, none disturbs another."""
    results = {}

    def work(i, code, limit):
        results[i] = run_hostile(code, {}, tmp_path / str(i), timeout=limit)

    codes = [(HOSTILE["bare except around sleep"], 1.0), ("import time\ntime.sleep(1.5)\nprint('slept')", 4.0),
             (HOSTILE["pure-Python loop with bare except"], 1.0)]
    threads = [threading.Thread(target=work, args=(i, code, limit)) for i, (code, limit) in enumerate(codes)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(HANG)
    assert "TimeoutError" in results[0][0].steps[0].output
    assert results[1][0].steps[0].output == "slept"  # under its limit: untouched
    assert "TimeoutError" in results[2][0].steps[0].output
    for run, _ in results.values():
        assert run.status == "finished" and run.steps[1].output == "alive"


def test_time_in_tools_does_not_count(tmp_path):
    def slow_tool(seconds: float) -> str:
        """Sleep on the host, as a sub-agent or an LM call would take time."""
        time.sleep(seconds)
        return "tool done"

    lm = ScriptedLM([("Call a slow tool.", "print(slow_tool(2.0))"), ("Done.", "SUBMIT(result='ok')")])
    run = DeepAgent(lm=lm, workspace=tmp_path, timeout=LIMIT, tools=[slow_tool]).run("slow", {})
    assert run.steps[0].output == "tool done"


def test_after_a_timeout_nothing_is_left_behind(tmp_path):
    """The SIGALRM handler, time.sleep, the signal functions and the trace function are the process's own again."""
    timer = signal.getitimer(signal.ITIMER_REAL)  # pytest-timeout's, if any: left running
    before = (signal.getsignal(signal.SIGALRM), time.sleep, signal.signal, signal.setitimer, signal.alarm,
              signal.pthread_sigmask, sys.gettrace())
    run, _ = run_hostile(HOSTILE["bare except around sleep"], {}, tmp_path)
    assert "TimeoutError" in run.steps[0].output
    after = (signal.getsignal(signal.SIGALRM), time.sleep, signal.signal, signal.setitimer, signal.alarm,
             signal.pthread_sigmask, sys.gettrace())
    assert after == before
    time.sleep(0.5)  # a late SIGALRM or asynchronous exception would land here
    left = signal.getitimer(signal.ITIMER_REAL)[0]
    assert left <= timer[0] and (left > 0) == (timer[0] > 0)


def test_a_block_that_ends_just_at_its_limit_gets_nothing_late(tmp_path):
    """Blocks finishing around their deadline, many times: no exception reaches the code after them.
    (`test_time_limit_ends_with_its_block` hammers this on three threads of a busy machine.)"""
    import ast

    from deepagent_magics.interpreters.kernel_side import exec_step, split_trailing_expression
    from deepagent_magics.interpreters.time_limit import ExecutionTimeout, TimeLimit

    code = "end = mono() + d\nwhile mono() < end:\n    pass"
    body, tail = split_trailing_expression(ast.parse(code, "<agent step 1>", "exec"))
    late = stopped = 0
    for i in range(40):
        try:
            with TimeLimit(0.05, lambda: 0, lambda: 0.0) as limit:
                exec_step(body, tail, "<agent step 1>", {"mono": time.monotonic, "d": 0.04 + (i % 5) * 0.01}, None, limit)
        except ExecutionTimeout:
            stopped += 1
        try:
            x = 0
            for _ in range(200_000):
                x += 1
            time.sleep(0.01)
        except ExecutionTimeout:
            late += 1
    assert late == 0
    assert stopped  # some blocks ran past their limit: the race was run


class _InterruptOnce:
    """Raises KeyboardInterrupt the first time it is called (a stop button landing there), then calls through."""

    def __init__(self, call):
        self.call, self.fired = call, False

    def __call__(self, *args):
        if not self.fired:
            self.fired = True
            raise KeyboardInterrupt
        return self.call(*args)


@pytest.mark.parametrize("where", ["acquire", "release"])
def test_an_interrupt_landing_while_a_block_starts_or_ends_leaves_nothing_behind(monkeypatch, where):
    """A KeyboardInterrupt half-way through entering or closing a block is raised, and the block is gone:
    a block left active would raise ExecutionTimeout in whatever the thread runs next, once its time is up."""
    from deepagent_magics.interpreters.time_limit import limit as time_limit
    from deepagent_magics.interpreters.time_limit import TimeLimit

    before = (signal.getsignal(signal.SIGALRM), time.sleep)
    patches = time_limit.timer_patches
    monkeypatch.setattr(patches, where, _InterruptOnce(getattr(patches, where)))
    with pytest.raises(KeyboardInterrupt):
        with TimeLimit(0.2, lambda: 0, lambda: 0.0):
            pass
    assert getattr(patches, where).fired
    assert not [block for block in getattr(time_limit._local, "stack", ()) if block.active]
    assert (signal.getsignal(signal.SIGALRM), time.sleep) == before
    time.sleep(0.5)  # past the block's limit: nothing may be delivered here


# The agent's code may leave the thread's handled exception set (CPython 3.11 does when a trace function
# raises in a `with` statement's exit handler): the user's next bare `raise` would re-raise the agent's
# exception, and every later traceback would read "During handling of the above exception".
LEAVES_THREAD_STATE = {
    "the timeout swallowed by __exit__": HOSTILE["a with-statement that swallows"],
}


@pytest.mark.parametrize("case", list(LEAVES_THREAD_STATE))
def test_no_handled_exception_is_left_in_the_users_thread(tmp_path, case):
    assert sys.exc_info() == (None, None, None)
    run, _ = run_hostile(LEAVES_THREAD_STATE[case], {}, tmp_path)
    assert run.status == "finished", run.error
    assert sys.exc_info() == (None, None, None)
    with pytest.raises(RuntimeError, match="No active exception to reraise"):
        raise  # noqa: PLE0704 - what a user's bare `raise` does after the run


def test_no_handled_exception_is_left_behind_in_a_kernel(ip, tmp_path):
    """Through the magic in a real shell: the next cell's bare `raise` has nothing to re-raise."""
    ip.user_ns["lm"] = ScriptedLM([("Fight.", HOSTILE["a with-statement that swallows"]), ("Done.", "SUBMIT(result='ok')")])
    result = ip.run_cell(f"%%deepagent --lm lm --timeout 1 --workspace {tmp_path}\nfight")
    assert result.error_in_exec is None, result.error_in_exec
    assert "TimeoutError" in ip.user_ns["_deepagent_run"].steps[0].output
    after = ip.run_cell("raise")
    assert isinstance(after.error_in_exec, RuntimeError), after.error_in_exec


# Taking back an asynchronous exception not yet raised (PyThreadState_SetAsyncExc with NULL) left CPython
# 3.11's eval breaker set for good: with a trace or profile function on, the next call into a Python
# function spun for ever, out of the time limit's reach. Every block took one back as it closed, so after
# one agent step the user's debugger (or the agent's own settrace) hung the kernel.
TRACING = {
    "settrace, then a call": "import sys\ndef t(frame, event, arg):\n    return None\ndef f():\n    return 1\n"
                             "sys.settrace(t)\nf()\nsys.settrace(None)\nprint('traced')",
    "setprofile, then a call": "import sys\ndef p(frame, event, arg):\n    return None\ndef f():\n    return 1\n"
                               "sys.setprofile(p)\nf()\nsys.setprofile(None)\nprint('traced')",
    "threading's hooks, then a call in a thread": (
        "import threading\ndef t(frame, event, arg):\n    return None\ndef f():\n    return 1\n"
        "threading.settrace(t)\nthreading.setprofile(t)\nworker = threading.Thread(target=f)\nworker.start()\n"
        "worker.join()\nthreading.settrace(None)\nthreading.setprofile(None)\nprint('traced')"),
}


@pytest.mark.parametrize("case", list(TRACING))
def test_code_that_traces_itself_cannot_hang_the_run(tmp_path, case):
    lm = ScriptedLM([("Trace.", TRACING[case]), ("Done.", "SUBMIT(result='done')")])
    box = {}
    worker = threading.Thread(target=lambda: box.update(run=DeepAgent(lm=lm, workspace=tmp_path, timeout=30)
                                                        .run("trace", {})), daemon=True)
    worker.start()
    worker.join(60)
    assert not worker.is_alive(), "the run hung"
    run = box["run"]
    assert run.status == "finished" and run.result == "done", run.error
    assert run.steps[0].output == "traced"
    assert sys.gettrace() is None and sys.getprofile() is None


DEBUGGER_AFTER_A_RUN = """
import sys, tempfile
from deepagent_magics import DeepAgent
from deepagent_magics.testing import ScriptedLM

lm = ScriptedLM([("Fight.", "import time\\nwhile True:\\n    try:\\n        time.sleep(1)\\n    except:\\n        pass"),
                 ("Done.", "SUBMIT(result='done')")])
run = DeepAgent(lm=lm, workspace=tempfile.mkdtemp(), timeout=0.5).run("fight", {})
assert "TimeoutError" in run.steps[0].output, run.steps[0].output

def f():
    return 1

sys.settrace(lambda frame, event, arg: None)  # what a debugger does
for _ in range(1000):
    f()
sys.settrace(None)
print("debugger ok")
"""


@pytest.mark.subprocess
def test_a_debugger_still_works_after_a_run_whose_step_timed_out():
    """In a fresh process (a hang here must not hang the suite): a run whose step timed out, then tracing."""
    import subprocess

    done = subprocess.run([sys.executable, "-c", DEBUGGER_AFTER_A_RUN], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "debugger ok" in done.stdout, done.stderr[-2000:]


def test_setting_the_trace_function_that_is_already_set_passes(tmp_path):
    """doctest saves and restores the trace function (None when there is none): that must keep working."""
    lm = ScriptedLM([("Same.", "import sys\nsys.settrace(sys.gettrace())\nsys.setprofile(None)\nprint('fine')"),
                     ("Done.", "SUBMIT(result='done')")])
    run = DeepAgent(lm=lm, workspace=tmp_path, timeout=30).run("same", {})
    assert run.steps[0].output == "fine"


def test_a_trace_function_a_step_leaves_installed_is_removed_after_it():
    """Where nothing refuses it (a sub-agent's kernel has no timer patches), the step puts the trace function back."""
    import ast

    from deepagent_magics.interpreters.kernel_side import exec_step, split_trailing_expression

    code = "import sys\nsys.settrace(lambda frame, event, arg: None)\nsys.setprofile(None)\n1 + 1"
    body, tail = split_trailing_expression(ast.parse(code, "<agent step 1>", "exec"))
    assert exec_step(body, tail, "<agent step 1>", {}) == 2
    assert sys.gettrace() is None
