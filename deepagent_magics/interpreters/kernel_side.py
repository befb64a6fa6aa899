"""The kernel side of `KernelInterpreter`: this file's source runs inside each sub-agent's kernel.

The host installs it once per kernel, when the pool warms the kernel up, as the hidden name
``_deepagent_runtime``. Each step is then one silent ``execute_request`` calling
``_deepagent_runtime.run(request)``, which runs the agent's code in the kernel's namespace (its output
goes out on iopub as usual) and says how the code ended (ok, SUBMIT, error, interrupted) in a payload of
the ``execute_reply``, marked ``"source": RESULT_SOURCE``: one message fewer than a display message, and
no execute_input broadcast.

Tool calls go the other way over the kernel's stdin channel: a tool here is a stub that calls ``input()``
with `TOOL_PROMPT` and a JSON request; the host runs the real tool and answers with a JSON reply
(``{"value": ...}`` or ``{"error": ..., "type": ...}``).

The kernel may be any Python kernel spec, without this package installed, so this file uses only the
standard library, IPython and two standard-library modules the host ships beside it (`wire`: values as
JSON; `processes`: the kernel's process tree). A traced run's step carries its W3C Trace Context, set as
``TRACEPARENT`` while it runs: no OpenTelemetry is needed here, the spans are the host's. The host's
`ShellInterpreter` uses the same helpers (SUBMIT, the trailing-expression echo, the agent traceback), so
a step behaves the same in the notebook and in a sub-agent's kernel.
"""

import ast
import builtins
import ctypes
import errno
import json
import linecache
import os
import sys
import threading
import time
import traceback
from contextlib import nullcontext

try:
    from . import guards  # on the host, in the package
except ImportError:  # in a kernel: the pool installs guards' source first, as this module
    try:
        import _deepagent_guards as guards
    except ImportError:
        guards = None

try:  # on the host, as part of the package
    from . import output_limit, processes, wire
    from .runtime_checks import hook as runtime_checks
except ImportError:  # in a kernel, shipped beside this file by the host (see pool/pooled_kernel.py)
    import _deepagent_output_limit as output_limit
    import _deepagent_processes as processes
    import _deepagent_runtime_checks_hook as runtime_checks
    import _deepagent_wire as wire

TOOL_PROMPT = "__deepagent_tool__ "
APPROVE_TOOL = "__deepagent_approve__"  # a runtime check's question, asked on the host (`kernel_bridge`)
RESULT_SOURCE = "deepagent"
RUNTIME_NAME = "_deepagent_runtime"
SETUP_FILENAME = "<deepagent setup>"
RUNTIME_FILENAME = "<deepagent kernel_side>"  # this file, as the kernel compiles it
STEP_PREFIX = "<agent step"
ECHO_LIMIT = 20_000
UNREACHED_FOR = 5.0  # seconds a tool request is sent again while the host's stdin socket is not connected


class ToolError(Exception):
    """A host tool failed; the message is the host's error."""


class Submitted(BaseException):
    """Raised by SUBMIT to end the step with the final outputs (a BaseException: `except Exception` can't eat it)."""

    def __init__(self, output):
        self.output = output


def make_submit(names):
    """The SUBMIT function for output fields ``names``: positional or keyword, each field once."""

    def SUBMIT(*args, **kwargs):
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
        raise Submitted(output)

    SUBMIT.__doc__ = f"Finish the run with the final outputs: SUBMIT({', '.join(names)})."
    return SUBMIT


# CPython 3.11 counts the AST converter's recursion depth per interpreter, not per thread: two threads
# parsing or compiling an AST at once (evaluation runs examples in threads) can fail with "SystemError: AST
# constructor recursion depth mismatch" (CPython gh-106905). Agent code is parsed and compiled under this lock.
AST_LOCK = threading.Lock()


