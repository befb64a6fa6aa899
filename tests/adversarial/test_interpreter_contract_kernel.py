"""KernelInterpreter keeps DSPy's interpreter contract (issue 10, items 13, 14 and 15, kernel side).

- Values cross the process boundary as DSPy's own interpreters carry them: sets, tuples,
  dataclasses, namedtuples, pydantic models, dates are converted; anything else (and NaN) is an
  error, never silently its ``str``. Both ways: variables sent in, tool arguments, tool results and
  SUBMIT values coming back.
- Async tools are awaited on the host, also when the calling thread runs an event loop.
- DSPy's interpreter callbacks fire for start, execute, each tool call and shutdown; with none
  configured, the callback machinery is not entered; ``execute()`` after ``shutdown()`` raises.

Real kernels from a real pool.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import enum
import inspect
import threading
import time
from collections import namedtuple
from types import SimpleNamespace
from typing import Any

import dspy
import pydantic
import pytest
from dspy.primitives.code_interpreter import CodeExecutionError, CodeInterpreterError, FinalOutput
from dspy.utils.callback import BaseCallback

from deepagent_magics import DeepAgent
from deepagent_magics.interpreters.kernel import KernelInterpreter, KernelInterpreterFactory
from deepagent_magics.interpreters.pool import KernelPool
from deepagent_magics.testing import ScriptedLM

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


@dataclasses.dataclass
class Point:
    x: int
    y: int


Pair = namedtuple("Pair", "left right")


class Model(pydantic.BaseModel):
    name: str
    when: datetime.date


class Colour(enum.Enum):
    RED = "red"


class Opaque:
    def __str__(self):
        return "an opaque object"


CONVERTED = [  # (value, what the kernel's code sees), as dspy.PythonInterpreter converts it
    ({3, 1, 2}, [1, 2, 3]),
    (frozenset({"b", "a"}), ["a", "b"]),
    ((1, (2, 3)), [1, [2, 3]]),
    (Point(1, 2), {"x": 1, "y": 2}),
    (Pair(1, "r"), {"left": 1, "right": "r"}),
    (Model(name="n", when=datetime.date(2024, 1, 2)), {"name": "n", "when": "2024-01-02"}),
    (datetime.datetime(2024, 1, 2, 3, 4, 5), "2024-01-02T03:04:05"),
    (Colour.RED, "red"),
    ({"nested": [{1, 2}, Point(0, 0)]}, {"nested": [[1, 2], {"x": 0, "y": 0}]}),
    ({1: "int key"}, {"1": "int key"}),
    (b"utf-8 text", "utf-8 text"),
]
REFUSED = [Opaque(), float("nan"), float("inf"), {(1, 2): "tuple key"}, b"\xff\xfe", [object()], lambda: 1,
           complex(1, 2), (n for n in range(3))]
IDS_CONVERTED = ["set", "frozenset", "tuple", "dataclass", "namedtuple", "pydantic", "datetime", "enum", "nested",
                 "int key", "bytes"]
IDS_REFUSED = ["object", "nan", "inf", "tuple key", "binary bytes", "object in a list", "function", "complex",
               "generator"]


# --------------------------------------------------------------------------- item 14: values, both ways
def test_variables_sent_to_the_kernel_are_converted_as_dspy_converts_them(make):
    interpreter = make()
    variables = {f"v{i}": value for i, (value, _) in enumerate(CONVERTED)}
    seen = interpreter.execute("import json\njson.dumps([" + ", ".join(variables) + "])", variables)
    import json

    assert json.loads(seen) == [expected for _, expected in CONVERTED]


@pytest.mark.parametrize("value", REFUSED, ids=IDS_REFUSED)
def test_a_variable_that_cannot_travel_is_an_interpreter_error_not_its_str(make, value):
    interpreter = make()
    with pytest.raises(CodeInterpreterError, match="cannot|JSON"):
        interpreter.execute("print(type(v).__name__, v)", {"v": value})
    # Nothing half-sent: a good value under the same name goes through afterwards.
    assert interpreter.execute("v", {"v": "fine"}) == "fine"


def test_tool_results_are_converted_and_one_that_cannot_travel_is_an_error_the_code_sees(make):
    results = {f"r{i}": value for i, (value, _) in enumerate(CONVERTED)}
    refused = {f"bad{i}": value for i, value in enumerate(REFUSED)}

    def give(name: str) -> Any:
        return {**results, **refused}[name]

    interpreter = make(tools={"give": give})
    import json

    seen = interpreter.execute("import json\njson.dumps([give(n) for n in " + repr(list(results)) + "])")
    assert json.loads(seen) == [expected for _, expected in CONVERTED]
    for name in refused:
        out = interpreter.execute(f"try:\n    give({name!r})\n    print('ACCEPTED')\nexcept Exception as exc:\n"
                                  "    print(type(exc).__name__, exc)")
        assert "ACCEPTED" not in out and "CodeInterpreterError" in out and "JSON" in out, (name, out)


def test_tool_arguments_from_the_kernel_are_converted_or_answered_with_an_error_in_the_kernel(make):
    received = []

    def take(value: Any) -> str:
        received.append(value)
        return type(value).__name__

    interpreter = make(tools={"take": take})
    out = interpreter.execute(
        "import collections, dataclasses, datetime\n"
        "@dataclasses.dataclass\nclass P:\n    x: int\n"
        "T = collections.namedtuple('T', 'a b')\n"
        "kinds = [take({3, 1}), take((1, 2)), take(P(5)), take(T(1, 2)), take(datetime.date(2024, 1, 2))]\n"
        "errors = [take(bad) for bad in (object(), float('nan'), b'\\xff')]\n"
        "print(kinds, [e.startswith('Error: an argument of take()') and 'JSON' in e for e in errors])"
    )
    assert received == [[1, 3], [1, 2], {"x": 5}, {"a": 1, "b": 2}, "2024-01-02"]  # the bad ones never left
    assert out == "['list', 'list', 'dict', 'dict', 'str'] [True, True, True]"  # a tool never raises at the model


def test_submit_values_are_converted_and_what_cannot_travel_arrives_as_text_that_says_so(make):
    interpreter = make(output_fields=[{"name": "answer"}, {"name": "points"}])
    result = interpreter.execute(
        "import dataclasses\n@dataclasses.dataclass\nclass P:\n    x: int\n"
        "SUBMIT(answer={2, 1}, points=(P(1), P(2)))"
    )
    assert result == FinalOutput({"answer": [1, 2], "points": [{"x": 1}, {"x": 2}]})
    for code, start in (("SUBMIT(answer=object(), points=[])", "<object, sent as text> <object object at"),
                        ("SUBMIT(answer=float('nan'), points=[])", "<float, sent as text> nan"),
                        ("SUBMIT(answer=print, points=[])", "<builtin_function_or_method, sent as text> <built-in")):
        answer = interpreter.execute(code).output["answer"]  # nothing lost: the parent reads what it was
        assert answer.startswith(start), answer
    assert interpreter.execute("SUBMIT(answer='ok', points=[])") == FinalOutput({"answer": "ok", "points": []})


# --------------------------------------------------------------------------- item 13: async tools
async def fetch_price(symbol: str) -> float:
    """The price of ``symbol``."""
    await asyncio.sleep(0.01)
    return {"ACME": 12.5}[symbol]


def test_an_async_tool_is_awaited_on_the_host(make):
    async def fails() -> str:
        await asyncio.sleep(0)
        raise ValueError("async tool broke")

    interpreter = make(tools={"fetch_price": fetch_price, "fails": fails})
    out = interpreter.execute("p = fetch_price('ACME')\n"
                              "try:\n    fails()\nexcept ValueError as exc:\n    print('caught', exc)\n"
                              "print(type(p).__name__, p)")
    assert out == "caught async tool broke\nfloat 12.5"


def test_an_async_tool_is_awaited_when_the_calling_thread_runs_an_event_loop(make):
    interpreter = make(tools={"fetch_price": fetch_price})

    async def notebook_cell():  # a notebook's main thread runs ipykernel's event loop
        return interpreter.execute("fetch_price('ACME')")

    assert asyncio.run(notebook_cell()) == "12.5"


def test_a_sub_agent_awaits_its_parents_async_tool(pool, tmp_path):
    lm = ScriptedLM(scripts={
        "ASYNC-ROOT": [("Delegate.", "r = delegate('ASYNC-CHILD: price ACME')\nSUBMIT(result=r)")],
        "ASYNC-CHILD": [("Price.", "p = fetch_price('ACME')\nSUBMIT(result=f'{type(p).__name__} {p}')")],
    })
    run = DeepAgent(lm=lm, workspace=tmp_path, pool=pool, tools=[fetch_price]).run("ASYNC-ROOT: go", namespace={})
    assert run.status == "finished", run.error
    assert run.result == "float 12.5"


# --------------------------------------------------------------------------- item 15: callbacks
class Recorder(BaseCallback):
    def __init__(self):
        self.events: list[tuple[str, Any]] = []

    def _add(self, name, value):
        self.events.append((name, value))

    def on_interpreter_startup_start(self, call_id, instance, inputs):
        self._add("startup_start", type(instance).__name__)

    def on_interpreter_startup_end(self, call_id, outputs, exception=None):
        self._add("startup_end", exception)

    def on_interpreter_execute_start(self, call_id, instance, inputs):
        self._add("execute_start", inputs["code"])

    def on_interpreter_execute_end(self, call_id, outputs, exception=None):
        self._add("execute_end", outputs if exception is None else type(exception).__name__)

    def on_interpreter_tool_call_start(self, call_id, instance, inputs):
        self._add("tool_start", (inputs["tool_name"], inputs["args"], inputs["kwargs"]))

    def on_interpreter_tool_call_end(self, call_id, outputs, exception=None):
        self._add("tool_end", outputs if exception is None else type(exception).__name__)

    def on_interpreter_shutdown_start(self, call_id, instance, inputs):
        self._add("shutdown_start", None)

    def on_interpreter_shutdown_end(self, call_id, outputs, exception=None):
        self._add("shutdown_end", exception)


def test_dspy_interpreter_callbacks_fire_for_start_execute_tool_calls_and_shutdown(pool, tmp_path):
    def double(n: int) -> int:
        return 2 * n

    def broken() -> int:
        raise RuntimeError("no")

    recorder = Recorder()
    interpreter = KernelInterpreter(pool=pool, cwd=str(tmp_path), tools={"double": double, "broken": broken})
    with dspy.context(callbacks=[recorder]):
        interpreter.start()
        interpreter.execute("x = double(21)\ntry:\n    broken()\nexcept RuntimeError:\n    pass\nx")
        with pytest.raises(CodeExecutionError):
            interpreter.execute("1/0")
        interpreter.shutdown()
        with pytest.raises(CodeInterpreterError, match="shut down"):
            interpreter.execute("x")
    names = [name for name, _ in recorder.events]
    assert names[:2] == ["startup_start", "startup_end"] and names.count("startup_start") == 1
    assert recorder.events[0][1] == "KernelInterpreter"
    assert ("tool_start", ("double", [21], {})) in recorder.events and ("tool_end", 42) in recorder.events
    assert ("tool_start", ("broken", [], {})) in recorder.events and ("tool_end", "RuntimeError") in recorder.events
    assert ("execute_end", "42") in recorder.events and ("execute_end", "CodeExecutionError") in recorder.events
    assert names.count("shutdown_start") == names.count("shutdown_end") == 1
    assert names[-2:] == ["execute_start", "execute_end"]  # the execute after shutdown: seen, and it raised
    assert recorder.events[-1] == ("execute_end", "CodeInterpreterError")


def test_callbacks_see_an_rlm_run_on_kernels(pool):
    recorder = Recorder()
    lm = ScriptedLM([("Ask.", "a = llm_query('hi')\nprint(a)"), ("Done.", "SUBMIT(result=a)")], replies="hello")
    rlm = dspy.RLM("question -> result", max_iters=4, interpreter_factory=KernelInterpreterFactory(pool=pool))
    with dspy.context(lm=lm, callbacks=[recorder]):
        assert rlm(question="q").result == "hello"
    names = [name for name, _ in recorder.events]
    assert "startup_start" in names and "shutdown_end" in names
    assert [value[0] for name, value in recorder.events if name == "tool_start"] == ["llm_query"]
    assert names.count("execute_start") >= 2


def test_without_callbacks_the_callback_machinery_is_not_entered(make, monkeypatch):
    import dspy.utils.callback as callback

    def entered(*args, **kwargs):
        raise AssertionError("the callback machinery ran with no callbacks configured")

    # Only DSPy's callback module sees the tripwires: patching the uuid and inspect modules themselves
    # would also break the pool's background kernel start (jupyter_client names kernels with uuid4).
    monkeypatch.setattr(callback, "uuid", SimpleNamespace(uuid4=entered))  # the first thing with_callbacks does
    monkeypatch.setattr(callback, "inspect", SimpleNamespace(getcallargs=entered,
                                                             iscoroutinefunction=inspect.iscoroutinefunction))
    interpreter = make(tools={"double": lambda n: 2 * n})
    with dspy.context(callbacks=[]):
        interpreter.start()
        assert interpreter.execute("double(4)") == "8"
        interpreter.shutdown()


def test_execute_after_shutdown_raises_and_takes_no_kernel(pool, tmp_path):
    interpreter = KernelInterpreter(pool=pool, cwd=str(tmp_path))
    interpreter.execute("x = 1")
    interpreter.shutdown()
    for _ in range(2):
        with pytest.raises(CodeInterpreterError, match="shut down"):
            interpreter.execute("x")
        with pytest.raises(CodeInterpreterError, match="shut down"):
            interpreter.start()
    assert interpreter.kernel is None


def test_tool_calls_from_the_kernel_run_in_the_calling_thread(make):
    seen = []
    interpreter = make(tools={"where": lambda: seen.append(threading.get_ident()) or "here"})
    assert interpreter.execute("where()") == "here"
    assert seen == [threading.get_ident()]


WATCH_STDIN = """
import threading as _threading, zmq as _zmq
from zmq.utils.monitor import recv_monitor_message as _recv
from IPython import get_ipython as _ip
_stdin_gone = _threading.Event()
def _watch(monitor):
    while True:
        if _recv(monitor)["event"] == _zmq.EVENT_DISCONNECTED:
            _stdin_gone.set()
