"""KernelInterpreter: a dspy `CodeInterpreter` whose REPL is a Jupyter kernel of its own.

A sub-agent's code runs in a separate process, so it cannot see its parent's variables; it shares
only the workspace directory (the kernel's current directory). The kernel comes from a `KernelPool`
already started, connected and prepared, so the first step runs within milliseconds of taking it.

Each step is one ``execute_request`` (see `kernel_side`); what the code prints and displays comes
back on the iopub channel, and how it ended (ok, SUBMIT, error) in the ``execute_reply``. Tool calls
go to the host over the stdin channel: the kernel's tool stubs call ``input()`` with a JSON request,
the host runs the tool (through ``tool_binding.bind_tool``, so it acts on the sub-agent's run) and
answers with the JSON result (`kernel_bridge`). Every tool works this way, ``llm_query`` and
``delegate`` included, and so does DSPy's sandbox ``dspy`` facade, whose requests are checked first
(`facade_guard`): a kernel never makes the host import or evaluate a name it chose. Values cross as
JSON, converted as DSPy converts them (`wire`); one that cannot be is an error, never its ``str``.
DSPy's interpreter callbacks fire for ``start``, ``execute``, ``shutdown`` and each tool call
(``invoke_tool``), as for DSPy's own interpreters.
"""

from __future__ import annotations

import json
import keyword
import threading
import time
from typing import Any, Callable

import zmq
from dspy.primitives.code_interpreter import CodeExecutionError, CodeInterpreterError, FinalOutput
from dspy.primitives.facade import HOST_TOKEN_VAR
from dspy.utils.callback import with_callbacks

from ..errors import DeepAgentError
from ..core.loop.agent import DEFAULT_TIMEOUT
from ..core.policy import approval
from ..core.loop.tool_binding import accept_positional, binder
from ..core.run.run import Run
from ..core.run.run_tree import trace_headers
from ..core.run.session import Session
from .capture import bundle_to_text
from .kernel_bridge import ToolBridge
from .kernel_side import RESULT_SOURCE, RUNTIME_NAME, SETUP_FILENAME
from .pool import Kernel, KernelPool, KernelStartError, start_kernel
from .pool.limits import LimitHit
from .step_execution import StepInterpreter
from .wire import NotCarried, to_wire

POLL_SECONDS = 0.1
INTERRUPT_GRACE = 3.0  # seconds an interrupted kernel gets before it is killed
_MISSING = object()

KERNEL_EXECUTION_INSTRUCTIONS = (
    "Code runs in a Jupyter kernel of your own, in the shared workspace; your parent's variables are not defined "
    "there. Your variables persist between steps. Your parent gets your files "
    "and what you SUBMIT, as data (a dict stays a dict; the rest as text). A step may run {timeout:g} s."
)


class LimitExceeded(DeepAgentError, CodeInterpreterError):
    """A sub-agent's kernel hit one of its limits (`pool.limits`) and was stopped; the line its parent reads."""

    def __init__(self, hit: LimitHit):
        super().__init__(f"the sub-agent was stopped: {hit.line}")
        self.hit = hit


# StepInterpreter.execute without DSPy's callback wrapper, should it have one: this class adds its own.
_step_execute = getattr(StepInterpreter.execute, "__wrapped__", StepInterpreter.execute)


