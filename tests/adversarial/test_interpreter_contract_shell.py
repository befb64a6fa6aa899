"""The ShellInterpreter keeps DSPy's interpreter contract (issue 10, items 13 and 15, the root's half).

Running DSPy's own interpreter tests against the ShellInterpreter found that async tools
were never awaited (a run "finished" with ``'<coroutine object ...>'``), that DSPy's
interpreter callbacks never fired (so MLflow's or Langfuse's DSPy tracing saw no
interpreter activity), and that ``execute()`` after ``shutdown()`` still ran code.
"""

from __future__ import annotations

import asyncio
import threading

import dspy
import pytest
from dspy.primitives.code_interpreter import CodeExecutionError, CodeInterpreterError
from dspy.utils.callback import BaseCallback

from deepagent_magics import DeepAgent
from deepagent_magics.interpreters.shell import ShellInterpreter
from deepagent_magics.testing import ScriptedLM


async def fetch_price(symbol: str) -> float:
    """The price of ``symbol`` (async, as a client library's call would be)."""
    await asyncio.sleep(0.01)
    return {"ACME": 42.5, "INIT": 7.0}[symbol]


async def failing_quote(symbol: str) -> float:
    """Always fails, asynchronously."""
    await asyncio.sleep(0)
    raise LookupError(f"no quote for {symbol}")


def model_in_context(prompt: str) -> str:
    """Which LM the tool sees: dspy.context settings must reach it."""
    return str(dspy.settings.lm.model if dspy.settings.lm else None)


async def async_model_in_context(prompt: str) -> str:
    """The same, from a coroutine."""
    return str(dspy.settings.lm.model if dspy.settings.lm else None)


def agent_with(steps, tmp_path, tools=(fetch_price, failing_quote, model_in_context, async_model_in_context)):
    return DeepAgent(lm=ScriptedLM(steps), workspace=tmp_path, tools=list(tools), timeout=30)


# --------------------------------------------------------------------------- item 13: async tools
ASYNC_CALLS = {
    "keyword": "p = fetch_price(symbol='ACME')",
    "positional": "p = fetch_price('ACME')",
    "in an expression": "p = fetch_price('ACME') + fetch_price('INIT') - 7.0",
    "in a comprehension": "p = sum(fetch_price(s) for s in ['ACME']) ",
}


@pytest.mark.parametrize("case", list(ASYNC_CALLS))
def test_an_async_tool_gives_agent_code_its_value(tmp_path, case):
    steps = [("Price.", ASYNC_CALLS[case] + "\nprint(type(p).__name__, p)"), ("Done.", "SUBMIT(result=str(p))")]
    run = agent_with(steps, tmp_path).run("price", {})
    assert run.status == "finished", run.error
    assert run.steps[0].output == "float 42.5"
    assert run.result == "42.5"


def test_an_async_tools_error_is_the_agents_to_read(tmp_path):
    steps = [("Quote.", "failing_quote('ACME')"), ("Done.", "SUBMIT(result='carried on')")]
    run = agent_with(steps, tmp_path).run("quote", {})
    assert run.result == "carried on"
    assert "LookupError: no quote for ACME" in run.steps[0].output


def test_async_tools_work_where_an_event_loop_already_runs(tmp_path):
    """A notebook's main thread runs ipykernel's event loop: the coroutine must not need it."""
    steps = [("Price.", "print(fetch_price('INIT'))"), ("Done.", "SUBMIT(result='ok')")]

    async def inside_a_loop():
        return agent_with(steps, tmp_path).run("price", {})

    run = asyncio.run(inside_a_loop())
    assert run.steps[0].output == "7.0"


def test_tools_see_the_runs_dspy_settings_sync_and_async(tmp_path):
    steps = [("Which LM?", "print(model_in_context('x'), async_model_in_context('x'))"), ("Done.", "SUBMIT(result='ok')")]

    async def inside_a_loop():  # the helper thread path copies the context
        return agent_with(steps, tmp_path).run("which", {})

    for run in (agent_with(steps, tmp_path).run("which", {}), asyncio.run(inside_a_loop())):
        assert run.steps[0].output == "scripted/demo scripted/demo"


def test_run_coroutine_is_one_public_helper_the_pool_uses_too():
    from deepagent_magics.coroutines import run_coroutine
    from deepagent_magics.interpreters.pool import pooled_kernel as kernel

    assert kernel.run_coroutine is run_coroutine
    assert run_coroutine(fetch_price("ACME")) == 42.5


