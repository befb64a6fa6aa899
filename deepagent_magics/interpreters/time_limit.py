"""The time limit of one code block: stop agent code that has run too long, even code that fights back.

``with TimeLimit(seconds, in_tool, tool_seconds):`` bounds the block to ``seconds`` of
its own time; time spent inside tools (a sub-agent, an LM call) does not count (the
interpreter reports it through ``in_tool``/``tool_seconds``).

Models write retry loops with a bare ``except:``, and code may run off the main
thread (an evaluation runs agents in worker threads) or switch the timer off. So:

- One watchdog thread (a bare thread, not in ``threading.enumerate()``, that survives
  exceptions thrown at it) raises `ExecutionTimeout` in a block's thread once its time
  is up, and again every `RETRY` seconds until the block is gone: SIGALRM sent to the
  main thread with ``pthread_kill`` (a sleeping main thread wakes), an asynchronous
  exception in any other thread.
- Once raised, the exception arms a trace function in the code's thread that raises it
  again at the next line of the agent's own code (its steps and the functions they
  define), so an ``except`` clause there that catches it is left at once. CPython
  switches tracing off when a trace function raises; the caught exception arms it again
  when it dies at the end of its handler, so nested handlers are left one after another.
- While a limited block runs, ``time.sleep`` is an interruptible sleep that honours the
  limit (Python cannot interrupt a C sleep in a worker thread), and the calls that would
  switch the timer off are refused (`timer_patches`).
- When the block ends nothing more is delivered: it is marked inactive under the lock
  the watchdog delivers under, a pending asynchronous exception is cleared, the previous
  SIGALRM handler and trace function are restored.

The code on the agent's side of this module takes no lock an exception could leave held
and calls nothing an exception could leave half-done. Not stoppable: one long call into
C that holds the GIL (a catastrophic regular expression, ``sum(range(10**12))``),
blocking calls other than ``time.sleep`` in a worker thread, threads the code started
itself. The exception is delivered when the call returns.
"""

from __future__ import annotations

import _thread
import signal
import sys
import threading
import time
from typing import Any, Callable

from ..errors import DeepAgentSignal
from .async_raise import raise_in, take_back
from .guards import ORIGINAL
from .kernel_side import STEP_PREFIX
from .timer_patches import make_timer_patches

RETRY = 0.1  # seconds between raises once the time is up

_monotonic = time.monotonic
_real_sleep = time.sleep
_pthread_kill = ORIGINAL["pthread_kill"]
_real_signal = signal.signal
_settrace, _gettrace = sys.settrace, sys.gettrace
_local = threading.local()  # .stack: the limited blocks running in this thread, innermost last


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
            if block is not None and block.thread == threading.get_ident():
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
        self._block: _Block | None = None

    def left(self) -> float:
        """Seconds left (extended by time spent in tools); <= 0 when expired."""
        if self.in_tool():
            return 0.5
        return self.deadline + self.tool_seconds() - _monotonic()

    def __enter__(self) -> "TimeLimit":
        self.deadline = _monotonic() + self.seconds
        block = self._block = _Block(self, sys._getframe(1))
        try:  # an exception landing half-way (a KeyboardInterrupt) must not leave the block behind
            stack = _stack()
            stack.append(block)
            timer_patches.acquire()
            block.patched = True
            if block.on_main and sum(b.on_main for b in stack) == 1:
                block.previous_handler = _real_signal(signal.SIGALRM, _on_alarm)
            _watchdog.add(block)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: Any) -> bool:
        self.close()
        return False

    def close(self) -> None:
        """End the block (idempotent): after this nothing is delivered to the thread.

        An exception delivered while we stop is caught and the stop retried; the caller
        calls `close` again from its own handler for one that lands before this frame runs.
        Any other exception that lands meanwhile (a KeyboardInterrupt) is raised once the block
        is gone: a block left half-closed would raise in whatever code the thread runs next.
        """
        deferred: BaseException | None = None
        while self._block is not None:
            try:
                block = self._block
                with block.lock:  # the watchdog delivers under it: after this, nothing more
                    block.active = False
                if block.deliveries:
                    take_back(block.thread)  # one sent and not raised yet
                if block.armed:
                    block.armed = False
                    _settrace(block.previous_trace)
                stack = _stack()
                if block in stack:
                    stack.remove(block)
                if block.previous_handler is not None and threading.current_thread() is threading.main_thread():
                    _real_signal(signal.SIGALRM, block.previous_handler)
                    block.previous_handler = None
                if block.patched:
                    timer_patches.release()  # then the flag: an interrupt at release's start retries it
                    block.patched = False
                self._block = None
            except ExecutionTimeout:
                continue
            except BaseException as exc:  # noqa: B036 - raised below, once the block is gone
                if deferred is not None:  # a step that keeps failing: give the block up rather than loop
                    self._block = None
                deferred = deferred or exc
        if deferred is not None:
            raise deferred


