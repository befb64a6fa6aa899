"""The time limit of one code block: stop agent code that has run too long, even code that fights back.

``with TimeLimit(seconds, in_tool, tool_seconds):`` bounds the block to ``seconds`` of
its own time; time spent inside tools (a sub-agent, an LM call) does not count (the
interpreter reports it through ``in_tool``/``tool_seconds``).

Models write retry loops with a bare ``except:``, and code may run off the main
thread (an evaluation runs agents in worker threads) or switch the timer off. So:

- A watchdog thread per block (outside the agent's reach: it keeps no state the code
  sees and survives exceptions thrown at it) raises `ExecutionTimeout` in the block's
  thread once the time is up, and again every `RETRY` seconds until the block is gone:
  SIGALRM sent to the main thread with ``pthread_kill`` (so a sleeping main thread
  wakes), an asynchronous exception in any other thread.
- Once raised, the exception re-arms itself in the code's thread: a trace function
  raises it again on the next line the code runs, so an ``except`` clause that catches
  it is left at its first line.
- While a limited block runs, ``time.sleep`` is an interruptible sleep that honours the
  limit (Python cannot interrupt a C sleep in a worker thread), and the calls that would
  switch the timer off are refused: ``signal.signal(SIGALRM, ...)``,
  ``signal.setitimer(ITIMER_REAL, ...)``, ``signal.alarm``, ``signal.siginterrupt(SIGALRM)``
  and ``signal.pthread_sigmask`` blocking SIGALRM.
- When the block ends nothing more is delivered: the watchdog stops under a lock, a
  pending asynchronous exception is cleared, the previous SIGALRM handler and trace
  function are restored.

Not stoppable: one long call into C that holds the GIL (a catastrophic regular expression,
``sum(range(10**12))``), blocking calls other than ``time.sleep`` in a worker thread, and
threads the code started itself. The exception is delivered when the call returns.
"""

from __future__ import annotations

import ctypes
import signal
import sys
import threading
import time
from typing import Any, Callable

from .guards import ORIGINAL, Patches

RETRY = 0.1  # seconds between raises once the time is up

_monotonic = time.monotonic
_real_sleep = time.sleep
_pthread_kill = ORIGINAL["pthread_kill"]
_set_async_exc = ctypes.pythonapi.PyThreadState_SetAsyncExc
_real = {name: getattr(signal, name, None)
         for name in ("signal", "setitimer", "alarm", "siginterrupt", "pthread_sigmask")}
_settrace, _gettrace = sys.settrace, sys.gettrace
_local = threading.local()  # .stack: the limited blocks running in this thread, innermost last


class ExecutionTimeout(BaseException):
    """Raised inside agent code that ran past its time limit (a BaseException, so `except Exception` can't eat it).

    Creating one in a thread whose block has expired arms the trace function there, so
    code that catches it gets it again on its next line (an asynchronous exception is
    created in the target thread, when it is caught)."""

    def __init__(self, *args: Any):
        super().__init__(*args)
        block = _expired_block()
        if block is not None:
            block.arm(sys._getframe(1))


class TimeLimit:
    """``with TimeLimit(seconds, in_tool, tool_seconds):`` bounds the block to ``seconds`` of its own time."""

    def __init__(self, seconds: float, in_tool: Callable[[], int], tool_seconds: Callable[[], float]):
        self.seconds = seconds
        self.in_tool = in_tool
        self.tool_seconds = tool_seconds
        self.deadline = 0.0
        self._block: _Block | None = None

    def left(self) -> float:
        """Seconds left (extended by time spent in tools); <= 0 when expired."""
        if self.in_tool():
            return 0.5
        return self.deadline + self.tool_seconds() - _monotonic()

    def __enter__(self) -> "TimeLimit":
        self.deadline = _monotonic() + self.seconds
        block = _Block(self, sys._getframe(1))
        _timer_patches.acquire()
        stack = _stack()
        stack.append(block)
        self._block = block
        if block.on_main and len([b for b in stack if b.on_main]) == 1:
            block.previous_handler = _real["signal"](signal.SIGALRM, _on_alarm)
        block.start()
        return self

    def __exit__(self, *exc: Any) -> bool:
        self.close()
        return False

    def close(self) -> None:
        """End the block (idempotent): after this nothing is delivered to the thread.

        An exception delivered while we stop is caught and the stop retried; the caller
        calls `close` again from its own handler for one that lands before this frame runs.
        """
        while self._block is not None:
            try:
                self._end(self._block)
                self._block = None
            except ExecutionTimeout:
                continue

    @staticmethod
    def _end(block: "_Block") -> None:
        block.stop()
        if not block.on_main:
            _set_async_exc(ctypes.c_ulong(block.thread), None)  # clear one sent before stop()
        if block.armed:
            block.armed = False
            _settrace(block.previous_trace)
        stack = _stack()
        if block in stack:
            stack.remove(block)
            if block.previous_handler is not None:
                _real["signal"](signal.SIGALRM, block.previous_handler)
            _timer_patches.release()


