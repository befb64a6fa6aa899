"""ShellInterpreter: a dspy `CodeInterpreter` whose REPL is a live namespace.

Under the magic the namespace is the kernel's ``user_ns``: the agent's code sees
the user's variables by name and what it defines stays in the notebook. During a
run the interpreter binds the tools, ``SUBMIT`` and DSPy's sandbox ``dspy`` shim
into that namespace; `shutdown` puts every name the user had bound back to the
object it held before (the agent is told to create new names instead of rebinding
the user's; a rebinding it made anyway is kept on ``reverted``).
"""

from __future__ import annotations

import ast
import ctypes
import linecache
import signal
import threading
import time
import traceback
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from dspy.primitives.code_interpreter import CodeExecutionError, FinalOutput

from .capture import capture_displays, capture_streams
from .run import Run, describe_execution
from .session import accept_positional, copy_metadata

DEFAULT_TIMEOUT = 120.0
_MISSING = object()
_FACADE_TOKEN = "__dspy_host_token"

EXECUTION_INSTRUCTIONS = (
    "Code runs in the user's live Jupyter kernel. The notebook's variables are in scope by name, and every "
    "variable you define stays in the notebook after the run: keep large intermediate results in variables "
    "or workspace files instead of printing them. Never rebind or delete a variable the user already had "
    "(create a new name such as `sales_clean`); such rebindings are undone when the run ends. A bare "
    "expression on the last line is echoed, as in a REPL. Tools and SUBMIT are global functions that take "
    "positional or keyword arguments. Each code block may run for at most {timeout:g} seconds."
)


class ExecutionTimeout(BaseException):
    """Raised inside agent code that ran past its time limit (a BaseException, so `except Exception` can't eat it)."""


class _Submitted(BaseException):
    def __init__(self, output: dict[str, Any]):
        self.output = output


