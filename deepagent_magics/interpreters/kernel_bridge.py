"""The host end of a sub-agent kernel's tool calls: checked, run, carried back, and cancellable.

A kernel's tool stub asks with an ``input_request`` (see `kernel_side`); `ToolBridge._answer`
reads the request, refuses what may not reach the host (an unknown tool, a facade request
DSPy must not see: `facade_guard`), runs the tool through ``invoke_tool`` (which DSPy's
callbacks see as an interpreter tool call), awaits a coroutine a tool returns, and answers
with the value as JSON (`wire`), or with the error. One request is not a tool: a runtime check in
the kernel (`runtime_checks.hook`) asking the user about an action (`APPROVE_TOOL`), which goes to
the root's approver as the sub-agent's blocks do (`ToolBridge._approve`).

When the sub-agent is stopped while its thread is inside a host tool, the tool is told
(the session's ``cancelled`` event, which long tool loops check) and, unless it is one
that ends on its own (an LM call, a delegation) or it returns within `CANCEL_EVERY`, a
`SubAgentCancelled` exception is raised in its thread until it has left the tool: a tool spinning in Python ends, and one
sleeping in C ends as soon as it wakes. The parent does not wait for either (see
``tools/delegation/child.py``).
"""

from __future__ import annotations

import functools
import inspect
import json
import threading
import time
from typing import Any, Callable

from dspy.utils.callback import with_callbacks

from ..errors import DeepAgentSignal
from ..coroutines import run_coroutine
from ..core.loop.pipeline import through
from ..core.model.facade_requests import facade_requests
from ..core.policy import approval
from ..core.run.stopping import StopRun
from .async_raise import raise_in, take_back
from .facade_guard import FacadeGuard
from .kernel_side import APPROVE_TOOL, TOOL_PROMPT
from .wire import NotCarried, to_wire

# Tools that end by themselves when their sub-agent is stopped: an LM call is abandoned by the
# parent, a delegation stops its own children. Others get `SubAgentCancelled` raised in them.
COOPERATIVE_TOOLS = frozenset({"llm_query", "llm_query_batched", "delegate", "delegate_batched", "review",
                               "__dspy_call__", "__dspy_construct__"})
CANCEL_EVERY = 0.2  # seconds between raises in a tool that has not left yet
CANCEL_FOR = 60.0  # then give up (a tool blocked in C for longer ends when it wakes: the bridge checks)


class SubAgentCancelled(DeepAgentSignal):
    """Raised in a host tool whose sub-agent was stopped (a BaseException: `except Exception` can't eat it)."""