class _Block:
    """One limited block running in one thread, and its watchdog."""

    def __init__(self, limit: TimeLimit, entry_frame: Any):
        self.limit = limit
        self.entry_frame = entry_frame  # the frame running the `with`: not agent code
        self.thread = threading.get_ident()
        self.on_main = threading.current_thread() is threading.main_thread() and _pthread_kill is not None
        self.active = True
        self.armed = False
        self.previous_trace: Any = None
        self.previous_handler: Any = None
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.wake = threading.Event()  # set once the time is up: an interruptible sleep returns

    def expired(self) -> bool:
        return self.active and not self.limit.in_tool() and self.limit.left() <= 0

    def start(self) -> None:
        threading.Thread(target=self._watch, daemon=True, name="deepagent-timeout").start()

    def stop(self) -> None:
        with self.lock:
            self.active = False
        self.done.set()

    def _watch(self) -> None:
        while self.active:
            try:
                left = self.limit.left()
                if left > 0 or self.limit.in_tool():
                    self.done.wait(min(max(left, 0.01), 1.0))
                    continue
                self._deliver()
                self.done.wait(RETRY)
            except BaseException:  # an exception thrown at the watchdog: keep watching
                continue

    def _deliver(self) -> None:
        with self.lock:
            if not self.active:
                return
            self.wake.set()
            if self.on_main:
                _pthread_kill(self.thread, signal.SIGALRM)
            else:
                _set_async_exc(ctypes.c_ulong(self.thread), ctypes.py_object(ExecutionTimeout))

    def arm(self, frame: Any) -> None:
        """In this block's thread: trace every line of the agent's frames, raising again."""
        if not self.armed:
            self.armed = True
            self.previous_trace = _gettrace()
        _settrace(_tracer)
        while frame is not None and frame is not self.entry_frame:
            if frame.f_code.co_filename != __file__:
                frame.f_trace = _tracer
                frame.f_trace_lines = True
            frame = frame.f_back

    def fire(self, frame: Any) -> None:
        self.arm(frame)
        raise ExecutionTimeout()


def _stack() -> list[_Block]:
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


def _expired_block() -> _Block | None:
    for block in getattr(_local, "stack", ()):
        if block.expired():
            return block
    return None


def _on_alarm(signum: int, frame: Any) -> None:
    block = _expired_block()
    if block is not None:
        block.fire(frame)


def _tracer(frame: Any, event: str, arg: Any) -> Any:
    if frame.f_code.co_filename == __file__:
        return None
    block = _expired_block()
    if block is None:
        return None
    if event in ("line", "call"):
        raise ExecutionTimeout()
    return _tracer


# ----------------------------------------------------------------------------- while a block runs
def _sleep(seconds: float) -> None:
    """``time.sleep`` that a limited block's time limit can interrupt, in any thread."""
    stack = getattr(_local, "stack", None)
    if not stack:
        return _real_sleep(seconds)
    seconds = float(seconds)
    if seconds < 0:
        raise ValueError("sleep length must be non-negative")
    end = _monotonic() + seconds
    block = stack[-1]
    while True:
        expired = _expired_block()
        if expired is not None:
            expired.fire(sys._getframe(1))
        left = end - _monotonic()
        if left <= 0:
            return
        block.wake.wait(min(left, max(block.limit.left(), 0.01)))


def _refuse(what: str) -> None:
    raise PermissionError(f"{what} would switch off the time limit of this code; agent code may not call it.")


def _timer_patch_list(patches: Patches) -> list[tuple[Any, str, Any]]:
    def signal_(signalnum, handler):
        if patches.active() and signalnum == signal.SIGALRM:
            _refuse("signal.signal(SIGALRM, ...)")
        return _real["signal"](signalnum, handler)

    def setitimer(which, seconds, interval=0.0):
        if patches.active() and which == signal.ITIMER_REAL:
            _refuse("signal.setitimer(ITIMER_REAL, ...)")
        return _real["setitimer"](which, seconds, interval)

    def alarm(seconds):
        if patches.active():
            _refuse("signal.alarm()")
        return _real["alarm"](seconds)

    def siginterrupt(signalnum, flag):
        if patches.active() and signalnum == signal.SIGALRM:
            _refuse("signal.siginterrupt(SIGALRM, ...)")
        return _real["siginterrupt"](signalnum, flag)

    def pthread_sigmask(how, mask):
        mask = list(mask)
        if patches.active() and how != signal.SIG_UNBLOCK and signal.SIGALRM in mask:
            _refuse("signal.pthread_sigmask blocking SIGALRM")
        return _real["pthread_sigmask"](how, mask)

    replacements = {"signal": signal_, "setitimer": setitimer, "alarm": alarm, "siginterrupt": siginterrupt,
                    "pthread_sigmask": pthread_sigmask}
    out = [(time, "sleep", _sleep)]
    if hasattr(signal, "SIGALRM"):
        out += [(signal, name, replacement) for name, replacement in replacements.items() if _real[name] is not None]
    return out


_timer_patches = Patches(_timer_patch_list)