def exec_step(body, tail, filename, namespace, scope=None, limit=None):
    """Run a step's statements, then evaluate its trailing expression (``tail``, or None): its value.

    With a ``scope`` (`runtime_checks.hook.scope`) the step is registered with the runtime checks while the
    agent's code runs: this function's frame is how the audit hook knows the code above it is the agent's.
    A ``limit`` (`time_limit.limit.TimeLimit`) is told when it runs: its exception never lands around it.

    Afterwards the thread's handled exception (``sys.exc_info()``) and trace function are what they were
    before. CPython 3.11 leaves the former set when a trace function raises in a ``with`` statement's exit
    handler (the time limit's tracer, in code whose ``__exit__`` swallows the timeout; or agent code, on
    purpose): the user's next bare ``raise`` would re-raise the agent's exception, and every later traceback
    read "During handling of the above exception". A trace function the code set would trace later cells."""
    before, trace, error = sys.exc_info()[1], sys.gettrace(), None  # put back with the real settrace, not sys's
    try:
        with AST_LOCK:
            statements = compile(body, filename, "exec")
            expression = compile(tail, filename, "eval") if tail is not None else None
        if scope is not None:
            _audit(_STEP, scope)
        try:
            if limit is not None:
                limit.code_running = True
            exec(statements, namespace)
            value = eval(expression, namespace) if expression is not None else None
        finally:
            if limit is not None:  # one sent and not raised is withdrawn, the eval breaker reset: calls into C only
                limit.code_running = False
                try:
                    limit.sent and (limit.withdraw(), limit.reset())
                except limit.Reset:
                    pass
            if scope is not None:
                _audit(_STEP_END, scope)
    except BaseException as exc:  # noqa: BLE001 - raised again below, outside any handler
        error = exc
    if _gettrace() is not trace:  # only when it changed: with an audit hook written in Python installed (approval's),
        _settrace(trace)  # CPython 3.11 refuses a settrace while another thread's is still in its hook
    _set_handled_exception(None if before is None else id(before))
    if error is not None:
        try:
            raise error
        finally:
            error = None  # no cycle through this frame
    return value


_settrace, _gettrace = sys.settrace, sys.gettrace
_audit, _STEP, _STEP_END = sys.audit, runtime_checks.STEP, runtime_checks.STEP_END
_set_handled_exception = ctypes.pythonapi.PyErr_SetHandledException  # new in 3.11; takes a new reference
_set_handled_exception.argtypes, _set_handled_exception.restype = [ctypes.c_void_p], None


def split_trailing_expression(tree):
    """(the statements, the last one as an expression to echo, or None)."""
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        body = ast.Module(body=tree.body[:-1], type_ignores=[])
        return body, ast.Expression(body=tree.body[-1].value)
    return tree, None


