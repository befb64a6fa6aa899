"""MCP Tasks on the wire (protocol revision 2025-11-25): the SDK's hooks carry our handlers.

The MCP SDK (2.3) has the task messages as types but serves none of them, and the 2026-07-28
revision moved tasks out of the core into an extension the SDK does not ship either. So, on a
connection that negotiated 2025-11-25 (the initialize handshake):

- a middleware (the SDK's ``Server.middleware``) adds the ``tasks`` capability to the initialize
  result, marks the tools in `TASK_TOOLS` ``execution.taskSupport: "optional"`` in ``tools/list``, and
  answers a ``tools/call`` carrying ``params.task`` at once with a ``CreateTaskResult``, running the
  call itself (the same handler chain as a plain call, so the same result) in the server's task group;
- ``tasks/get``, ``tasks/result``, ``tasks/cancel``, ``tasks/list`` are request handlers registered on
  the SDK's low-level server;
- ``notifications/tasks/status`` goes to the connection that made the task when it ends.

Other revisions see none of it: a ``task`` field there is ignored (a plain call), ``tasks/*`` is
"method not found". The bookkeeping (owners, expiry, limits, stopping a run) is `tasks`.
"""

from __future__ import annotations

import contextvars
import hashlib
import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any

import anyio
import anyio.abc
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError
from mcp_types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    CallToolRequestParams,
    CancelTaskRequestParams,
    GetTaskPayloadRequestParams,
    GetTaskRequestParams,
    PaginatedRequestParams,
    TaskStatusNotification,
    TaskStatusNotificationParams,
)

from .tasks import MAX_LIVE, MAX_TTL_MS, Task, TaskStore, gone, requested_ttl

TASKS_VERSION = "2025-11-25"  # the one revision whose core has tasks
TASK_TOOLS = frozenset({"run_task"})  # the tools that can take long; list_runs and get_run answer at once
RELATED = "io.modelcontextprotocol/related-task"
IMMEDIATE = "io.modelcontextprotocol/model-immediate-response"
PAGE = 50  # tasks per tasks/list page
CAPABILITY = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}

CURRENT_TASK: contextvars.ContextVar[Task | None] = contextvars.ContextVar("deepagent_mcp_task", default=None)
"""The task a tool call runs as (None: a plain call); ``run_task`` reads it to attach its run."""

log = logging.getLogger(__name__)


def negotiated_tasks(ctx: Any) -> bool:
    """This connection did the initialize handshake at the revision that has tasks."""
    return ctx.session.client_params is not None and ctx.protocol_version == TASKS_VERSION


def owner_of(ctx: Any) -> str:
    """Whose task: over HTTP the bearer token (hashed; a task is visible only to the token that made it),
    over stdio the one peer that started the server."""
    request = getattr(ctx, "request", None)
    headers = getattr(request, "headers", None)
    if headers is None:
        return "stdio"
    return "token:" + hashlib.sha256(headers.get("authorization", "").encode()).hexdigest()


