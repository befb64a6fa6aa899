"""The MCP SDK's own client, speaking MCP Tasks (2025-11-25) to our server: its transports, its JSON-RPC
dispatcher and its `ClientSession` (initialize handshake, typed ``tasks/*`` requests and results).

The SDK 2.3 client has no task helper: its ``call_tool`` checks a ``tools/call`` answer against
``CallToolResult``, so the task-augmented call goes through the same session's dispatcher
(`JSONRPCDispatcher.send_raw_request`) and its answer is checked as the SDK's ``CreateTaskResult``.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import Any

import mcp_types as types
from mcp.client.extension import NotificationBinding
from mcp.client.session import ClientSession
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher


class TaskClient:
    def __init__(self, session: ClientSession, dispatcher: JSONRPCDispatcher, statuses: list):
        self.session = session
        self.dispatcher = dispatcher
        self.statuses = statuses  # notifications/tasks/status received, in order
        self.initialized: types.InitializeResult | None = None

    async def call_as_task(self, name: str, arguments: dict[str, Any], task: Any = None) -> types.CreateTaskResult:
        params = {"name": name, "arguments": arguments, "task": {"ttl": 60_000} if task is None else task}
        raw = await self.dispatcher.send_raw_request("tools/call", params, {"timeout": 60})
        return types.CreateTaskResult.model_validate(raw, by_name=False)

    async def raw(self, method: str, params: Any) -> dict[str, Any]:
        return await self.dispatcher.send_raw_request(method, params, {"timeout": 60})

    async def get(self, task_id: str) -> types.GetTaskResult:
        return await self.session.send_request(
            types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=task_id)), types.GetTaskResult)

    async def result(self, task_id: str, timeout: float = 120) -> types.CallToolResult:
        return await self.session.send_request(
            types.GetTaskPayloadRequest(params=types.GetTaskPayloadRequestParams(task_id=task_id)),
            types.CallToolResult, request_read_timeout_seconds=timeout)

    async def cancel(self, task_id: str) -> types.CancelTaskResult:
        return await self.session.send_request(
            types.CancelTaskRequest(params=types.CancelTaskRequestParams(task_id=task_id)), types.CancelTaskResult)

    async def list(self, cursor: str | None = None) -> types.ListTasksResult:
        params = types.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
        return await self.session.send_request(types.ListTasksRequest(params=params), types.ListTasksResult)


@asynccontextmanager
async def task_client(transport):
    """A `TaskClient` over ``transport`` (``stdio_client(...)`` or ``streamable_http_client(...)``), initialized."""
    statuses: list[types.TaskStatusNotificationParams] = []

    async def seen(params: types.TaskStatusNotificationParams) -> None:
        statuses.append(params)

    async with transport as (read, write):
        dispatcher = JSONRPCDispatcher(read, write)
        binding = NotificationBinding(method="notifications/tasks/status", params_type=types.TaskStatusNotificationParams,
                                      handler=seen)
        async with ClientSession(dispatcher=dispatcher, notification_bindings=[binding]) as session:
            client = TaskClient(session, dispatcher, statuses)
            client.initialized = await session.initialize()
            yield client
