"""One sub-agent as its parent supervises it: its agent and run, its thread, and how to stop it.

A child runs its RLM loop on a host thread (started in a copy of the caller's
context, so the DSPy settings carry over). Stopping it (its time limit, the stop
button, its own parent stopping) kills its kernel at once and cancels the host tool
its thread may be in (see `interpreters.kernel_bridge`); a thread that has still not
ended `STOP_GRACE` later (a tool sleeping in C, an LM call in flight) is abandoned:
its run is recorded as ended and the parent carries on without waiting for it.
"""

from __future__ import annotations

import contextvars
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from ...core.loop.ending import not_submitted
from ...core.policy.approval import waited
from ...core.run.run import Run
from ...interpreters.kernel import KernelInterpreter
from ...interpreters.kernel import LimitExceeded
from .tree import Outcome, Spec

STOP_GRACE = 0.5  # after a child is stopped, before its parent stops waiting for its thread
FINISHED = ("finished", "failed", "interrupted")


@dataclass
class Child:
    """One sub-agent: what it was asked, its agent and run, its thread, and how to stop it."""

    spec: Spec
    index: int
    parent: "Child | None" = None
    agent: Any = None
    run: Run | None = None
    timeout: float | None = None
    thread: threading.Thread | None = None
    done: threading.Event = field(default_factory=threading.Event)
    started_at: float | None = None
    interpreters: list[KernelInterpreter] = field(default_factory=list)
    children: list["Child"] = field(default_factory=list)
    stopped: bool = False
    hard: bool = False
    stop_message: str | None = None
    timed_out: bool = False
    cancelled_at: float | None = None
    reported: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # ------------------------------------------------------------ running
    def start(self, wake: threading.Event) -> None:
        """Run the child's agent on a host thread, in a copy of the caller's context."""
        context = contextvars.copy_context()
        self.started_at = time.monotonic()
        self.thread = threading.Thread(target=context.run, args=(self._main, wake), daemon=True,
                                       name=f"deepagent-subagent-{self.run.id if self.run else self.index}")
        self.thread.start()

    def _main(self, wake: threading.Event) -> None:
        try:
            if self.stopped:  # before it started
                interrupted = self.stop_message is None
                self._finish("interrupted" if interrupted else "failed", self.stop_message or "KeyboardInterrupt")
                return
            self.agent.run(self.spec.task, context=self.spec.context, run=self.run)
        except KeyboardInterrupt:
            self._finish("interrupted", "KeyboardInterrupt")
        except BaseException as exc:  # what DeepAgent.run does not turn into a failed run itself
            self._finish("failed", f"{type(exc).__name__}: {exc}")
        finally:
            self.done.set()
            wake.set()

    def _finish(self, status: str, error: str) -> None:
        if self.run is not None and self.run.status not in FINISHED:
            self.run.finish(status, error=error)

    # ------------------------------------------------------------ stopping
    def attach(self, interpreter: KernelInterpreter) -> None:
        """Called by the child's interpreter once it has its kernel: from now on, stopping reaches it."""
        with self._lock:
            self.interpreters.append(interpreter)
            stopped, message, hard = self.stopped, self.stop_message, self.hard
        if stopped:
            interpreter.stop(message, hard=hard)

    def adopt(self, child: "Child") -> None:
        with self._lock:
            self.children.append(child)
            stopped, message, hard = self.stopped, self.stop_message, self.hard
        if stopped:
            child.stop(message, hard=hard)

    def stop(self, message: str | None, hard: bool = False) -> None:
        """Stop this child and its descendants: its code ends with ``message`` (None: interrupted)."""
        with self._lock:
            if self.stopped and (self.hard or not hard):
                return
            self.stopped, self.hard = True, hard
            if self.stop_message is None:
                self.stop_message = message
            interpreters, children = list(self.interpreters), list(self.children)
        for child in children:
            child.stop(message, hard=hard)
        for interpreter in interpreters:
            interpreter.stop(self.stop_message, hard=hard)

    def enforce_timeout(self, now: float) -> None:
        """Past its deadline: kill the kernel and cancel its tool now; stop waiting a moment later."""
        if self.timeout is None or self.started_at is None:
            return
        over = now - (self.started_at + self.timeout + waited(self.run, now))  # waiting for the user does not count
        if over < 0:
            return
        message = f"the sub-agent ran past its time limit of {self.timeout:g} s and was stopped"
        if not self.timed_out:
            self.timed_out = True
            self.stop(message, hard=True)
        elif over >= STOP_GRACE:
            self.abandon("failed", message)

    def cancel(self, now: float, message: str | None) -> None:
        """The caller is going away: kill the kernel now; stop waiting a moment later."""
        if self.cancelled_at is None:
            self.cancelled_at = now
            self.stop(message, hard=True)
        elif now - self.cancelled_at >= STOP_GRACE:
            self.abandon("interrupted" if message is None else "failed", message or "KeyboardInterrupt")

    def abandon(self, status: str, error: str) -> None:
        """Stop waiting for a thread that does not end (an LM call in flight); record the run as ended."""
        self._finish(status, error)
        self.done.set()

    # ------------------------------------------------------------ reading
    def outcome(self) -> Outcome:
        run = self.run
        if self.timed_out:
            return Outcome(False, f"Error: {self.stop_message}; its files in the workspace are kept.")
        if run.status == "finished" and run.extracted and isinstance(run.result, str):  # core/loop/ending.py
            marked = f"[{not_submitted(run.extracted)}]\n{run.result}"  # the parent reads whose answer it is
            return Outcome(True, marked, marked)
        if run.status == "finished":
            return Outcome(True, "" if run.result is None else str(run.result), run.result)
        if run.status == "interrupted":
            return Outcome(False, "Error: the sub-agent was interrupted.")
        if isinstance(getattr(run, "exception", None), LimitExceeded):  # one of its kernel's limits (pool/limits.py)
            return Outcome(False, f"Error: {run.exception}; its files in the workspace are kept.")
        if run.status in ("budget_exhausted", "stopped"):  # the tree's spend cap, the user's stop (core.loop.ending)
            return Outcome(False, f"Error: the sub-agent ended {run.status}: {run.error}; its files in the workspace are kept.")
        return Outcome(False, f"Error: the sub-agent failed: {run.error}")
