"""Running children: start at most ``max_parallel`` at once, enforce their time limits,
and wait for them interruptibly.

A KeyboardInterrupt (the stop button) lands in the supervising wait on the main
thread: every child's kernel is killed, the trajectories are kept, and the
interrupt is re-raised. While that clean-up runs (half a second at most), further
presses of the stop button are ignored, so an impatient user cannot cut it short
and leave kernels or runs behind. A child that fails for any reason becomes an
``Error: ...`` string for its parent, which carries on.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections import deque
from typing import Any, Iterator

from ...core.policy import approval
from ...core.run.run import Run
from ...core.run.session import Session
from .child import FINISHED, STOP_GRACE, Child
from .subagent import child_agent, kind_refusal
from .tree import Outcome, Spec, Tree, tree_of

POLL_SECONDS = 0.1


def run_subagents(session: Session, specs: list[Spec | str]) -> list[Outcome]:
    """Run one child per spec (a str is an error already); outcomes in the order given."""
    parent = session.agent
    if parent is None:
        return [Outcome(False, "Error: delegation needs a DeepAgent run")] * len(specs)
    tree = tree_of(session)
    me: Child | None = getattr(parent, "child", None)
    outcomes: list[Outcome | None] = [None] * len(specs)
    children: list[Child] = []
    for index, spec in enumerate(specs):
        refusal = spec if isinstance(spec, str) else _refusal(parent, spec, tree)
        if refusal is not None:
            outcomes[index] = Outcome(False, refusal)
            continue
        child = Child(spec, index, parent=me, timeout=parent.subagent_timeout)
        try:
            child.agent = child_agent(parent, session, tree, child)
        except (ValueError, TypeError) as exc:  # e.g. a type whose tools clash with its parent's
            outcomes[index] = Outcome(False, f"Error: the sub-agent could not be built: {exc}")
            continue
        isolation = getattr(tree.pool, "isolation", None)  # what confines its kernel (records, displays)
        config = {**child.agent.config(), **({"sandbox": isolation} if isolation is not None else {})}
        child.run = session.run.add_child(spec.task, profile=child.agent.profile, config=config)
        if me is not None:
            me.adopt(child)
        children.append(child)
    if children:
        _supervise(session.run, tree, me, children, max(1, int(parent.max_parallel)))
    for child in children:
        outcomes[child.index] = child.outcome()
    return outcomes  # type: ignore[return-value]


def _refusal(parent: Any, spec: Spec, tree: Tree) -> str | None:
    if not spec.task.strip():
        return "Error: the task is empty; say what the sub-agent should do"
    if parent.depth >= parent.max_depth:
        return (f"Error: delegation depth limit reached (this agent is at depth {parent.depth} of "
                f"max_depth {parent.max_depth}); do this work yourself with code and llm_query")
    refusal = kind_refusal(parent, spec)
    if refusal is not None:
        return refusal
    if not tree.budget.acquire():
        return (f"Error: the sub-agent budget of this run is used up ({tree.budget.limit} started); "
                "do the remaining work yourself")
    return None


def _supervise(run: Run, tree: Tree, me: Child | None, children: list[Child], max_parallel: int) -> None:
    """Start the children (at most ``max_parallel`` at once) and wait for them, interruptibly."""
    pending, running = deque(children), []
    wake = threading.Event()
    try:
        while pending or running:
            while pending and len(running) < max_parallel:
                child = pending.popleft()
                child.start(wake)
                running.append(child)
            wake.wait(POLL_SECONDS)  # a KeyboardInterrupt lands here, on the main thread
            wake.clear()
            approval.serve(run)  # a sub-agent's approval question is asked on the run's own thread
            now = time.monotonic()
            cancelled = (me is not None and me.stopped) or tree.root_run.status in FINISHED
            for child in list(running):
                if child.done.is_set():
                    running.remove(child)
                    _report(run, child)
                elif cancelled:
                    child.cancel(now, me.stop_message if me is not None and me.stopped else None)
                else:
                    child.enforce_timeout(now)
            if cancelled:
                while pending:
                    _never_started(run, pending.popleft(), "interrupted")
    except BaseException:
        with _sigint_ignored():
            _stop_all(run, running, pending)
        raise


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    """Ignore SIGINT meanwhile (on the main thread; elsewhere signals do not land anyway).

    A no-op Python handler, not SIG_IGN: an ignored SIGINT is inherited by every process started
    meanwhile (a kernel, a subprocess), which then cannot be interrupted. The previous handler is
    put back even when an exception (the time limit's) lands on the way out."""
    previous = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or previous is None:  # None: a C handler
        yield
        return
    try:
        signal.signal(signal.SIGINT, _pressed_again)
    except (ValueError, OSError):
        yield
        return
    try:
        yield
    finally:
        _restore_sigint(previous)


def _pressed_again(signum: int, frame: Any) -> None:
    """The stop button, pressed again while the first press is handled: nothing more to do."""


def _restore_sigint(previous: Any) -> None:
    deferred: BaseException | None = None
    for _ in range(100):
        try:
            signal.signal(signal.SIGINT, previous)
            break
        except BaseException as exc:  # noqa: B036 - an asynchronous exception landing here: retry, then raise
            deferred = deferred or exc
    if deferred is not None:
        raise deferred


def _stop_all(run: Run, running: list[Child], pending: deque[Child]) -> None:
    """Kill every running child's kernel (and its descendants'), keep their trajectories."""
    for child in running:
        child.stop(None, hard=True)
    deadline = time.monotonic() + STOP_GRACE
    for child in running:
        child.done.wait(max(0.0, deadline - time.monotonic()))
        if not child.done.is_set():
            child.abandon("interrupted", "KeyboardInterrupt")
        _report(run, child)
    while pending:
        _never_started(run, pending.popleft(), "interrupted")


def _never_started(run: Run, child: Child, status: str) -> None:
    child.stopped = True
    child._finish(status, "stopped before it started")
    child.done.set()
    _report(run, child)


def _report(run: Run, child: Child) -> None:
    if not child.reported:
        child.reported = True
        run.child_finished(child.run)
