"""ShellInterpreter: a dspy `CodeInterpreter` whose REPL is a live namespace.

Under the magic the namespace is the kernel's ``user_ns``: the agent's code sees
the user's variables by name and what it defines stays in the notebook. During a
run the interpreter binds the tools, ``SUBMIT`` and DSPy's sandbox ``dspy`` shim
into that namespace; `shutdown` puts every name the user had bound back to the
object it held before (the agent is told to create new names instead of rebinding
the user's; a rebinding it made anyway is kept on ``reverted``), and takes away the
names the agent created that shadow a builtin (``print = ...``), kept on ``reverted`` too.

While agent code runs, exits and self-signals are refused (`guards`): ``exit()``,
``sys.exit()``, ``os._exit()`` and the like become an error the agent reads; the
kernel lives. Each block runs under its `TimeLimit`. DSPy's interpreter callbacks fire
for start-up, each execution, each tool call (`invoke_tool`) and shutdown; an ``async``
tool's coroutine is run to completion, so agent code gets its value.
"""

from __future__ import annotations

import ast
import logging
import builtins
import linecache
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from types import ModuleType
from typing import Any, Callable

from dspy.primitives.code_interpreter import CodeExecutionError, CodeInterpreterError, FinalOutput
from dspy.utils.callback import with_callbacks

from ..core.loop import doors
from ..core.loop.agent import DEFAULT_TIMEOUT
from ..core.loop.tool_binding import accept_positional, awaiting, binder, copy_metadata
from ..core.policy import spend
from ..core.run.run import Run
from ..core.run.session import Session
from .capture import capture_displays, capture_streams
from .kernel_side import (
    AST_LOCK,
    STEP_PREFIX,
    Submitted,
    echo,
    exec_step,
    format_traceback,
    make_submit,
    split_trailing_expression,
)
from .runtime_checks.deferred import Deferred, settle_deferred
from .guards import exit_error, guarded
from .provenance import DEFAULT_UNDO_LIMIT, Tracker, is_ipython_name, is_scratch, scratch_prefix
from .runtime_checks import host as runtime_checks
from .runtime_checks import lm_calls
from .step_execution import StepInterpreter
from .time_limit import ExecutionTimeout, TimeLimit, host_code
from . import working_directory

log = logging.getLogger(__name__)

_MISSING = object()
_monotonic = time.monotonic  # agent code may replace time.monotonic; tool time is measured with this one
TIMEOUT_ECHO = 2_000  # characters of what timed-out code printed, kept in its error
_FACADE_TOKEN = "__dspy_host_token"



