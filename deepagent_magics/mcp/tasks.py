"""MCP Tasks (protocol revision 2025-11-25): the tasks a server holds, each a ``run_task`` call run in the background.

A client that asks for a task (``tools/call`` with ``params.task``) gets a `Task` at once; the call runs on
in the server's own task group (`task_protocol`), so the task outlives the connection that made it.
This module is the bookkeeping: who may see a task (its owner: the token over HTTP, the one peer over
stdio), its status and how it ends, how long it is kept, how many the server holds, and stopping
its run. The wire (handlers, capability, the ``tools/call`` interception) is `task_protocol`.

Kept: until its ``ttl`` (from creation) passes, or `FETCHED_GRACE` seconds after its result was fetched
(a client that lost the answer can ask again), whichever is first. A task still working when its
``ttl`` passes is cancelled: its run stops. Refused: a ``ttl`` outside `MIN_TTL_MS`..``max_ttl_ms``,
and a new task while the server holds ``max_live`` live ones (working, or ended with a result not
yet fetched).
"""

from __future__ import annotations

import datetime
import math
import secrets
import threading
import time
from typing import Any, Callable

import anyio
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, INVALID_REQUEST

DEFAULT_TTL_MS = 3_600_000  # an hour, when the client names none
MAX_TTL_MS = 86_400_000  # a day: the longest a client may ask for (the server's --task-ttl)
MIN_TTL_MS = 1_000  # shorter, and the task is gone before a client could poll it once
MAX_LIVE = 8  # live tasks a server holds at once (the server's --max-tasks): each is an agent run here
POLL_INTERVAL_MS = 1_000  # what tasks/get suggests between polls
FETCHED_GRACE = 60.0  # seconds a task stays after its result was fetched
TERMINAL = ("completed", "failed", "cancelled")
STOP_EVERY = 0.1  # seconds between cuts of a cancelled run's code, until the run has ended


def gone(task_id: Any) -> MCPError:
    """The one answer for a task that is not there, expired or another owner's: nothing tells them apart."""
    return MCPError(code=INVALID_PARAMS, message=f"Failed to retrieve task: no task {str(task_id)[:80]!r} "
                                                 "(unknown, expired, or made with another token)")


def requested_ttl(task_field: Any, max_ttl_ms: int = MAX_TTL_MS) -> int:
    """The ttl (ms) a ``params.task`` asks for: its ``ttl``, or the default; out of bounds: an MCP error."""
    if task_field is None:
        task_field = {}
    if not isinstance(task_field, dict):
        raise MCPError(code=INVALID_PARAMS, message="params.task must be an object such as {\"ttl\": 60000}")
    ttl = task_field.get("ttl")
    if ttl is None:
        return min(DEFAULT_TTL_MS, max_ttl_ms)
    whole = isinstance(ttl, int) and not isinstance(ttl, bool)
    if isinstance(ttl, float) and math.isfinite(ttl) and ttl.is_integer():
        ttl, whole = int(ttl), True
    if not whole or not MIN_TTL_MS <= ttl <= max_ttl_ms:
        shown = repr(ttl)[:40]
        raise MCPError(code=INVALID_PARAMS, message=f"task ttl {shown} must be a whole number of milliseconds from "
                                                    f"{MIN_TTL_MS} to {max_ttl_ms} (this server's longest)")
    return ttl


def iso(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).isoformat(timespec="milliseconds")


