"""The time limit of one code block: stop agent code that has run too long, even code that fights back.

``with TimeLimit(seconds, in_tool, tool_seconds):`` bounds the block to ``seconds`` of
its own time; time spent inside tools (a sub-agent, an LM call) does not count (the
interpreter reports it through ``in_tool``/``tool_seconds``).

Models write retry loops with a bare ``except:``, and code may run off the main
thread (an evaluation runs agents in worker threads) or switch the timer off. So:

- One watchdog thread (a bare thread, not in ``threading.enumerate()``, that survives
  exceptions thrown at it) raises `ExecutionTimeout` in a block's thread once its time
  is up, and again every `RETRY` seconds until the block is gone: an asynchronous
  exception, and on the main thread also the limit's own signal (`wake_signal`), which
  interrupts a blocking call.
- Once raised, the exception arms the block's trace function in the code's thread, which
  raises it again at the next line of the agent's own code (its steps and the functions
  they define), so an ``except`` clause there that catches it is left at once. CPython
  switches tracing off when a trace function raises; the caught exception arms it again
  when it dies at the end of its handler, so nested handlers are left one after another.
- While a limited block runs, ``time.sleep`` is an interruptible sleep that honours the
  limit and sleeps in short slices (Python cannot interrupt a C sleep in a worker thread,
  and a SIGINT the OS hands to another thread waits for the main thread to run Python), and
  agent code may not touch the process's timers or the limit's signal (`timer_patches`).

A limit ends with its block. It delivers only while the code it guards runs: what runs the
code (`kernel_side.exec_step`) sets ``code_running`` around it, the watchdog tests that flag
and sends with no point between where the code's thread could move on, and a delivery sent
as the code ended is withdrawn the same way (`async_raise.prepared`): the exception never
lands in the host code around the code. As the block ends it is marked ended under the lock
the watchdog delivers under, so nothing is sent after; an exception sent and not raised is
taken back, the thread's trace function put back and every frame the block armed disarmed,
a signal already sent delivered before the signal's previous handler goes back
(`wake_signal.drain`), and the timer patches released. Whatever of the block is reached late
checks the block itself, not a flag another block may set: the watchdog delivers only to a
live block, the signal handler raises only for a live block of its thread whose code runs,
and a block's trace function (a closure over the block, safe at interpreter shutdown)
disarms the frame it is called in once its block has ended.

Nothing the watchdog or the agent's thread shares uses a lock an exception could leave
held (a ``threading.Event``'s condition was one: a delivery landing just after its lock was
taken hung the process). Not stoppable: one long call into C that holds the GIL (a
catastrophic regular expression, ``sum(range(10**12))``), blocking calls other than
``time.sleep`` in a worker thread, threads the code started itself. The exception is
delivered when the call returns.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from typing import Any, Callable

from ...errors import DeepAgentSignal
from ..async_raise import Reset, prepared, take_back
from ..guards import ORIGINAL
from ..kernel_side import STEP_PREFIX
from . import wake_signal
from .timer_patches import make_timer_patches
from .watchdog import Watchdog

RETRY = 0.1  # seconds between raises once the time is up
SLICE = 0.05  # seconds an interruptible sleep sleeps at most before it looks again

_monotonic = time.monotonic
_real_sleep = time.sleep
_pthread_kill = ORIGINAL["pthread_kill"]
_settrace, _gettrace = sys.settrace, sys.gettrace
_local = threading.local()  # .stack: the limited blocks running in this thread, innermost last
_wake_previous: list[Any] = []  # main thread only: WAKE's handler before the limit's, while ours is in place


class ExecutionTimeout(DeepAgentSignal):
    """Raised inside agent code that ran past its time limit (a BaseException, so `except Exception` can't eat it).

    Creating one in a thread whose block has expired arms the trace function there (an
    asynchronous exception is created in the target thread, when it is caught)."""

    def __init__(self, *args: Any):
        super().__init__(*args)
        block = _expired_block()
        if block is not None:
            block.caught = block.deliveries
            block.arm(sys._getframe(1))

    def __del__(self) -> None:
        """A caught one dies when its handler ends: arm again there, so the agent code's next line raises.

        Raising from the trace function switches tracing off, so without this a handler
        that catches the raise runs on untraced until the watchdog's next delivery, and
        code with nested handlers escapes only when a delivery happens to land between them."""
        try:
            block = _expired_block()
            if block is not None:
                block.arm(sys._getframe(1))
        except BaseException:  # noqa: S110 - at interpreter shutdown, or hit by a delivery: the watchdog retries
            pass


def _unarmed() -> ExecutionTimeout:
    """An `ExecutionTimeout` that arms nothing: raised from the signal handler and the trace function,
    where CPython must not have tracing switched on (a signal handler that does leaves the thread stuck)."""
    return ExecutionTimeout.__new__(ExecutionTimeout)


class TimeLimit:
    """``with TimeLimit(seconds, in_tool, tool_seconds):`` bounds the block to ``seconds`` of its own time."""

    def __init__(self, seconds: float, in_tool: Callable[[], int], tool_seconds: Callable[[], float]):
        self.seconds = seconds
        self.in_tool = in_tool
        self.tool_seconds = tool_seconds
        self.deadline = 0.0
        self.stopped_by = ""  # who ended the block before its time (`cut_short`): "" while only time can
        # True exactly while the limited code runs, set by what runs it (`kernel_side.exec_step`): nothing is
        # delivered into the host code around it. After it, when `sent`, that code calls `withdraw` and
        # `reset` and catches `Reset` (calls into C: nothing pending can land between them).
        self.code_running = False
        self.sent = 0
        self.withdraw: Callable[[], Any] = int
        self.reset: Callable[[], Any] = int
        self._block: _Block | None = None

    Reset = Reset

    def left(self) -> float:
        """Seconds left (extended by time spent in tools); <= 0 when expired."""
        if self.in_tool():
            return 0.5
        return self.deadline + self.tool_seconds() - _monotonic()

    def __enter__(self) -> "TimeLimit":
        self.deadline = _monotonic() + self.seconds
        self.withdraw, self.reset = prepared(threading.get_ident(), None), prepared(threading.get_ident(), Reset)
        block = self._block = _Block(self, sys._getframe(1))
        try:  # an exception landing half-way (a KeyboardInterrupt) must not leave the block behind
            _stack().append(block)
            timer_patches.acquire()
            block.patched = True
            if block.on_main:
                block.on_main = _hold_wake()
            _watchdog.add(block)  # last: from here on the watchdog may deliver to this thread
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: Any) -> bool:
        self.close()
        return False

    def close(self) -> None:
        """End the block (idempotent): after this nothing of it is left, in this thread or any other.

        Each step can be repeated; an exception landing meanwhile (a delivery before the block
        is marked ended, a KeyboardInterrupt) is caught and the rest retried; the caller calls
        `close` again from its own handler for one that lands before this frame runs. Any
        exception but a delivery is raised once the block is gone."""
        deferred: BaseException | None = None
        for _ in range(100):  # more than any run of interrupts; never for ever
            block = self._block
            if block is None:
                break
            try:
                block.end()
                self._block = None
            except ExecutionTimeout:
                continue
            except BaseException as exc:  # noqa: B036 - raised below, once the block is gone
                deferred = deferred or exc
        if deferred is not None:
            raise deferred


class _Block:
    """One limited block running in one thread."""

    def __init__(self, limit: TimeLimit, entry_frame: Any):
        self.limit = limit
        self.entry_frame = entry_frame  # the frame running the `with`: not agent code
        self.thread = threading.get_ident()
        self.on_main = (threading.current_thread() is threading.main_thread() and _pthread_kill is not None
                        and wake_signal.WAKE is not None)  # and the limit's signal handler is in place
        self.active = True
        self.fired = False  # the time is up: set by the watchdog or an interruptible sleep
        self.deliveries = 0  # asynchronous exceptions sent by the watchdog
        self.caught = 0  # deliveries up to the last one raised in the thread
        self.armed = False
        self.previous_trace: Any = None
        self.frames: dict[int, Any] = {}  # the frames `arm` set this block's trace function on
        self.tracer = _tracer_for(self)
        self.patched = False  # holds the timer patches (`timer_patches`)
        self.lock = threading.Lock()
        self.send = prepared(self.thread, ExecutionTimeout)
        self.delivered_at = float("-inf")  # the watchdog's: when it last delivered

    def due(self) -> bool:
        """The time is up (calls the interpreter's tool counters: not from the trace function)."""
        return not self.limit.in_tool() and self.limit.left() <= 0

    def deliver(self) -> None:
        """From the watchdog: raise `ExecutionTimeout` in the block's thread (an asynchronous exception,
        armed when caught), and on the main thread also the limit's signal, which interrupts a blocking call."""
        with self.lock:
            if self.active:
                self.fired = True
                if self.limit.code_running:  # tested and sent with no point between where the code's
                    self.deliveries += 1  # thread could run on (`async_raise.prepared`)
                    self.limit.sent += 1
                    self.send()
                    if self.on_main:
                        _pthread_kill(self.thread, wake_signal.WAKE)

    def arm(self, frame: Any) -> None:
        """In this block's thread: trace the agent's frames, raising again at their next line."""
        if not self.armed:
            previous = _gettrace()
            self.previous_trace = None if getattr(previous, "time_limit_tracer", False) else previous
            self.armed = True
        _settrace(self.tracer)
        while frame is not None and frame is not self.entry_frame:
            if _is_agent_code(frame):
                frame.f_trace = self.tracer
                frame.f_trace_lines = True
                self.frames[id(frame)] = frame
            frame = frame.f_back

    def fire(self, frame: Any) -> None:
        self.fired = True
        self.arm(frame)
        raise ExecutionTimeout()

    def end(self) -> None:
        """`TimeLimit.close`'s steps, in the block's thread; each may run again after an interrupt."""
        with self.lock:  # the watchdog delivers under it: after this, nothing more is sent
            self.active = False
        if self.deliveries:
            take_back(self.thread)  # one sent and not raised yet (taking back none is harmless)
        if self.armed:
            if _gettrace() is self.tracer:
                _settrace(self.previous_trace)
            self.armed = False
        while self.frames:
            _, frame = self.frames.popitem()
            if frame.f_trace is self.tracer:
                frame.f_trace = None
        stack = _stack()
        if self in stack:
            stack.remove(self)
        if self.on_main:
            _let_go_of_wake()
        if self.patched:
            timer_patches.release()  # then the flag: an interrupt at release's start retries it
            self.patched = False


def _tracer_for(block: _Block) -> Callable[..., Any]:
    """The block's trace function: once its time is up, at the next line of agent code, raise
    `ExecutionTimeout` again. Everything it uses is bound here, not looked up in the module (at
    interpreter shutdown a module's names are None, and a garbage collector may run it then).

    An exception raised by a trace function switches tracing off (CPython's rule), so this
    holds for one line; each new delivery of the exception arms it again."""
    prefix, timeout = STEP_PREFIX, ExecutionTimeout

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        if not block.active:  # its block has ended: this frame is not ours to stop any more
            frame.f_trace = None
            return None
        if not block.fired or not block.limit.code_running or not frame.f_code.co_filename.startswith(prefix):
            return None  # nor host code around the step, and library frames: raising there would be caught in
            # the agent's `try`
        if event == "line":
            raise timeout.__new__(timeout)
        return tracer

    tracer.time_limit_tracer = True  # type: ignore[attr-defined]
    return tracer


def _hold_wake() -> bool:
    """On the main thread, as a block starts: the limit's signal handler is in place (kept while any
    block runs there). False: it cannot be (a handler set outside Python); the block sends no signal."""
    if not _wake_previous:
        if signal.getsignal(wake_signal.WAKE) is None:
            return False
        _wake_previous.append(wake_signal.install(_on_wake))
    return True


def _let_go_of_wake() -> None:
    """On the main thread, as a block ends: the last one gives the signal's handler back, after
    delivering every signal already sent (a late one would otherwise meet the default action)."""
    if _wake_previous and not any(block.active and block.on_main for block in _stack()):
        wake_signal.drain()
        wake_signal.give_back(_wake_previous[0])
        _wake_previous.clear()


_watchdog = Watchdog(RETRY)


def cut_short(thread_id: int, why: str) -> bool:
    """End the limited block running in that thread now, as if its time were up (a run cancelled from
    outside: an MCP task); True when there was one. Time in a tool still does not count: a block inside a
    tool (a sub-agent) is ended when the tool returns. ``why`` is what the step's output says."""
    with _watchdog.lock:
        blocks = [block for block in _watchdog.blocks if block.active and block.thread == thread_id]
    for block in blocks:
        block.limit.stopped_by = why
        block.limit.deadline = float("-inf")
    _watchdog.wake()
    return bool(blocks)


def _stack() -> list[_Block]:
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


def _expired_block() -> _Block | None:
    """The running block of this thread whose time is up, while its code runs (flags only: safe in a
    signal handler)."""
    for block in getattr(_local, "stack", ()):
        if block.active and block.fired and block.limit.code_running:
            return block
    return None


def _on_wake(signum: int, frame: Any, expired: Callable[[], _Block | None] = _expired_block) -> None:
    """The limit's signal, on the main thread. Running Python, the thread raises the pending asynchronous
    exception as this returns; blocked in a C call (a sleep, a socket), it would not: when the previous
    delivery was never raised, raise here, which interrupts the call. For a block that has ended, nothing."""
    block = expired()
    if block is not None and block.caught < block.deliveries - 1:
        raise ExecutionTimeout.__new__(ExecutionTimeout)


def _is_agent_code(frame: Any) -> bool:
    return frame.f_code.co_filename.startswith(STEP_PREFIX)


def _agent_calling() -> bool:
    """Is agent code calling (for `timer_patches`)? While some block runs: this thread runs a live block,
    or agent code is on its stack (a thread the agent's code started). Host code is never refused."""
    if not _watchdog.live():
        return False
    if any(block.active for block in getattr(_local, "stack", ())):
        return True
    frame = sys._getframe(1)
    while frame is not None:
        if _is_agent_code(frame):
            return True
        frame = frame.f_back
    return False


def interruptible_sleep(seconds: float) -> None:
    """``time.sleep`` while a limited block runs: the block's time limit interrupts it, in any thread."""
    stack = getattr(_local, "stack", None)
    if not stack:
        return _real_sleep(seconds)
    seconds = float(seconds)
    if seconds < 0:
        raise ValueError("sleep length must be non-negative")
    end = _monotonic() + seconds
    while True:
        for block in stack:
            if block.active and block.limit.code_running and (block.fired or block.due()):
                block.fire(sys._getframe(1))
        left = end - _monotonic()
        if left <= 0:
            return
        # In slices, on every thread: a worker thread's C sleep cannot be interrupted, and a signal the OS hands
        # to another thread (a Jupyter interrupt's SIGINT) is handled only when the main thread next runs Python,
        # which it does between slices. The limit's own signal still wakes the main thread within a slice.
        _real_sleep(min(left, max(stack[-1].limit.left(), 0.005), SLICE))


timer_patches = make_timer_patches(interruptible_sleep, _agent_calling)


def host_code() -> tuple:
    """The code objects of this module that act in the agent's thread while its code runs (arming the
    tracer sets a trace function): the runtime checks count them as the host's, not the agent's."""
    return (_Block.arm.__code__,)
