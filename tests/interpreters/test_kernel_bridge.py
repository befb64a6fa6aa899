"""interpreters/kernel_bridge.py: the host end of a kernel's tool calls: read, checked, run, answered as JSON (the
bridge under a real kernel: tests/interpreters/test_kernel.py, tests/adversarial/test_facade_calls.py)."""

from __future__ import annotations

import json
import threading

from deepagent_magics.core.policy.approval import Approver, attach
from deepagent_magics.core.run.run import Run
from deepagent_magics.interpreters.kernel_bridge import SubAgentCancelled, ToolBridge
from deepagent_magics.interpreters.kernel_side import APPROVE_TOOL, TOOL_PROMPT


class Host(ToolBridge):
    """What `KernelInterpreter` gives the mixin: its tools, its run, a stop flag (here: none)."""

    def __init__(self, tools, run=None):
        self.tools, self.run, self.cancelled = tools, run or Run("sub"), threading.Event()
        self._init_bridge(lambda name, tool: tool)

    def _check_stopped(self):
        pass


def ask(host, tool, *args, **kwargs):
    return json.loads(host._answer(TOOL_PROMPT + json.dumps({"tool": tool, "args": list(args), "kwargs": kwargs})))


def test_a_tool_runs_on_the_host_and_its_value_comes_back_as_json():
    async def later(x: int) -> int:
        return x * 2

    host = Host({"add": lambda a, b=0: a + b, "later": later})
    assert ask(host, "add", 1, b=2) == {"value": 3}
    assert ask(host, "later", 4) == {"value": 8}  # a coroutine is run to completion


def test_errors_come_back_as_errors_the_kernel_raises():
    host = Host({"boom": lambda: 1 / 0, "odd": lambda: object()})
    assert ask(host, "boom") == {"error": "division by zero", "type": "ZeroDivisionError"}
    assert ask(host, "nope") == {"error": "no tool named 'nope'", "type": "NameError"}
    assert ask(host, "odd")["type"] == "CodeInterpreterError"
    assert json.loads(host._answer(TOOL_PROMPT + "{not json"))["error"].startswith("malformed tool request")
    assert host._answer("What is your name? ") == ""  # the agent's own input(): no one answers


def test_a_facade_request_dspy_must_not_see_is_refused_before_it_runs():
    ran = []
    host = Host({"__dspy_construct__": lambda *a, **k: ran.append(a)})
    reply = ask(host, "__dspy_construct__", "Predict", "q: evil_mod -> a", "p")
    assert reply["type"] == "FacadeRefused" and ran == []


def test_a_runtime_check_in_the_kernel_is_asked_through_the_roots_approver():
    root = Run("root")
    child = root.add_child("sub")
    attach(root, Approver(policy=lambda proposal: "n not from a sub-agent"))
    reply = ask(Host({}, child), APPROVE_TOOL, {"rule": "network", "action": "connect to x:443?"})
    assert reply["value"].startswith("Not allowed: the user's approval policy refused this action")
    assert root.approvals == [] and child.approvals[0]["agent"].startswith(f"sub-agent {child.id}")


def test_a_stopped_sub_agents_spinning_tool_is_ended():
    started, ended = threading.Event(), []

    def spin():
        started.set()
        try:
            while True:
                pass
        except SubAgentCancelled:
            ended.append(True)
            raise

    host = Host({"spin": spin})
    replies = []
    thread = threading.Thread(target=lambda: replies.append(ask(host, "spin")))
    thread.start()
    assert started.wait(10)
    host._cancel_tool_call()
    thread.join(30)
    assert ended == [True] and replies[0]["type"] == "SubAgentCancelled" and host.cancelled.is_set()
