"""KernelInterpreter: a dspy CodeInterpreter over a real Jupyter kernel from a real KernelPool."""

from __future__ import annotations

import os
import threading
import time

import dspy
import psutil
import pytest
from dspy.primitives.code_interpreter import CodeExecutionError, CodeInterpreterError, FinalOutput

from deepagent_magics.interpreters.kernel import KernelInterpreter, KernelInterpreterFactory
from deepagent_magics.interpreters.pool import KernelPool
from deepagent_magics.core.run.run import Run
from deepagent_magics.core.run.session import Session
from deepagent_magics.core.loop.tool_binding import binder
from deepagent_magics.testing import ScriptedLM
from deepagent_magics.tools import write_file
from deepagent_magics.core.workspace.workspace import Workspace

pytestmark = pytest.mark.kernel


@pytest.fixture(scope="module")
def pool():
    pool = KernelPool(size=1).warm()
    yield pool
    pool.stop()


@pytest.fixture
def make(pool, tmp_path):
    made = []

    def make(**kwargs):
        kwargs.setdefault("cwd", str(tmp_path))
        interpreter = KernelInterpreter(pool=pool, **kwargs)
        made.append(interpreter)
        return interpreter

    yield make
    for interpreter in made:
        interpreter.shutdown()


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_code_runs_in_another_process_state_persists_and_output_is_collected(make, tmp_path):
    interpreter = make()
    interpreter.execute("import os, sys\nx = 20")
    assert interpreter.pid != os.getpid()
    out = interpreter.execute(
        "print('to stdout')\n"
        "print('to stderr', file=sys.stderr)\n"
        "from IPython.display import Markdown, display\n"
        "display(Markdown('**rich**'))\n"
        "x * 2 + 2"
    )
    assert out.splitlines() == ["to stdout", "to stderr", "**rich**", "42"]
    assert interpreter.execute("os.getcwd()") == str(tmp_path)
    # The kernel's own pid: the host's view of it, or 1 in a sandbox (the init of its PID namespace).
    assert interpreter.execute("os.getpid()") in (str(interpreter.pid), "1")
    assert interpreter.execute("y = 1") is None  # no output, no echo of an assignment


def test_errors_are_code_execution_errors_and_the_kernel_carries_on(make):
    interpreter = make()
    with pytest.raises(CodeExecutionError) as error:
        interpreter.execute("print('before')\nvalue = 1\n1 / value_missing")
    assert "before" in str(error.value)
    assert "<agent step 1>" in str(error.value) and "NameError" in str(error.value)
    with pytest.raises(SyntaxError):
        interpreter.execute("def broken(:\n    pass")
    with pytest.raises(CodeExecutionError, match="SystemExit"):
        interpreter.execute("import sys\nsys.exit(3)")
    assert interpreter.execute("value + 1") == "2"


def test_submit_returns_final_output_with_the_output_fields(make):
    interpreter = make(output_fields=[{"name": "answer"}, {"name": "count"}])
    result = interpreter.execute("SUBMIT('yes', count=3)")
    assert result == FinalOutput({"answer": "yes", "count": 3})
    with pytest.raises(CodeExecutionError, match="unexpected fields"):
        interpreter.execute("SUBMIT(answer='a', count=1, extra=2)")


def test_tool_calls_run_on_the_host_and_return_their_value(make, tmp_path):
    calls = []

    def lookup(key: str, default: int = 0) -> dict:
        calls.append((key, default, threading.get_ident(), os.getpid()))
        return {"key": key, "values": [default, default + 1]}

    def strict(n: int) -> int:
        raise ValueError(f"n={n} is out of range")

    run = Run("task")
    session = Session(run, Workspace(tmp_path, on_write=run.record_file))
    interpreter = make(tools={"lookup": lookup, "strict": strict, "write_file": write_file},
                       wrap_tool=binder(session))
    out = interpreter.execute(
        "r = lookup('a', default=4)\n"
        "try:\n    strict(5)\nexcept ValueError as exc:\n    print('caught', exc)\n"
        "print(write_file('notes/from_kernel.txt', 'written by the kernel'))\n"
        "print(input('not a tool call') == '')\n"
        "r"
    )
    assert calls == [("a", 4, threading.get_ident(), os.getpid())]  # on the host, in the executing thread
    assert out.splitlines() == [
        "caught n=5 is out of range",
        "Wrote 21 bytes to notes/from_kernel.txt",
        "True",
        "{'key': 'a', 'values': [4, 5]}",
    ]
    assert (tmp_path / "notes" / "from_kernel.txt").read_text() == "written by the kernel"
    assert run.files_written == ["notes/from_kernel.txt"]  # the tool acted on the session's run