_threading.Thread(target=_watch, args=(_ip().kernel.stdin_socket.get_monitor_socket(_zmq.EVENT_DISCONNECTED),),
                  daemon=True).start()
"""


def disconnect_stdin(interpreter):
    """Disconnect the host's stdin socket and wait until the kernel's ROUTER has seen it go: until then it
    still routes to the old peer, and a request sent meanwhile is lost (a fixed sleep lost that race under load)."""
    interpreter.execute(WATCH_STDIN)
    client = interpreter.kernel.client
    url, socket = client._make_url("stdin"), client.stdin_channel.socket
    socket.disconnect(url)
    deadline = time.monotonic() + 60
    while interpreter.execute("print(_stdin_gone.is_set())") != "True":
        assert time.monotonic() < deadline, "the kernel never saw the host's stdin connection close"
        time.sleep(0.05)
    return url, socket


def test_a_tool_call_the_host_cannot_receive_is_an_error_not_a_hang(make):
    """A ROUTER drops a message for a peer it does not know: an input_request sent while the host's
    stdin connection is down would wait forever. The kernel sends it again for a while, then says so."""
    interpreter = make(tools={"double": lambda n: 2 * n})
    disconnect_stdin(interpreter)
    out = interpreter.execute(
        "try:\n    double(2)\nexcept Exception as exc:\n    print(type(exc).__name__, exc)\n"
    )
    assert "ToolError" in out and "not connected" in out


def test_a_tool_call_sent_before_the_host_reconnects_reaches_it(make):
    interpreter = make(tools={"double": lambda n: 2 * n})
    url, socket = disconnect_stdin(interpreter)
    poller, since = interpreter._poller, time.monotonic()

    class ReconnectingPoller:  # the host's own thread reconnects, a second into the step (zmq sockets stay in one thread)
        connected = False

        def poll(self, timeout):
            if not self.connected and time.monotonic() - since > 1.0:
                socket.connect(url)
                self.connected = True
            return poller.poll(timeout)

    interpreter._poller = ReconnectingPoller()
    assert interpreter.execute("double(21)") == "42"
    assert interpreter._poller.connected