class ToolBridge:
    """Mixin for `KernelInterpreter`: answering its kernel's tool calls."""

    tools: dict[str, Callable[..., Any]]
    run: Any
    cancelled: threading.Event | None
    _check_stopped: Callable[[], None]

    def _init_bridge(self, wrap_tool: Callable[[str, Callable[..., Any]], Callable[..., Any]]) -> None:
        self._wrap_tool = wrap_tool
        self._wrapped: dict[str, tuple[Any, Callable[..., Any]]] = {}
        self._guard = FacadeGuard()
        self._tool_call: tuple[threading.Thread, str] | None = None  # the host tool running now, if any

    # ------------------------------------------------------------- answering
    def _answer(self, prompt: str) -> str:
        """Run the tool a kernel stub asked for; the JSON reply it gets back."""
        if not isinstance(prompt, str) or not prompt.startswith(TOOL_PROMPT):
            return ""  # the agent's code called input(): there is no one to answer
        try:
            request = json.loads(prompt[len(TOOL_PROMPT):])
            name, args, kwargs = request["tool"], request.get("args") or [], request.get("kwargs") or {}
            if not isinstance(name, str) or not isinstance(args, list) or not isinstance(kwargs, dict):
                raise TypeError("expected a tool name, a list of arguments and a dict of keyword arguments")
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
            return _error(f"malformed tool request: {exc}", "RuntimeError")
        self._check_stopped()
        if name == APPROVE_TOOL:
            return self._approve(args)
        call = self._tool_call = (threading.current_thread(), name)
        try:
            value = self.invoke_tool(name, args, kwargs)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # SubAgentCancelled included: the stop below says what happened
            self._check_stopped()
            return _error(str(exc) or type(exc).__name__, type(exc).__name__)
        finally:
            if self._tool_call is call:
                self._tool_call = None
        self._check_stopped()  # a stopped sub-agent's tool result goes nowhere
        try:
            return json.dumps({"value": to_wire(value, f"the result of {name}()")}, allow_nan=False)
        except NotCarried as exc:
            return _error(str(exc), "CodeInterpreterError")

    def _approve(self, args: list[Any]) -> str:
        """A runtime check in the kernel asks the user (through the root's approver, labelled with this
        sub-agent): the JSON reply holds None (go ahead) or the refusal the agent's code reads."""
        action = args[0] if args and isinstance(args[0], dict) else {}
        rule, question = action.get("rule"), action.get("action")
        if not isinstance(rule, str) or not isinstance(question, str):
            return _error("malformed approval request", "RuntimeError")
        try:
            answer = approval.review_action(self.run, rule, question[:500])
        except StopRun as stop:
            answer = f"Not allowed: {stop}"
        return json.dumps({"value": answer})

    @with_callbacks
    def invoke_tool(self, tool_name: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        """Run one host tool for the kernel's code (DSPy's ``on_interpreter_tool_call_*`` callbacks see it)."""
        tool = self.tools.get(tool_name)
        if tool is None:
            raise NameError(f"no tool named {tool_name!r}")
        self._guard.check(tool_name, args, kwargs)
        return self._wrapped_tool(tool_name, tool)(*args, **kwargs)

    def _wrapped_tool(self, name: str, tool: Callable[..., Any]) -> Callable[..., Any]:
        cached = self._wrapped.get(name)
        if cached is None or cached[0] is not tool:
            cached = self._wrapped[name] = (tool, self._wrap_tool(name, _awaited(tool)))
        return cached[1]

    # ------------------------------------------------------------- cancelling
    def _cancel_tool_call(self) -> None:
        """The sub-agent is being stopped: tell its tools, and end a tool that would not end by itself."""
        if self.cancelled is not None:
            self.cancelled.set()
        call = self._tool_call
        if call is None or call[1] in COOPERATIVE_TOOLS:
            return
        threading.Thread(target=self._raise_in_tool, args=(call,), name="deepagent-cancel-tool", daemon=True).start()

    def _raise_in_tool(self, call: tuple[threading.Thread, str]) -> None:
        thread = call[0]
        deadline = time.monotonic() + CANCEL_FOR
        time.sleep(CANCEL_EVERY)  # a tool that watches `cancelled` ends by itself first
        while self._tool_call is call and thread.is_alive() and time.monotonic() < deadline:
            raise_in(thread.ident, SubAgentCancelled)
            time.sleep(CANCEL_EVERY)
        if self._tool_call is not call:  # it left the tool: take back a raise it has not seen yet
            take_back(thread.ident)


def _awaited(tool: Callable[..., Any]) -> Callable[..., Any]:
    """``tool``, with a coroutine it returns run to completion (RLM wraps async tools in async functions).

    DSPy's facade call tool calls its LM with a Request, not the deprecated ``messages=`` (`core.model.facade_requests`)."""
    tool = facade_requests(tool, through)

    @functools.wraps(tool)
    def call(*args: Any, **kwargs: Any) -> Any:
        value = tool(*args, **kwargs)
        return run_coroutine(_await(value)) if inspect.isawaitable(value) else value

    return call


async def _await(awaitable: Any) -> Any:
    return await awaitable


def _error(message: str, kind: str) -> str:
    return json.dumps({"error": message, "type": kind})