def test_a_timeout_interrupts_the_code_and_keeps_the_kernel(make):
    def slow_tool() -> str:
        time.sleep(1.5)
        return "slow"

    interpreter = make(timeout=1, tools={"slow_tool": slow_tool})
    with pytest.raises(CodeExecutionError, match="TimeoutError"):
        interpreter.execute("before = 'kept'\nwhile True:\n    pass")
    assert interpreter.execute("before") == "kept"
    # Time spent in a host tool does not count against the code's limit.
    assert interpreter.execute("slow_tool()") == "slow"


def test_code_that_ignores_the_interrupt_gets_its_kernel_killed(make):
    interpreter = make(timeout=1)
    interpreter.execute("import os")
    pids = [pid for pid in (interpreter.pid, interpreter.kernel.signal_group) if pid]  # bwrap, the kernel in it
    with pytest.raises(CodeInterpreterError, match="killed") as error:
        interpreter.execute(
            "import time\nwhile True:\n    try:\n        time.sleep(10)\n    except KeyboardInterrupt:\n        pass"
        )
    assert not isinstance(error.value, CodeExecutionError)  # terminal for the sub-agent
    assert all(gone(pid) for pid in pids)


@pytest.mark.parametrize("code", ["import os\nos._exit(1)", "import ctypes\nctypes.string_at(0)"],
                         ids=["os._exit", "segfault"])
def test_a_kernel_that_dies_is_a_terminal_interpreter_error(make, code):
    interpreter = make()
    interpreter.execute("x = 1")
    with pytest.raises(CodeInterpreterError, match="kernel died") as error:
        interpreter.execute(code)
    assert not isinstance(error.value, CodeExecutionError)


def test_each_execution_closes_the_runs_open_step(make):
    run = Run("task")
    run.start()
    interpreter = make(run=run)
    run.begin_step("look", "print('hello')")
    interpreter.execute("print('hello')")
    run.begin_step("fail", "1/0")
    with pytest.raises(CodeExecutionError):
        interpreter.execute("1/0")
    assert run.steps[0].output == "hello"
    assert run.steps[1].output.startswith("[Error] Traceback") and run.steps[1].finished


def test_stop_from_another_thread_ends_the_running_code(make):
    interpreter = make()
    interpreter.execute("x = 1")
    threading.Timer(0.5, interpreter.stop).start()
    with pytest.raises(KeyboardInterrupt):
        interpreter.execute("import time\ntime.sleep(30)")

    other = make()
    other.execute("import os\npid = os.getpid()")
    pid = other.pid
    stopper = threading.Timer(0.5, lambda: other.stop("stopped by the parent", hard=True))
    stopper.start()
    with pytest.raises(CodeInterpreterError, match="stopped by the parent"):
        other.execute("import time\ntime.sleep(30)")
    stopper.join()  # stop() returns once the kernel is dead
    assert gone(pid)


def test_without_a_pool_a_kernel_is_started_and_shutdown_kills_it(tmp_path):
    interpreter = KernelInterpreter(cwd=str(tmp_path))
    try:
        assert interpreter.execute("import os\nos.getcwd()") == str(tmp_path)  # a str is echoed as is
        pid = interpreter.pid
    finally:
        interpreter.shutdown()
    assert gone(pid)


def test_rlm_runs_on_kernels_with_llm_query_and_the_sandbox_dspy_facade(pool, tmp_path):
    """DSPy's RLM installs its dspy shim (SHIM_SETUP) in the interpreter: in a kernel it works,
    and predictors built there run on the host."""
    lm = ScriptedLM(
        [
            ("Ask.", "import os\nanswer = llm_query('capital of France?')\nprint(answer, os.getpid())"),
            ("Predict.", "import dspy\nqa = dspy.Predict('question -> answer')\nprint(qa(question='2+2?').answer)"),
            ("Done.", "SUBMIT(result=answer)"),
        ],
        replies={"capital of France": "Paris", "2+2": "4"},
    )
    factory = KernelInterpreterFactory(pool=pool, timeout=30)
    rlm = dspy.RLM("question -> result", max_iters=5, interpreter_factory=factory)
    with dspy.context(lm=lm):
        prediction = rlm(question="q")
    assert prediction.result == "Paris"
    outputs = [entry["output"] for entry in prediction.trajectory]
    assert outputs[0].split()[0] == "Paris" and int(outputs[0].split()[1]) != os.getpid()
    assert outputs[1].strip() == "4"
    assert "execution_instructions" not in factory.execution_instructions  # a formatted prompt fragment
    assert "Jupyter kernel of your own" in factory.execution_instructions