class McpTasks:
    """Tasks for one server: install with `install`; the server's lifespan runs them (`lifespan`)."""

    def __init__(self, max_live: int = MAX_LIVE, max_ttl_ms: int = MAX_TTL_MS):
        self.store = TaskStore(max_live=max_live, max_ttl_ms=max_ttl_ms)
        self.group: anyio.abc.TaskGroup | None = None

    def install(self, app: MCPServer) -> None:
        app.middleware.append(self.middleware)
        lowlevel = app._lowlevel_server  # the SDK's request-handler registry (MCPServer exposes no add_request_handler)
        lowlevel.add_request_handler("tasks/get", GetTaskRequestParams, self.get)
        lowlevel.add_request_handler("tasks/result", GetTaskPayloadRequestParams, self.result)
        lowlevel.add_request_handler("tasks/cancel", CancelTaskRequestParams, self.cancel)
        lowlevel.add_request_handler("tasks/list", PaginatedRequestParams, self.list)

    @asynccontextmanager
    async def lifespan(self, _app: Any) -> AsyncIterator[dict[str, Any]]:
        """The server's life: tasks run in its task group, expired ones are swept each second, and when
        the server stops every working task is cancelled and its run waited for (no run outlives it)."""
        async with anyio.create_task_group() as group:
            self.group = group
            group.start_soon(self._sweep)
            try:
                yield {}
            finally:
                self.store.stop_all()
                group.cancel_scope.cancel()  # the calls' threads are waited for: each run has been stopped
                self.group = None

    async def _sweep(self) -> None:
        while True:
            self.store.sweep()
            await anyio.sleep(1)

    # ------------------------------------------------------------ the middleware
    async def middleware(self, ctx: Any, call_next: Any) -> Any:
        if ctx.method == "tools/call" and isinstance(ctx.params, Mapping) and ctx.params.get("task") is not None \
                and negotiated_tasks(ctx):
            return await self.create(ctx, call_next)
        result = await call_next(ctx)
        if ctx.method == "initialize" and isinstance(result, dict) and result.get("protocolVersion") == TASKS_VERSION:
            result.setdefault("capabilities", {})["tasks"] = CAPABILITY
        elif ctx.method == "tools/list" and ctx.protocol_version == TASKS_VERSION and isinstance(result, dict):
            for tool in result.get("tools") or []:
                if tool.get("name") in TASK_TOOLS:
                    tool["execution"] = {"taskSupport": "optional"}
        return result

    async def create(self, ctx: Any, call_next: Any) -> dict[str, Any]:
        """A task-augmented tools/call: the task now (``working``), the call in the background."""
        params = dict(ctx.params)
        ttl = requested_ttl(params.pop("task"), self.store.max_ttl_ms)
        try:
            name = CallToolRequestParams.model_validate(params, by_name=False).name
        except ValidationError:
            raise MCPError(code=INVALID_PARAMS, message="Invalid request parameters: tools/call needs a tool "
                                                        "name and arguments as an object") from None
        if name not in TASK_TOOLS:
            raise MCPError(code=METHOD_NOT_FOUND, message=f"tool {str(name)[:80]!r} does not run as a task here; "
                                                          f"call it plainly (tasks: {', '.join(sorted(TASK_TOOLS))})")
        if self.group is None:
            raise MCPError(code=INTERNAL_ERROR, message="this server is stopping: no new tasks")
        task = self.store.create(owner_of(ctx), ttl, name)
        log.info("task %s… created for %s by %s (ttl %d ms)", task.id[:8], name, task.owner[:14], ttl)
        self.group.start_soon(self._work, task, replace(ctx, params=params), call_next)
        return {"task": task.wire(), "_meta": {IMMEDIATE: (
            f"The deep agent is working on it as MCP task {task.id}; poll tasks/get, fetch tasks/result.")}}

    async def _work(self, task: Task, ctx: Any, call_next: Any) -> None:
        token = CURRENT_TASK.set(task)
        try:
            changed = task.finish(result=await call_next(ctx))
        except MCPError as exc:
            changed = task.finish(error=exc)
        except Exception:  # a bug behind the tool: logged here, the client told only that the task failed
            log.exception("task %s… failed", task.id[:8])
            changed = task.finish(error=MCPError(code=INTERNAL_ERROR, message="Internal error"))
        finally:
            CURRENT_TASK.reset(token)
            task.detach()  # the call returned: its run (if it had one) has ended
        log.info("task %s… ended %s", task.id[:8], task.status)
        if changed:
            await self._notify(ctx, task)

    async def _notify(self, ctx: Any, task: Task) -> None:
        """``notifications/tasks/status`` to the connection that made the task, if it is still there."""
        with anyio.move_on_after(5):
            try:
                await ctx.session.send_notification(TaskStatusNotification(
                    params=TaskStatusNotificationParams.model_validate(task.wire())))
            except Exception as exc:  # gone (a dropped HTTP session, a closed stdio): it polls instead
                log.debug("task %s… status not sent: %s", task.id[:8], exc)

    # ------------------------------------------------------------ the handlers
    def _task(self, ctx: Any, task_id: Any) -> Task:
        if not negotiated_tasks(ctx):
            raise MCPError(code=METHOD_NOT_FOUND, message="Method not found", data=ctx.method)
        return self.store.get(owner_of(ctx), task_id)

    async def get(self, ctx: Any, params: GetTaskRequestParams) -> dict[str, Any]:
        return self._task(ctx, params.task_id).wire()

    async def result(self, ctx: Any, params: GetTaskPayloadRequestParams) -> dict[str, Any]:
        """What the call would have returned, once the task has ended (waits until then)."""
        task = self._task(ctx, params.task_id)
        await task.ended.wait()
        if task.status == "cancelled":
            raise MCPError(code=INVALID_PARAMS, message=f"task {task.id!r} was cancelled: it has no result")
        if task.result is None and task.error is None:  # dropped (expired) while we waited
            raise gone(task.id)
        task.fetched_at = task.fetched_at or task.clock()
        if task.error is not None:
            raise task.error
        result = dict(task.result)
        result["_meta"] = {**(result.get("_meta") or {}), RELATED: {"taskId": task.id}}
        return result

    async def cancel(self, ctx: Any, params: CancelTaskRequestParams) -> dict[str, Any]:
        task = self._task(ctx, params.task_id)
        task.cancel()
        log.info("task %s… cancelled", task.id[:8])
        return task.wire()

    async def list(self, ctx: Any, params: PaginatedRequestParams) -> dict[str, Any]:
        if not negotiated_tasks(ctx):
            raise MCPError(code=METHOD_NOT_FOUND, message="Method not found", data=ctx.method)
        tasks = self.store.owned_by(owner_of(ctx))
        start = 0
        if params.cursor is not None:
            ids = [task.id for task in tasks]
            if params.cursor not in ids:
                raise MCPError(code=INVALID_PARAMS, message="tasks/list: unknown cursor (the task it named is gone)")
            start = ids.index(params.cursor)
        page = tasks[start:start + PAGE]
        more = tasks[start + PAGE:start + PAGE + 1]
        return {"tasks": [task.wire() for task in page], **({"nextCursor": more[0].id} if more else {})}