class ShellInterpreter(StepInterpreter):
    """Execute agent code in ``namespace`` (a fresh dict when None)."""

    def __init__(
        self,
        namespace: dict[str, Any] | None = None,
        *,
        tools: dict[str, Callable[..., Any]] | None = None,
        output_fields: list[dict[str, Any]] | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
        run: Run | None = None,
        wrap_tool: Callable[[str, Callable[..., Any]], Callable[..., Any]] | None = None,
        shell: Any = None,
        undo_limit: int = DEFAULT_UNDO_LIMIT,
        cwd: str | None = None,
    ):
        self.namespace = namespace if namespace is not None else {}
        self.cwd = cwd  # each step's working directory (None: the process's, put back at the end: working_directory)
        self._cwd_before: str | None = None
        self.undo_limit = undo_limit
        self._tracker: Tracker | None = None  # what the run changes, step by step (provenance)
        self.tools: dict[str, Callable[..., Any]] = dict(tools or {})
        self.output_fields = output_fields
        self.timeout = timeout
        self.run = run
        self.shell = shell
        self._wrap_tool = wrap_tool or accept_positional
        self._before: dict[str, Any] | None = None
        self._injected: dict[str, Any] = {}
        self._tools: dict[str, Callable[..., Any]] = {}  # name -> the tool as agent code calls it
        self._executions = 0
        self._in_tool = 0
        self._tool_seconds = 0.0
        self._ended = False
        self.reverted: dict[str, Any] = {}
        self.callbacks: list[Any] = []  # DSPy callbacks of this interpreter only (with dspy.settings.callbacks)
        self._lm_calls_held = False  # `lm_calls.held` acquired: the run has spend caps

    # ------------------------------------------------------------- lifecycle
    @with_callbacks
    def start(self) -> None:
        if self._ended:
            raise CodeInterpreterError("this ShellInterpreter has been shut down")
        if self._before is None:
            self._before = dict(self.namespace)  # references only: no copies of the data
            self._tracker = Tracker(self.run, self.namespace, self._before, self.undo_limit)
            self._cwd_before = working_directory.at_start(self.cwd)
            workspace = self.run.config.get("workspace") if self.run is not None else None
            self._deferred = Deferred(self.shell, workspace or self.cwd)  # what its code leaves to run later
        budget = spend.budget_of(self.run)
        if budget is not None and budget.capped and not self._lm_calls_held:
            lm_calls.held.acquire()  # the agent's own lm() calls, from any of its threads, meet the caps
            self._lm_calls_held = True

    @with_callbacks
    def shutdown(self) -> None:
        """Unbind what the run injected and restore every name the user had bound.

        Every step runs whatever an earlier one raised (the agent's code can reach the provenance
        tracker through ``gc`` and make it raise, or leave keys in the namespace that are not names):
        the user's bindings, ``dspy`` and ``__builtins__`` come back first and always."""
        self._ended = True
        if self._lm_calls_held:
            self._lm_calls_held = False
            lm_calls.held.release()
        if self._before is None:
            return
        before, self._before = self._before, None
        tracker, self._tracker = self._tracker, None
        injected, self._injected = self._injected, {}
        failures: list[BaseException] = []
        try:
            if tracker is not None:
                _guarded(failures, tracker.finish)
        finally:  # even a KeyboardInterrupt in the tracker leaves the namespace restored
            restored = _guarded(failures, self._restore_bindings, before, injected) or set()
            _guarded(failures, _unbind_injected, self.namespace, before, injected)
            removed = _guarded(failures, self._remove_builtin_shadows, before) or set()
            scratch = _guarded(failures, self._remove_scratch, before) or set()
            if tracker is not None:
                _guarded(failures, tracker.restored, restored, removed, scratch)
            if self.run is not None and self.reverted:
                self.run.reverted.update(self.reverted)
            if (moved := _guarded(failures, working_directory.restore, self._cwd_before)) and self.run is not None:
                self.run.config["moved_cwd"] = moved
            _guarded(failures, settle_deferred, self._deferred, self.run)
        if failures:
            log.warning("deepagent: restoring the namespace after the run met %d error(s), the first: %r",
                        len(failures), failures[0])

    def _restore_bindings(self, before: dict[str, Any], injected: dict[str, Any]) -> set[str]:
        """Every name the user had bound, bound again to the same object; the agent's values kept aside."""
        namespace, restored = self.namespace, set()
        for name, original in before.items():
            current = namespace.get(name, _MISSING)
            if current is original:
                continue
            restored.add(name)
            if name not in injected and name != "__builtins__" and current is not _MISSING \
                    and not is_ipython_name(name, self.shell):  # IPython's history names go back silently: not the user's
                self.reverted[name] = current
            namespace[name] = original
        return restored

    def _remove_builtin_shadows(self, before: dict[str, Any]) -> set[str]:
        """Names the agent created over a builtin (``print = ...`` would break the user's print)."""
        removed = set()
        for key, value in list(self.namespace.items()):  # one C call: a thread changing it cannot break this
            if not isinstance(key, str):
                continue
            name = str.__str__(key)  # its characters, whatever a str subclass says of itself
            if name in before or not _shadows_builtin(name):
                continue
            try:
                del self.namespace[key]
            except Exception:  # noqa: BLE001 - a key whose hash or equality raises stays; the others go
                continue
            self.reverted[name] = value
            removed.add(name)
        return removed

    def _remove_scratch(self, before: dict[str, Any]) -> set[str]:
        """The agent's throwaway names (``_tmp``): the prompt says they go when the run ends."""
        scratch = {key for key in list(self.namespace) if type(key) is str and key not in before and is_scratch(key)}
        for name in scratch:
            self.namespace.pop(name, None)
        return scratch

    # ------------------------------------------------------------- execution
    @with_callbacks
    def execute(self, code: str, variables: dict[str, Any] | None = None) -> Any:
        """Run ``code`` in the namespace (see `StepInterpreter.execute`); not after `shutdown`."""
        if self._ended:
            raise CodeInterpreterError("this ShellInterpreter has been shut down")
        return super().execute(code, variables)

    def _execute(self, code: str, variables: dict[str, Any] | None) -> Any:
        if self._before is None:
            self.start()
        self._bind_tools()
        is_facade = bool(variables) and _FACADE_TOKEN in variables
        self._executions += 0 if is_facade else 1
        self._bind_variables(variables or {})
        # DSPy's facade set-up binds `dspy`, `__doc__` and its `_dspy*` helpers: all of it is ours to undo.
        values_before = dict(self.namespace) if is_facade else None

        filename = "<deepagent setup>" if is_facade else f"{STEP_PREFIX} {self._executions}>"
        with AST_LOCK:  # one thread at a time (kernel_side.AST_LOCK says why)
            tree = ast.parse(code, filename=filename, mode="exec")
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
        body, tail = split_trailing_expression(tree)
        tracker = None if is_facade else self._tracker
        step = self.run.open_step.index if self.run is not None and self.run.open_step is not None else self._executions
        if tracker is not None:
            tracker.before_step(tree)
        scope = None if is_facade else runtime_checks.step_scope(self.run, code, self._away, HOST_CODES)

        limit, stream = self._time_limit(), None
        try:
            # The folder outermost: the time limit's raises end with its block, before the way back runs.
            with working_directory.stepping_in(self.cwd), capture_streams() as stream, \
                    capture_displays(self.shell, stream), guarded(), limit:
                try:
                    value = exec_step(body, tail, filename, self.namespace, scope, limit if self.timeout else None)
                except Submitted as submitted:
                    return FinalOutput(submitted.output)
        except ExecutionTimeout:
            limit.close()  # one delivered before its __exit__ ran
            printed = stream.getvalue()[-TIMEOUT_ECHO:] if stream is not None else ""
            raise CodeExecutionError(
                (printed.rstrip("\n") + "\n" if printed.strip() else "")
                + (f"Stopped: {limit.stopped_by}. Variables it assigned before that are kept." if limit.stopped_by else
                   f"TimeoutError: this code ran longer than {self.timeout:g} s and was stopped. Variables it "
                   "assigned before that are kept. Work in smaller pieces, or avoid unbounded loops.")
            ) from None
        except KeyboardInterrupt:
            raise
        except (SystemExit, GeneratorExit) as exc:  # exiting would end the user's kernel: refused
            raise CodeExecutionError(_printed(stream) + format_traceback(exc) + "\n" + exit_error(exc)) from None
        except BaseException as exc:  # the agent's own error, after what its code printed: reported to the LM
            raise CodeExecutionError(_printed(stream) + format_traceback(exc)) from None
        finally:
            limit.close()
            if tracker is not None:
                tracker.after_step(step, self._injected)
            if values_before is not None:
                for name, value in self.namespace.items():
                    if values_before.get(name, _MISSING) is not value:
                        self._injected[name] = value

        parts = [stream.getvalue()]
        if value is not None:
            parts.append(echo(value))
        output = "\n".join(part.rstrip("\n") for part in parts if part)
        return output or None

    def protected_names(self) -> set[str]:
        """The names the user had bound when the run started (not the tools the run bound)."""
        before = self._before if self._before is not None else self.namespace
        return {name for name, value in before.items()  # a module: `import os` again rebinds nothing of value
                if not name.startswith("__") and name not in self._injected and not isinstance(value, ModuleType)}

    # ------------------------------------------------------------- binding
    def _bind_tools(self) -> None:
        for name, tool in self.tools.items():
            if name not in self._injected or getattr(self._injected[name], "_deepagent_tool", None) is not tool:
                self._tools[name] = self._wrap_tool(name, awaiting(tool))
                wrapped = self._calling(name, self._tools[name])
                wrapped._deepagent_tool = tool  # type: ignore[attr-defined]
                self._injected[name] = wrapped
            self.namespace[name] = self._injected[name]
        submit = self._injected.get("SUBMIT") or make_submit([f["name"] for f in self.output_fields or []] or ["result"])
        self._injected["SUBMIT"] = submit
        self.namespace["SUBMIT"] = submit

    def _bind_variables(self, variables: dict[str, Any]) -> None:
        before = self._before or {}
        for name, value in variables.items():
            if name in before and name not in self._injected:
                continue  # the user's own variable of that name wins; the prompt still describes the input
            self.namespace[name] = value
            self._injected[name] = value

    def _calling(self, name: str, tool: Callable[..., Any]) -> Callable[..., Any]:
        """What agent code calls: the tool, through `invoke_tool`."""

        def call(*args: Any, **kwargs: Any) -> Any:
            return self.invoke_tool(name, args, kwargs)

        copy_metadata(call, tool)
        return call

    @with_callbacks
    def invoke_tool(self, tool_name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Call one tool for agent code. Its time (a sub-agent, an LM call) does not count against the limit."""
        tool = self._tools.get(tool_name)
        if tool is None:
            raise CodeInterpreterError(f"Unknown tool: {tool_name}")
        with self._away():
            return tool(*args, **kwargs)

    @contextmanager
    def _away(self) -> Iterator[None]:
        """Time the block spends away from its own code (in a tool, or waiting for the user's answer to a
        runtime check): not counted against its time limit."""
        started = _monotonic()
        self._in_tool += 1  # nothing between this and the `try` where a timeout could land
        try:
            yield
        finally:
            self._tool_seconds += _monotonic() - started  # before leaving: no false expiry
            self._in_tool -= 1

    # ------------------------------------------------------------- time limit
    def _time_limit(self) -> Any:
        if not self.timeout:
            return _NoLimit()
        self._tool_seconds = 0.0
        return TimeLimit(self.timeout, lambda: self._in_tool, lambda: self._tool_seconds)


# Host frames for the runtime checks: code above them is the host's (a tool the agent called; the time
# limit tracing the agent's frames), unless agent code is nearer.
HOST_CODES = (ShellInterpreter.invoke_tool.__wrapped__.__code__,) + host_code()


class _NoLimit(nullcontext):
    def close(self) -> None:
        pass


def _printed(stream: Any) -> str:
    """What a failed step printed before its error, one line break before the traceback (or nothing)."""
    text = stream.getvalue() if stream is not None else ""
    return text.rstrip("\n") + "\n" if text.strip() else ""


def _shadows_builtin(name: str) -> bool:
    return not name.startswith("_") and hasattr(builtins, name)


def _unbind_injected(namespace: dict[str, Any], before: dict[str, Any], injected: dict[str, Any]) -> None:
    """Take away what the run bound (tools, SUBMIT, DSPy's facade) where it is still what the run bound."""
    for name, value in injected.items():
        if name not in before and namespace.get(name, _MISSING) is value:
            del namespace[name]
    shim = injected.get("_dspy")
    if shim is not None and "dspy" not in before and namespace.get("dspy") is shim:
        del namespace["dspy"]


def _guarded(failures: list[BaseException], step: Callable[..., Any], *args: Any) -> Any:
    """``step(*args)``; what it raises (an Exception) is kept in ``failures`` and the caller goes on."""
    try:
        return step(*args)
    except Exception as exc:  # noqa: BLE001 - the next restore step runs whatever this one raised
        failures.append(exc)
        return None


class ShellInterpreterFactory:
    """Makes the `ShellInterpreter` for one run; RLM reads ``execution_instructions`` for the prompt."""

    def __init__(self, namespace: dict[str, Any] | None = None, session: Session | None = None,
                 timeout: float | None = DEFAULT_TIMEOUT, shell: Any = None, undo_limit: int = DEFAULT_UNDO_LIMIT,
                 door: str = "python"):
        self.undo_limit = undo_limit
        self.namespace = namespace
        self.session = session
        self.timeout = timeout
        self.shell = shell
        self.execution_instructions = doors.door(door).repl_rules(timeout or float("inf"), scratch_prefix(namespace))

    @classmethod
    def for_agent(cls, agent: Any, session: Session | None = None, namespace: dict[str, Any] | None = None,
                  shell: Any = None) -> "ShellInterpreterFactory":
        """The root agent's interpreter (registered with `core.loop.extensions`)."""
        return cls(namespace, session, agent.timeout, shell, getattr(agent, "undo_limit", DEFAULT_UNDO_LIMIT),
                   getattr(agent, "door", "python"))

    def __call__(self) -> ShellInterpreter:
        session = self.session
        return ShellInterpreter(
            self.namespace,
            timeout=self.timeout,
            run=session.run if session else None,
            wrap_tool=binder(session),
            shell=self.shell,
            undo_limit=self.undo_limit,
            cwd=session.cwd if session else None,
        )