class Runtime:
    """Runs the agent's steps in ``namespace`` and bridges its tool calls to the host."""

    def __init__(self, namespace):
        self.namespace = namespace
        self.steps = 0
        self.tool_names = []
        self.submit = make_submit(["result"])
        self._tool_lock = threading.Lock()  # one input_request at a time

    # ----------------------------------------------------------------- tools
    def bind_tools(self, names=None, outputs=None):
        """Bind a stub per tool name and SUBMIT; rebind any the agent's code overwrote."""
        if names is not None:
            self.tool_names = list(names)
        if outputs is not None:
            self.submit = make_submit(list(outputs) or ["result"])
        for name in self.tool_names:
            if getattr(self.namespace.get(name), "_deepagent_tool", None) != name:
                self.namespace[name] = self._stub(name)
        if self.namespace.get("SUBMIT") is not self.submit:
            self.namespace["SUBMIT"] = self.submit

    def _stub(self, name):
        runtime = self

        def tool(*args, **kwargs):
            return runtime.call(name, args, kwargs)

        tool.__name__ = tool.__qualname__ = name
        tool.__doc__ = f"{name}(...): runs on the host."
        tool._deepagent_tool = name
        return tool

    def call(self, name, args, kwargs):
        try:
            request = wire.dumps({"tool": name, "args": list(args), "kwargs": kwargs}, f"an argument of {name}()")
        except wire.NotCarried as exc:  # the tool's answer, as for any bad argument: it never raises at the model
            return f"Error: {exc}"
        with self._tool_lock:
            reply = json.loads(_ask_host(TOOL_PROMPT + request))
        if "error" in reply:
            kind = getattr(builtins, str(reply.get("type")), None)
            if isinstance(kind, type) and issubclass(kind, Exception) and kind is not Exception:
                raise kind(reply["error"])
            raise ToolError(f"{reply.get('type', 'Error')}: {reply['error']}")
        return reply.get("value")

    def preinstall(self, code, tools, variables):
        """Run set-up code at warm-up (DSPy's sandbox dspy shim), so a sub-agent's start does not wait for it."""
        self.bind_tools(tools)
        self.namespace.update(variables)
        exec(compile(code, SETUP_FILENAME, "exec"), self.namespace)

    # ----------------------------------------------------------------- steps
    def run(self, request_json):
        """Run one step; say how it ended in the execute_reply's payload."""
        request = json.loads(request_json)
        if request.get("cwd") and os.path.isdir(request["cwd"]):  # not on a remote kernel's disk
            os.chdir(request["cwd"])
        for name, value in (request.get("trace") or {}).items():  # the step's place in the host's trace, for the
            if name in ("traceparent", "tracestate") and isinstance(value, str):  # processes it starts (W3C, env)
                os.environ[name.upper()] = value
        self.bind_tools(request.get("tools"), request.get("outputs"))
        self.namespace.update(request.get("variables") or {})
        scope = None if request.get("setup") else self._scope(request.get("checks"))
        self._publish(self._run_code(request["code"], bool(request.get("setup")), scope))

    def _scope(self, checks):
        """The runtime checks of this step (`runtime_checks`), when the host's approval asks: each risky
        action is asked about on the host (`APPROVE_TOOL`), labelled with this sub-agent."""
        if not isinstance(checks, dict) or not checks.get("rules"):
            return None
        runtime_checks.install(exec_step.__code__)
        return runtime_checks.scope(ask=self._ask_host, workspace=checks.get("workspace") or os.getcwd(),
                                    rules=checks["rules"], approved=checks.get("approved") or ())

    def _ask_host(self, action):
        """None: go ahead; else the refusal the agent's code reads (raised as PermissionError)."""
        answer = self.call(APPROVE_TOOL, [action], {})
        return answer if isinstance(answer, str) and answer else None

    def _run_code(self, code, setup, scope=None):
        if not setup:
            self.steps += 1
        filename = SETUP_FILENAME if setup else f"{STEP_PREFIX} {self.steps}>"
        try:
            with AST_LOCK:
                tree = ast.parse(code, filename=filename, mode="exec")
        except SyntaxError as exc:
            return {"status": "syntax_error", "message": exc.msg, "lineno": exc.lineno, "offset": exc.offset,
                    "text": exc.text}
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
        body, tail = split_trailing_expression(tree)
        try:
            # exit()/quit()/ask_exit() would end this kernel after the step: refused (`guards`). The kernel's
            # own process kills (os._exit) stay: it is the sub-agent's disposable process, watched by the host.
            with guards.guarded(kills=False) if guards is not None else nullcontext(), output_limit.limited():
                try:
                    value = exec_step(body, tail, filename, self.namespace, scope)
                except Submitted as submitted:
                    return {"status": "submit", "output": wire.as_data(submitted.output, "a SUBMIT value")}
        except KeyboardInterrupt:
            return {"status": "interrupted"}
        except (SystemExit, GeneratorExit) as exc:  # reported to the LM, with why it may not exit
            hint = "\n" + guards.exit_error(exc) if guards is not None else ""
            return {"status": "error", "traceback": format_traceback(exc) + hint}
        except BaseException as exc:  # the agent's own error: reported to the LM
            return {"status": "error", "traceback": format_traceback(exc)}
        return {"status": "ok", "echo": None if value is None else echo(value)}

    @staticmethod
    def _publish(result):
        from IPython import get_ipython

        get_ipython().payload_manager.write_payload({"source": RESULT_SOURCE, "result": result})


def echo(value):
    """A value as the REPL echoes it: strings as they are, else a bounded repr."""
    if isinstance(value, str):
        text = value
    else:
        try:
            text = repr(value)
        except Exception as exc:  # a value's own __repr__ may raise anything: said instead
            text = f"<{type(value).__name__} object; repr failed: {exc}>"
    return text if len(text) <= ECHO_LIMIT else text[:ECHO_LIMIT] + f"... ({len(text) - ECHO_LIMIT} more chars)"