# --------------------------------------------------------------------------- item 15: callbacks
class Recorder(BaseCallback):
    def __init__(self):
        self.events = []
        self.lock = threading.Lock()

    def _add(self, name, **data):
        with self.lock:
            self.events.append((name, data))

    def on_interpreter_startup_start(self, call_id, instance, inputs):
        self._add("startup_start", instance=instance)

    def on_interpreter_startup_end(self, call_id, outputs, exception=None):
        self._add("startup_end", exception=exception)

    def on_interpreter_execute_start(self, call_id, instance, inputs):
        self._add("execute_start", code=inputs.get("code"))

    def on_interpreter_execute_end(self, call_id, outputs, exception=None):
        self._add("execute_end", outputs=outputs, exception=exception)

    def on_interpreter_tool_call_start(self, call_id, instance, inputs):
        self._add("tool_call_start", tool=inputs.get("tool_name"), args=inputs.get("args"), kwargs=inputs.get("kwargs"))

    def on_interpreter_tool_call_end(self, call_id, outputs, exception=None):
        self._add("tool_call_end", outputs=outputs, exception=exception)

    def on_interpreter_shutdown_start(self, call_id, instance, inputs):
        self._add("shutdown_start", instance=instance)

    def on_interpreter_shutdown_end(self, call_id, outputs, exception=None):
        self._add("shutdown_end")


def test_dspy_interpreter_callbacks_fire_for_start_execute_tools_and_shutdown(tmp_path):
    recorder = Recorder()
    steps = [("Price.", "p = fetch_price('ACME')\nwrite_todos([{'content': 'x', 'status': 'pending'}])\nprint(p)"),
             ("Fail.", "1 / 0"),
             ("Done.", "SUBMIT(result=str(p))")]
    with dspy.context(callbacks=[recorder]):
        run = agent_with(steps, tmp_path).run("price", {})
    assert run.result == "42.5"
    names = [name for name, _ in recorder.events]
    assert names[:3] == ["execute_start", "startup_start", "startup_end"]  # started by the first execute
    assert names.count("startup_start") < names.count("execute_start")  # not once per execute
    assert names[-2:] == ["shutdown_start", "shutdown_end"]
    assert isinstance(recorder.events[1][1]["instance"], ShellInterpreter)
    codes = [data["code"] for name, data in recorder.events if name == "execute_start"]
    assert [c for c in codes if "fetch_price" in c or "1 / 0" in c or "SUBMIT" in c] == [s[1] for s in steps]
    tools = [(data["tool"], data["args"], data["kwargs"]) for name, data in recorder.events if name == "tool_call_start"]
    assert ("fetch_price", ("ACME",), {}) in tools
    assert "write_todos" in [t[0] for t in tools]
    ends = [data for name, data in recorder.events if name == "tool_call_end"]
    assert 42.5 in [data["outputs"] for data in ends]
    failed = [data for name, data in recorder.events if name == "execute_end" and data["exception"] is not None]
    assert any(isinstance(data["exception"], CodeExecutionError) for data in failed)  # the 1 / 0 step


def test_a_tool_that_raises_reports_its_exception_to_callbacks(tmp_path):
    recorder = Recorder()
    steps = [("Quote.", "failing_quote('X')"), ("Done.", "SUBMIT(result='ok')")]
    with dspy.context(callbacks=[recorder]):
        agent_with(steps, tmp_path).run("quote", {})
    ends = [data for name, data in recorder.events if name == "tool_call_end"]
    assert any(isinstance(data["exception"], LookupError) for data in ends)


def test_interpreter_level_callbacks_fire_too():
    recorder = Recorder()
    interpreter = ShellInterpreter({}, tools={"double": lambda x: 2 * x})
    interpreter.callbacks = [recorder]
    interpreter.output_fields = [{"name": "result"}]
    assert interpreter.execute("double(21)") == "42"
    interpreter.shutdown()
    names = [name for name, _ in recorder.events]
    assert names == ["execute_start", "startup_start", "startup_end", "tool_call_start", "tool_call_end",
                     "execute_end", "shutdown_start", "shutdown_end"]


def test_execute_after_shutdown_raises():
    interpreter = ShellInterpreter({"x": 1})
    interpreter.output_fields = [{"name": "result"}]
    assert interpreter.execute("x + 1") == "2"
    interpreter.shutdown()
    with pytest.raises(CodeInterpreterError, match="shut down"):
        interpreter.execute("x + 1")
    with pytest.raises(CodeInterpreterError, match="shut down"):
        interpreter.start()
    interpreter.shutdown()  # twice is harmless
    never_started = ShellInterpreter({})
    never_started.shutdown()
    with pytest.raises(CodeInterpreterError):
        never_started.execute("1")


def test_unknown_tool_names_are_an_interpreter_error():
    interpreter = ShellInterpreter({})
    with pytest.raises(CodeInterpreterError, match="Unknown tool"):
        interpreter.invoke_tool("nope", (), {})