class Task:
    """One task: its status, its run's progress, and how it ended (a result, or the call's MCP error)."""

    def __init__(self, owner: str, ttl_ms: int, tool: str, clock: Callable[[], float] = time.time):
        self.id = secrets.token_urlsafe(24)  # 192 random bits: the id is what a caller shows to reach it
        self.owner = owner
        self.tool = tool
        self.ttl_ms = ttl_ms
        self.clock = clock
        self.created_at = self.updated_at = clock()
        self.status = "working"
        self.message = "accepted: the run is starting"
        self.result: dict[str, Any] | None = None  # the CallToolResult a plain call would have returned
        self.error: MCPError | None = None  # or the MCP error it would have raised
        self.fetched_at: float | None = None
        self.ended = anyio.Event()  # terminal (or dropped): tasks/result stops waiting
        self.run: Any = None  # the agent's Run, once it starts
        self.max_iters: int | None = None
        self.thread: int | None = None  # the thread the run works in
        self.run_over = threading.Event()  # the run returned (or never started): nothing left to stop
        self._lock = threading.Lock()

    # ------------------------------------------------------------ the run's side (its thread)
    def attach(self, run: Any, max_iters: int) -> None:
        """The run this task's call started, in the calling thread; a task cancelled already stops it at once."""
        with self._lock:
            self.run, self.max_iters, self.thread = run, max_iters, threading.get_ident()
            cancelled = self.status == "cancelled"
        if cancelled:
            self._stop_run()

    def detach(self) -> None:
        self.run_over.set()

    # ------------------------------------------------------------ the server's side
    @property
    def expires_at(self) -> float:
        return self.created_at + self.ttl_ms / 1000

    @property
    def live(self) -> bool:
        """Counted against the server's limit: its run still goes, or its result waits to be fetched."""
        if not self.run_over.is_set():
            return True
        return self.status != "cancelled" and self.fetched_at is None

    def progress(self) -> str:
        """What the run has done so far, for tasks/get's statusMessage."""
        run = self.run
        if self.status != "working" or run is None:
            return self.message
        steps = list(getattr(run, "steps", ()) or ())
        done = sum(bool(getattr(step, "finished", True)) for step in steps)
        text = f"run {run.id}: {done} of at most {self.max_iters} steps done"
        if len(steps) > done:
            text += f", step {len(steps)} running"
        doing = [t.get("content", "") for t in (getattr(run, "todos", None) or []) if t.get("status") == "in_progress"]
        return text + (f"; working on: {doing[0][:200]}" if doing else "")

    def wire(self) -> dict[str, Any]:
        """The task as the protocol's ``Task`` (camelCase)."""
        return {"taskId": self.id, "status": self.status, "statusMessage": self.progress(),
                "createdAt": iso(self.created_at), "lastUpdatedAt": iso(self.updated_at), "ttl": self.ttl_ms,
                "pollInterval": POLL_INTERVAL_MS}

    def finish(self, result: dict[str, Any] | None = None, error: MCPError | None = None) -> bool:
        """The call returned ``result`` or raised ``error``; True when that changed the status (not cancelled)."""
        with self._lock:
            self.result, self.error = result, error
            if self.status != "working":  # cancelled stays cancelled, whatever the run did after
                return False
            if error is not None:
                self.status, self.message = "failed", error.error.message
            elif result.get("isError"):
                texts = [c.get("text", "") for c in result.get("content") or [] if isinstance(c, dict)]
                self.status, self.message = "failed", (" ".join(texts) or "the tool reported an error")[:1000]
            else:
                self.status, self.message = "completed", ended_message(result)
            self.updated_at = self.clock()
        self.ended.set()
        return True

    def cancel(self, why: str = "cancelled by request") -> None:
        """Cancelled now (terminal, for good); its run is asked to stop and its code is cut short."""
        with self._lock:
            if self.status in TERMINAL:
                raise MCPError(code=INVALID_PARAMS,
                               message=f"Cannot cancel task: already in terminal status '{self.status}'")
            self.status, self.message, self.updated_at = "cancelled", f"The task was {why}.", self.clock()
            started = self.run is not None
        self.ended.set()
        if started:
            self._stop_run()

    def _stop_run(self) -> None:
        """Stop the run: at its next step boundary (it ends ``stopped``), and the code of the step it is in now.

        A thread keeps cutting the run's code short until the run returns, so a step that started after
        the first cut stops too; an LM call in flight is waited for. Sub-agents stop at their next step.
        """
        from ..core.policy.steering import steering_of
        from ..interpreters.time_limit import cut_short

        steering_of(self.run, create=True).request_stop()
        why = f"the run was cancelled (MCP task {self.id[:8]}…)"

        def keep_cutting() -> None:
            while not self.run_over.wait(STOP_EVERY):
                cut_short(self.thread, why)

        cut_short(self.thread, why)
        threading.Thread(target=keep_cutting, name="deepagent-task-stop", daemon=True).start()


def ended_message(result: dict[str, Any]) -> str:
    run = result.get("structuredContent") or {}
    if not isinstance(run, dict) or "status" not in run:
        return "completed"
    return f"run {run.get('id')} ended {run.get('status')} after {run.get('steps')} steps"


class TaskStore:
    """The server's tasks, by id; each visible to its owner only. Used from the server's event loop."""

    def __init__(self, max_live: int = MAX_LIVE, max_ttl_ms: int = MAX_TTL_MS, clock: Callable[[], float] = time.time):
        self.max_live = max_live
        self.max_ttl_ms = max_ttl_ms
        self.clock = clock
        self.tasks: dict[str, Task] = {}

    def create(self, owner: str, ttl_ms: int, tool: str) -> Task:
        self.sweep()
        live = sum(task.live for task in self.tasks.values())
        if live >= self.max_live:
            raise MCPError(code=INVALID_REQUEST, message=f"this server already holds {live} live tasks, its most: "
                                                         "fetch their results or cancel some first")
        task = Task(owner, ttl_ms, tool, clock=self.clock)
        self.tasks[task.id] = task
        return task

    def get(self, owner: str, task_id: Any) -> Task:
        self.sweep()
        task = self.tasks.get(task_id) if isinstance(task_id, str) else None
        if task is None or not secrets.compare_digest(task.owner, owner):
            raise gone(task_id)
        return task

    def owned_by(self, owner: str) -> list[Task]:
        self.sweep()
        return sorted((t for t in self.tasks.values() if secrets.compare_digest(t.owner, owner)),
                      key=lambda t: t.created_at)

    def sweep(self) -> None:
        """Drop the tasks whose ttl passed (cancelling those still working) and those fetched a while ago."""
        now = self.clock()
        for task in list(self.tasks.values()):
            expired = now >= task.expires_at
            if expired or (task.fetched_at is not None and now >= task.fetched_at + FETCHED_GRACE):
                if task.status == "working":
                    task.cancel("cancelled: its ttl passed")
                del self.tasks[task.id]
                task.ended.set()

    def stop_all(self) -> None:
        """The server stops: every working task is cancelled and its run stopped."""
        for task in self.tasks.values():
            if task.status == "working":
                task.cancel("cancelled: the server stopped")