def format_traceback(exc, library_frames=1):
    """The traceback from the agent's own code down: its own frames and the last library frame (where it failed)."""
    tb = exc.__traceback__
    while tb is not None and not tb.tb_frame.f_code.co_filename.startswith(STEP_PREFIX):
        tb = tb.tb_next
    summary = traceback.extract_tb(tb) if tb is not None else traceback.StackSummary()
    agent = [i for i, frame in enumerate(summary) if frame.filename.startswith(STEP_PREFIX)]
    last = agent[-1] if agent else -1
    keep = [frame for i, frame in enumerate(summary)
            if frame.filename.startswith(STEP_PREFIX)
            or (i > last and i >= len(summary) - library_frames and frame.filename != RUNTIME_FILENAME)]
    for frame in keep:
        frame.filename = output_limit.library_path(frame.filename)
    lines = ["Traceback (most recent call last):\n"]
    lines += traceback.StackSummary.from_list(keep).format()
    lines += traceback.format_exception_only(type(exc), exc)
    return "".join(lines).rstrip()


def _ask_host(prompt):
    """``input(prompt)``, sent again while the host's stdin socket is not (yet, or any more) connected.

    A ROUTER socket silently drops a message for a peer it does not know, so an input_request
    sent before the host's connection is complete would leave the kernel waiting forever. With
    ``ROUTER_MANDATORY`` (set in `install`) the send fails instead, and is tried again; a host
    that never connects makes the tool call an error, not a hang."""
    deadline = time.monotonic() + UNREACHED_FOR
    while True:
        try:
            return builtins.input(prompt)
        except Exception as exc:
            if getattr(exc, "errno", None) != errno.EHOSTUNREACH:
                raise
            if time.monotonic() >= deadline:
                raise ToolError("the host is not connected to this kernel's stdin channel, so the tool "
                                "call cannot reach it") from None
            time.sleep(0.05)


def _refuse_unroutable_requests():
    """Make the kernel's stdin socket raise for an unknown peer instead of dropping (see `_ask_host`)."""
    try:
        import zmq
        from IPython import get_ipython

        get_ipython().kernel.stdin_socket.setsockopt(zmq.ROUTER_MANDATORY, 1)
    except Exception:  # not an ipykernel, or a stdin socket of another kind: input() as it is
        pass


def install(host_pid=None, lifeline_fd=None, kernel_dir=None):
    """Bind the runtime in the kernel's namespace (called by the host once per kernel).

    The kernel becomes a child subreaper, so what the agent's code starts stays below it
    even after a ``setsid`` and a double fork, and the host (or the watch thread below)
    can end all of it."""
    from IPython import get_ipython

    namespace = get_ipython().user_ns
    namespace[RUNTIME_NAME] = Runtime(namespace)
    _refuse_unroutable_requests()
    processes.become_subreaper()
    if host_pid:
        _end_with_host(int(host_pid), lifeline_fd, kernel_dir)


def _end_with_host(host_pid, lifeline_fd=None, kernel_dir=None, interval=0.5):
    """When the host dies (even by SIGKILL), remove the kernel's private directory (its connection
    file and sockets), then kill every process below this kernel (stopped first, so none forks
    away; `processes.kill_tree`) and this kernel's process group. Only when the kernel leads its
    own group, as jupyter_client starts it.

    ``lifeline_fd`` is the read end of a pipe whose write end only the host holds: it reads EOF
    the moment the host is gone (before ipykernel's own parent poller, which would end the kernel
    but not its children, notices). Without it, the parent pid is polled.

    In a sandbox the kernel is PID 1 of its own namespace: its parent (``bwrap``, outside) reads as
    0, so only the lifeline counts, and its own exit ends every process in the namespace."""
    import select
    import signal
    import time

    if os.name != "posix" or os.getpgid(0) != os.getpid():
        return
    sandboxed = os.getpid() == 1

    def host_gone():
        if not sandboxed and os.getppid() != host_pid:
            return True
        if lifeline_fd is None:
            time.sleep(interval)
            return False
        try:
            readable, _, _ = select.select([lifeline_fd], [], [], interval)
            return bool(readable) and not os.read(lifeline_fd, 1)
        except OSError:  # the kernel was launched without the pipe
            time.sleep(interval)
            return False

    def watch():
        while not host_gone():
            pass
        if kernel_dir:
            import shutil

            shutil.rmtree(kernel_dir, ignore_errors=True)
        processes.kill_tree(os.getpid(), include_root=False)
        os.killpg(0, signal.SIGKILL)
        os._exit(1)  # PID 1 of a sandbox ignores the SIGKILL above: its exit ends the namespace

    threading.Thread(target=watch, name="deepagent-host-watch", daemon=True).start()