class KernelInterpreter(ToolBridge, StepInterpreter):
    """Execute agent code in a kernel taken from ``pool`` (or started for it).

    Args:
        pool: where to take the kernel from; without one a kernel is started on ``start()``.
        kernel_name: the kernel spec when starting without a pool (default: the host's Python).
        tools: host callables the code may call by name (RLM adds its own to ``tools``).
        timeout: seconds one code block may run (time spent in tools does not count);
            then the kernel is interrupted, and killed if it does not stop.
        run: the `Run` whose open step each execution closes with its output.
        wrap_tool: how a tool is called on the host (``core.loop.tool_binding.binder``).
        cwd: the directory the kernel works in (the workspace).
        on_start: called with the interpreter once it has its kernel.
        cancelled: set when this interpreter is stopped (the session's ``cancelled`` event: host tools may stop early).
    """

    def __init__(
        self,
        *,
        pool: KernelPool | None = None,
        kernel_name: str | None = None,
        tools: dict[str, Callable[..., Any]] | None = None,
        output_fields: list[dict[str, Any]] | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
        run: Run | None = None,
        wrap_tool: Callable[[str, Callable[..., Any]], Callable[..., Any]] | None = None,
        cwd: str | None = None,
        on_start: Callable[["KernelInterpreter"], None] | None = None,
        cancelled: threading.Event | None = None,
    ):
        self.pool = pool
        self.kernel_name = kernel_name
        self.tools: dict[str, Callable[..., Any]] = dict(tools or {})
        self.output_fields = output_fields
        self.timeout = timeout
        self.run = run
        self.cwd = cwd
        self.on_start = on_start
        self.kernel: Kernel | None = None
        self.stop_message: str | None = None
        self.stopped = False
        self.cancelled = cancelled
        self._init_bridge(wrap_tool or accept_positional)
        self._sent: dict[str, Any] = {}
        self._bound: tuple[list[str], list[str]] | None = None
        self._poller: zmq.Poller | None = None
        self._first = True
        self._shut_down = False

    # ------------------------------------------------------------- lifecycle
    @with_callbacks
    def start(self) -> None:
        """Take a kernel (idempotent); after `shutdown`, a CodeInterpreterError."""
        if self._shut_down:
            raise CodeInterpreterError("this interpreter was shut down")
        if self.kernel is not None:
            return
        self._check_stopped()
        try:
            kernel = self.pool.take(self.cwd) if self.pool is not None else start_kernel(self.kernel_name, self.cwd)
        except KernelStartError as exc:
            raise CodeInterpreterError(str(exc)) from None
        self.kernel = kernel
        if kernel.limits is not None:  # counted from now on: what the sub-agent adds to its folders
            kernel.limits.begin([self.cwd or kernel.workspace, kernel.dir])
            if self.run is not None:  # the sub-agent's record: each limit, what holds it, the one hit (kept up to date)
                self.run.config["limits"] = kernel.limits.record
        poller = zmq.Poller()
        for channel in (kernel.client.iopub_channel, kernel.client.stdin_channel, kernel.client.shell_channel):
            poller.register(channel.socket, zmq.POLLIN)
        self._poller = poller
        if self.on_start is not None:
            self.on_start(self)
        self._check_stopped()

    @with_callbacks
    def shutdown(self) -> None:
        """Kill the kernel (it is used by one sub-agent only)."""
        self._shut_down = True
        kernel, self.kernel = self.kernel, None
        self._poller = None
        if kernel is None:
            return
        if self.pool is not None:
            self.pool.release(kernel)
        else:
            kernel.close()

    def stop(self, message: str | None = None, *, hard: bool = False) -> None:
        """Stop this interpreter from another thread: the running code ends with ``message``
        as a CodeInterpreterError (None: with KeyboardInterrupt). The kernel is interrupted,
        or with ``hard`` killed and the host tool running for it cancelled (`kernel_bridge`)."""
        self.stop_message = message
        self.stopped = True
        if self.cancelled is not None:
            self.cancelled.set()  # host tools watching it stop early
        kernel = self.kernel
        if kernel is not None:
            kernel.kill() if hard else kernel.interrupt()
        if hard:
            self._cancel_tool_call()

    @property
    def pid(self) -> int | None:
        return self.kernel.pid if self.kernel is not None else None

    # ------------------------------------------------------------- execution
    @with_callbacks
    def execute(self, code: str, variables: dict[str, Any] | None = None) -> Any:
        """Run ``code`` in the kernel (one step); a step the run has open is closed with its output."""
        return _step_execute(self, code, variables)

    def _execute(self, code: str, variables: dict[str, Any] | None) -> Any:
        if self._shut_down:
            raise CodeInterpreterError("this interpreter was shut down")
        if self.kernel is None:
            self.start()
        assert self.kernel is not None
        variables = dict(variables or {})
        setup = HOST_TOKEN_VAR in variables
        if setup and code in self.kernel.preinstalled:
            return None  # the pool ran this set-up (DSPy's shim) when it warmed the kernel
        request: dict[str, Any] = {"code": code, "variables": self._carried(self._changed(variables)), "setup": setup}
        bindings = (sorted(self.tools), [field["name"] for field in (self.output_fields or [])] or ["result"])
        if bindings != self._bound:  # the tool stubs and SUBMIT, bound again only when they change
            request["tools"], request["outputs"] = self._bound = bindings
        if self._first and self.cwd:
            request["cwd"] = self.cwd
        checks = None if setup else self._checks()
        if checks:
            request["checks"] = checks
        if not setup and (trace := trace_headers(self.run)):
            request["trace"] = trace  # the step's place in the run's trace: TRACEPARENT while it runs (kernel_side)
        self._first = False
        payload = json.dumps(request, allow_nan=False)
        msg_id = self.kernel.client.execute(
            f"{RUNTIME_NAME}.run({payload!r})", silent=True, store_history=False, allow_stdin=True,
            stop_on_error=False,
        )
        try:
            return self._collect(msg_id, request["setup"])
        except KeyboardInterrupt:
            if self.kernel is not None:
                self.kernel.interrupt()
            raise

    def _checks(self) -> dict[str, Any] | None:
        """What the kernel's runtime checks ask about in this step (`runtime_checks.hook`; questions come back
        as `APPROVE_TOOL` requests): the approval rules, those the user approved for this block already, and
        the workspace as the kernel sees it. None when nothing asks."""
        approver = approval.checking(self.run)
        if approver is None:
            return None
        return {"rules": sorted(approver.rules), "approved": sorted(approval.approved_rules(self.run)),
                "workspace": self.cwd}

    def _changed(self, variables: dict[str, Any]) -> dict[str, Any]:
        """Only the inputs not sent before (RLM passes the same ones every step)."""
        changed = {name: value for name, value in variables.items() if self._sent.get(name, _MISSING) is not value}
        self._sent.update(changed)
        return changed

    def _carried(self, variables: dict[str, Any]) -> dict[str, Any]:
        """The variables as JSON data; a CodeInterpreterError for a name or value that cannot be sent."""
        carried = {}
        for name, value in variables.items():
            if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name) or name == "SUBMIT":
                raise CodeInterpreterError(f"variable names must be Python identifiers; got {name!r}")
            try:
                carried[name] = to_wire(value, f"the variable {name!r}")
            except NotCarried as exc:
                for sent in variables:  # none of them reached the kernel
                    self._sent.pop(sent, None)
                raise CodeInterpreterError(str(exc)) from None
        return carried

    def _collect(self, msg_id: str, setup: bool) -> Any:
        kernel = self.kernel
        client, limits = kernel.client, kernel.limits
        iopub, stdin, shell = client.iopub_channel, client.stdin_channel, client.shell_channel
        deadline = time.monotonic() + self.timeout if self.timeout else None
        interrupted_at: float | None = None
        parts: list[str] = []
        streaming = False
        result: dict[str, Any] | None = None
        error: dict[str, Any] | None = None
        idle = replied = checked = False
        while not (idle and replied):
            self._check_stopped()
            if limits is not None:  # the step's first check looks at once (a process left running by the last)
                self._stop_at(limits.check(force=not checked))
                checked = True
            now = time.monotonic()
            if deadline is not None and now >= deadline and interrupted_at is None:
                kernel.interrupt()
                interrupted_at = now
            if interrupted_at is not None and now - interrupted_at > INTERRUPT_GRACE:
                kernel.kill()
                raise CodeInterpreterError(
                    f"TimeoutError: the code ran longer than {self.timeout:g} s and did not stop when "
                    "interrupted, so its kernel was killed; this sub-agent's state is lost."
                )
            wait = POLL_SECONDS if deadline is None or interrupted_at else min(POLL_SECONDS, deadline - now)
            events = dict(self._poller.poll(max(0, int(wait * 1000))))
            if stdin.socket in events:
                while stdin.msg_ready():
                    msg = stdin.get_msg(timeout=0)
                    if msg["msg_type"] != "input_request" or msg["parent_header"].get("msg_id") != msg_id:
                        continue
                    started = time.monotonic()
                    reply = self._answer(msg["content"].get("prompt", ""))
                    if deadline is not None and interrupted_at is None:
                        deadline += time.monotonic() - started  # time in tools does not count
                    self._check_stopped()
                    client.input(reply)
            if iopub.socket in events:
                while iopub.msg_ready():
                    msg = iopub.get_msg(timeout=0)
                    if msg["parent_header"].get("msg_id") != msg_id:
                        continue
                    kind, content = msg["msg_type"], msg["content"]
                    if kind == "stream":
                        if streaming:
                            parts[-1] += content.get("text", "")
                        else:
                            parts.append(content.get("text", ""))
                        streaming = True
                        continue
                    streaming = False
                    if kind in ("display_data", "execute_result", "update_display_data"):
                        parts.append(bundle_to_text(content.get("data", {})))
                    elif kind == "error":
                        error = content
                    elif kind == "status" and content.get("execution_state") == "idle":
                        idle = True  # every output of the request has arrived
            if shell.socket in events:
                while shell.msg_ready():
                    msg = shell.get_msg(timeout=0)
                    if msg["parent_header"].get("msg_id") != msg_id:
                        continue
                    replied = True
                    if msg["content"].get("status") == "error" and error is None:
                        error = msg["content"]
                    for payload in msg["content"].get("payload") or []:
                        if payload.get("source") == RESULT_SOURCE:
                            result = payload.get("result")
            if not events and not kernel.alive():
                self._check_stopped()
                if limits is not None:
                    self._stop_at(limits.after_death(kernel.exit_code()))
                raise CodeInterpreterError(self._died_message())
        if limits is not None:  # what the step hit, even if it caught the refusal or submitted after it
            self._stop_at(limits.after_step((result or {}).get("traceback")))
        text = "\n".join(part.rstrip("\n") for part in parts if part)
        return self._outcome(result, error, text, interrupted_at is not None, setup)

    def _outcome(self, result: dict[str, Any] | None, error: dict[str, Any] | None, text: str,
                 timed_out: bool, setup: bool) -> Any:
        status = (result or {}).get("status")
        if timed_out and status in (None, "interrupted"):
            raise CodeExecutionError(
                f"TimeoutError: this code ran longer than {self.timeout:g} s and was stopped. Variables it "
                "assigned before that are kept. Work in smaller pieces, or avoid unbounded loops."
            )
        if result is None:
            if error is not None:
                raise CodeExecutionError(f"{error.get('ename')}: {error.get('evalue')}")
            raise CodeInterpreterError("the kernel finished the request without a result")
        if status == "submit":
            return FinalOutput(result["output"])
        if status == "syntax_error":
            filename = SETUP_FILENAME if setup else "<agent step>"
            raise SyntaxError(result.get("message"), (filename, result.get("lineno"), result.get("offset"),
                                                     result.get("text")))
        if status == "error":
            raise CodeExecutionError("\n".join(filter(None, [text, result.get("traceback", "")])))
        if status == "interrupted":
            self._check_stopped()
            raise CodeExecutionError("KeyboardInterrupt: the code was interrupted")
        echo = result.get("echo")
        output = "\n".join(filter(None, [text, echo]))
        return output or None

    # ------------------------------------------------------------- faults
    def _check_stopped(self) -> None:
        if not self.stopped:
            return
        if self.stop_message is None:
            raise KeyboardInterrupt("the sub-agent was interrupted")
        raise CodeInterpreterError(self.stop_message)

    def _stop_at(self, hit: LimitHit | None) -> None:
        """A limit was hit: the kernel is killed, and the sub-agent ends with the line its parent reads."""
        if hit is not None:
            self.kernel.kill()
            raise LimitExceeded(hit)

    def _died_message(self) -> str:
        kernel = self.kernel
        code = kernel.exit_code() if kernel is not None else None
        detail = kernel.log_tail(5) if kernel is not None else ""
        message = f"the sub-agent's kernel died (exit code {code}); its state is lost"
        return message + (f"\nKernel log:\n{detail}" if detail else "")


class KernelInterpreterFactory:
    """Makes the `KernelInterpreter` for one sub-agent run; RLM reads ``execution_instructions``."""

    def __init__(self, session: Session | None = None, pool: KernelPool | None = None,
                 timeout: float | None = DEFAULT_TIMEOUT,
                 on_start: Callable[[KernelInterpreter], None] | None = None):
        self.session = session
        self.pool = pool
        self.timeout = timeout
        self.on_start = on_start
        self.execution_instructions = KERNEL_EXECUTION_INSTRUCTIONS.format(timeout=timeout or float("inf"))
        if getattr(pool, "gateway", None) is not None:  # a kernel on a gateway: its disk is not the workspace
            self.execution_instructions = pool.gateway.execution_instructions(self.execution_instructions)

    def __call__(self) -> KernelInterpreter:
        session = self.session
        return KernelInterpreter(
            pool=self.pool,
            timeout=self.timeout,
            run=session.run if session else None,
            wrap_tool=binder(session),
            cwd=str(session.workspace.root) if session else None,
            on_start=self.on_start,
            cancelled=getattr(session, "cancelled", None),
        )