class ShellInterpreter:
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
    ):
        self.namespace = namespace if namespace is not None else {}
        self.tools: dict[str, Callable[..., Any]] = dict(tools or {})
        self.output_fields = output_fields
        self.timeout = timeout
        self.run = run
        self.shell = shell
        self._wrap_tool = wrap_tool or accept_positional
        self._before: dict[str, Any] | None = None
        self._injected: dict[str, Any] = {}
        self._executions = 0
        self._in_tool = 0
        self._tool_seconds = 0.0
        self.reverted: dict[str, Any] = {}

    # ------------------------------------------------------------- lifecycle
    def start(self) -> None:
        if self._before is None:
            self._before = dict(self.namespace)  # references only: no copies of the data

    def shutdown(self) -> None:
        """Unbind what the run injected and restore every name the user had bound."""
        if self._before is None:
            return
        before, self._before = self._before, None
        namespace = self.namespace
        for name, original in before.items():
            current = namespace.get(name, _MISSING)
            if current is original:
                continue
            if name not in self._injected and name != "__builtins__" and current is not _MISSING:
                self.reverted[name] = current
            namespace[name] = original
        for name, value in self._injected.items():
            if name not in before and namespace.get(name, _MISSING) is value:
                del namespace[name]
        shim = self._injected.get("_dspy")
        if shim is not None and "dspy" not in before and namespace.get("dspy") is shim:
            del namespace["dspy"]
        self._injected = {}
        if self.run is not None and self.reverted:
            self.run.reverted.update(self.reverted)

    # ------------------------------------------------------------- execution
    def execute(self, code: str, variables: dict[str, Any] | None = None) -> Any:
        """Run ``code``; a step the run has open is closed with what it printed."""
        try:
            result = self._execute(code, variables)
        except (CodeExecutionError, SyntaxError) as exc:
            kind = "" if isinstance(exc, CodeExecutionError) else "SyntaxError: "
            self._end_step(f"[Error] {kind}{exc}")
            raise
        except BaseException:
            self._end_step("(interrupted)")
            raise
        self._end_step(describe_execution(result))
        return result

    def _end_step(self, output: str) -> None:
        if self.run is not None and self.run.open_step is not None:
            self.run.end_step(output)

    def _execute(self, code: str, variables: dict[str, Any] | None) -> Any:
        self.start()
        self._bind_tools()
        is_facade = bool(variables) and _FACADE_TOKEN in variables
        self._executions += 0 if is_facade else 1
        self._bind_variables(variables or {})
        # DSPy's facade set-up binds `dspy`, `__doc__` and its `_dspy*` helpers: all of it is ours to undo.
        values_before = dict(self.namespace) if is_facade else None

        filename = "<deepagent setup>" if is_facade else f"<agent step {self._executions}>"
        tree = ast.parse(code, filename=filename, mode="exec")
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
        body, tail = _split_trailing_expression(tree)

        try:
            with capture_streams() as stream, capture_displays(self.shell, stream), self._time_limit():
                try:
                    if body.body:
                        exec(compile(body, filename, "exec"), self.namespace)
                    value = eval(compile(tail, filename, "eval"), self.namespace) if tail is not None else None
                except _Submitted as submitted:
                    return FinalOutput(submitted.output)
        except ExecutionTimeout:
            raise CodeExecutionError(
                f"TimeoutError: this code ran longer than {self.timeout:g} s and was stopped. Variables it "
                "assigned before that are kept. Work in smaller pieces, or avoid unbounded loops."
            ) from None
        except (KeyboardInterrupt, SystemExit, GeneratorExit):
            raise
        except BaseException as exc:  # the agent's own error, reported to the LM
            raise CodeExecutionError(_format_agent_traceback(exc)) from None
        finally:
            if values_before is not None:
                for name, value in self.namespace.items():
                    if values_before.get(name, _MISSING) is not value:
                        self._injected[name] = value

        parts = [stream.getvalue()]
        if value is not None:
            parts.append(value if isinstance(value, str) else _safe_repr(value))
        output = "\n".join(part.rstrip("\n") for part in parts if part)
        return output or None

    def __call__(self, code: str, variables: dict[str, Any] | None = None) -> Any:
        return self.execute(code, variables)

    # ------------------------------------------------------------- binding
    def _bind_tools(self) -> None:
        for name, tool in self.tools.items():
            if name not in self._injected or getattr(self._injected[name], "_deepagent_tool", None) is not tool:
                wrapped = self._timed(self._wrap_tool(name, tool))
                wrapped._deepagent_tool = tool  # type: ignore[attr-defined]
                self._injected[name] = wrapped
            self.namespace[name] = self._injected[name]
        submit = self._injected.get("SUBMIT") or self._make_submit()
        self._injected["SUBMIT"] = submit
        self.namespace["SUBMIT"] = submit

    def _bind_variables(self, variables: dict[str, Any]) -> None:
        before = self._before or {}
        for name, value in variables.items():
            if name in before and name not in self._injected:
                continue  # the user's own variable of that name wins; the prompt still describes the input
            self.namespace[name] = value
            self._injected[name] = value

    def _make_submit(self) -> Callable[..., Any]:
        names = [field["name"] for field in (self.output_fields or [])] or ["result"]

        def SUBMIT(*args: Any, **kwargs: Any) -> None:
            if len(args) > len(names):
                raise TypeError(f"SUBMIT() takes at most {len(names)} positional arguments ({', '.join(names)})")
            output = dict(zip(names, args))
            for key, value in kwargs.items():
                if key in output:
                    raise TypeError(f"SUBMIT() got multiple values for {key!r}")
                output[key] = value
            unknown = sorted(set(output) - set(names))
            if unknown:
                raise TypeError(f"SUBMIT() got unexpected fields {unknown}; the outputs are {names}")
            raise _Submitted(output)

        SUBMIT.__doc__ = f"Finish the run with the final outputs: SUBMIT({', '.join(names)})."
        return SUBMIT

    def _timed(self, tool: Callable[..., Any]) -> Callable[..., Any]:
        """Time spent inside tools (a sub-agent, an LM call) does not count against the code's time limit."""

        def call(*args: Any, **kwargs: Any) -> Any:
            self._in_tool += 1
            started = time.monotonic()
            try:
                return tool(*args, **kwargs)
            finally:
                self._tool_seconds += time.monotonic() - started
                self._in_tool -= 1

        copy_metadata(call, tool)
        return call

    # ------------------------------------------------------------- time limit
    @contextmanager
    def _time_limit(self) -> Iterator[None]:
        if not self.timeout:
            yield
            return
        self._tool_seconds = 0.0
        deadline = time.monotonic() + self.timeout
        if threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer"):
            with self._alarm(deadline):
                yield
        else:
            with self._watchdog(deadline):
                yield

    def _expired(self, deadline: float) -> float:
        """Seconds left before ``deadline`` (extended by time spent in tools); <= 0 when expired."""
        if self._in_tool:
            return 0.5
        return deadline + self._tool_seconds - time.monotonic()

    @contextmanager
    def _alarm(self, deadline: float) -> Iterator[None]:
        def on_alarm(signum, frame):
            left = self._expired(deadline)
            if left > 0 or self._in_tool:
                signal.setitimer(signal.ITIMER_REAL, max(left, 0.05))
                return
            raise ExecutionTimeout()

        previous = signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, self.timeout)
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)

    @contextmanager
    def _watchdog(self, deadline: float) -> Iterator[None]:
        """Off the main thread: raise ExecutionTimeout asynchronously in the executing thread."""
        target = threading.get_ident()
        done = threading.Event()

        def watch() -> None:
            while not done.wait(max(0.05, min(self._expired(deadline), 1.0))):
                if self._expired(deadline) <= 0:
                    ctypes.pythonapi.PyThreadState_SetAsyncExc(
                        ctypes.c_ulong(target), ctypes.py_object(ExecutionTimeout)
                    )
                    return

        watcher = threading.Thread(target=watch, daemon=True, name="deepagent-timeout")
        watcher.start()
        try:
            yield
        finally:
            done.set()


def _split_trailing_expression(tree: ast.Module) -> tuple[ast.Module, ast.Expression | None]:
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = tree.body[-1]
        body = ast.Module(body=tree.body[:-1], type_ignores=[])
        return body, ast.Expression(body=last.value)
    return tree, None


def _safe_repr(value: Any, limit: int = 20_000) -> str:
    try:
        text = repr(value)
    except Exception as exc:  # a broken __repr__ should not hide the step's other output
        text = f"<{type(value).__name__} object; repr failed: {exc}>"
    return text if len(text) <= limit else text[:limit] + f"... ({len(text) - limit} more chars)"


def _format_agent_traceback(exc: BaseException, library_frames: int = 3) -> str:
    """The traceback from the agent's own code down, with at most a few library frames."""
    tb = exc.__traceback__
    while tb is not None and not tb.tb_frame.f_code.co_filename.startswith("<agent step"):
        tb = tb.tb_next
    summary = traceback.extract_tb(tb) if tb is not None else traceback.StackSummary()
    agent = [i for i, frame in enumerate(summary) if frame.filename.startswith("<agent step")]
    keep = []
    for i, frame in enumerate(summary):
        if frame.filename.startswith("<agent step") or i > (agent[-1] if agent else -1) and i >= len(summary) - library_frames:
            keep.append(frame)
    lines = ["Traceback (most recent call last):\n"]
    lines += traceback.StackSummary.from_list(keep).format()
    lines += traceback.format_exception_only(type(exc), exc)
    return "".join(lines).rstrip()