class _Block:
    """One limited block running in one thread."""

    def __init__(self, limit: TimeLimit, entry_frame: Any):
        self.limit = limit
        self.entry_frame = entry_frame  # the frame running the `with`: not agent code
        self.thread = threading.get_ident()
        self.on_main = threading.current_thread() is threading.main_thread() and _pthread_kill is not None
        self.active = True
        self.fired = False  # the time is up: set by the watchdog or an interruptible sleep
        self.deliveries = 0  # asynchronous exceptions sent by the watchdog
        self.caught = 0  # deliveries up to the last one raised in the thread
        self.armed = False
        self.previous_trace: Any = None
        self.previous_handler: Any = None
        self.patched = False  # holds the timer patches (`timer_patches`)
        self.lock = threading.Lock()

    def due(self) -> bool:
        """The time is up (calls the interpreter's tool counters: not from the trace function)."""
        return not self.limit.in_tool() and self.limit.left() <= 0

    def deliver(self) -> None:
        """From the watchdog: raise `ExecutionTimeout` in the block's thread (an asynchronous exception,
        armed when caught), and on the main thread also SIGALRM, which interrupts a blocking call."""
        with self.lock:
            if self.active:
                self.fired = True
                self.deliveries += 1
                raise_in(self.thread, ExecutionTimeout)
                if self.on_main:
                    _pthread_kill(self.thread, signal.SIGALRM)

    def arm(self, frame: Any) -> None:
        """In this block's thread: trace the agent's frames, raising again at their next line."""
        if not self.armed:
            self.armed = True
            self.previous_trace = _gettrace()
        _settrace(_tracer)
        while frame is not None and frame is not self.entry_frame:
            if _is_agent_code(frame):
                frame.f_trace = _tracer
                frame.f_trace_lines = True
            frame = frame.f_back

    def fire(self, frame: Any) -> None:
        self.fired = True
        self.arm(frame)
        raise ExecutionTimeout()


class _Watchdog:
    """The one thread that watches every running block, started when first needed."""

    def __init__(self) -> None:
        self.blocks: list[_Block] = []
        self.lock = threading.Lock()
        self.wakeup = threading.Event()
        self.running = False

    def add(self, block: _Block) -> None:
        with self.lock:
            self.blocks.append(block)
            start, self.running = not self.running, True
        if start:
            _thread.start_new_thread(self._watch, ())
        self.wakeup.set()

    def _watch(self) -> None:
        try:
            while True:
                try:
                    if not self._round():
                        return
                except BaseException:  # an exception thrown at the watchdog: keep watching
                    continue
        except BaseException:  # killed after all: the next block starts another
            with self.lock:
                self.running = False

    def _round(self) -> bool:
        """Deliver to every block whose time is up; sleep until the next deadline. False: none left."""
        with self.lock:
            self.blocks = [block for block in self.blocks if block.active]
            blocks = list(self.blocks)
            if not blocks:
                self.running = False
                return False
        wait = 1.0
        for block in blocks:
            if block.due():
                block.deliver()
                wait = min(wait, RETRY)
            else:
                wait = min(wait, max(block.limit.left(), 0.005))
        self.wakeup.wait(wait)
        self.wakeup.clear()
        return True


_watchdog = _Watchdog()


def cut_short(thread_id: int, why: str) -> bool:
    """End the limited block running in that thread now, as if its time were up (a run cancelled from
    outside: an MCP task); True when there was one. Time in a tool still does not count: a block inside a
    tool (a sub-agent) is ended when the tool returns. ``why`` is what the step's output says."""
    with _watchdog.lock:
        blocks = [block for block in _watchdog.blocks if block.active and block.thread == thread_id]
    for block in blocks:
        block.limit.stopped_by = why
        block.limit.deadline = float("-inf")
    _watchdog.wakeup.set()
    return bool(blocks)


def _stack() -> list[_Block]:
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


def _expired_block() -> _Block | None:
    """The running block of this thread whose time is up (flags only: safe in the trace function)."""
    for block in getattr(_local, "stack", ()):
        if block.active and block.fired:
            return block
    return None


def _on_alarm(signum: int, frame: Any) -> None:
    """SIGALRM from the watchdog. Running Python, the thread raises the pending asynchronous exception
    as this returns; blocked in a C call (a sleep, a socket), it would not: when the previous delivery was
    never raised, raise here, which interrupts the call."""
    block = _expired_block()
    if block is not None:
        if block.caught < block.deliveries - 1:
            raise _unarmed()
        return
    outer = next((b for b in getattr(_local, "stack", ()) if b.previous_handler is not None), None)
    if outer is not None and callable(outer.previous_handler):  # not ours: an alarm set before the block
        outer.previous_handler(signum, frame)


def _is_agent_code(frame: Any) -> bool:
    return frame.f_code.co_filename.startswith(STEP_PREFIX)


def _tracer(frame: Any, event: str, arg: Any) -> Any:
    """Once the time is up: at the next line of agent code, raise `ExecutionTimeout` again.

    An exception raised by a trace function switches tracing off (CPython's rule), so
    this holds for one line; each new delivery of the exception arms it again."""
    if not _is_agent_code(frame) or _expired_block() is None:
        return None  # library frames are left alone: raising there would be caught in the agent's `try`
    if event == "line":
        raise _unarmed()
    return _tracer


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
            if block.active and (block.fired or block.due()):
                block.fire(sys._getframe(1))
        left = end - _monotonic()
        if left <= 0:
            return
        # In slices (a worker thread's C sleep cannot be interrupted); SIGALRM wakes the main thread.
        _real_sleep(min(left, max(stack[-1].limit.left(), 0.005), 0.05 if not stack[-1].on_main else left))


timer_patches = make_timer_patches(interruptible_sleep)


def host_code() -> tuple:
    """The code objects of this module that act in the agent's thread while its code runs (arming the
    tracer sets a trace function): the runtime checks count them as the host's, not the agent's."""
    return (_Block.arm.__code__,)
