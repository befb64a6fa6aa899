"""The ACP SDK's own client, driving `deepagent acp` as a subprocess over stdio (shared by the tests in tests/acp)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from pathlib import Path
from typing import Any, AsyncIterator

from acp import PROTOCOL_VERSION, spawn_agent_process
from acp.schema import AllowedOutcome, DeniedOutcome, RequestPermissionResponse

ROOT = Path(__file__).resolve().parents[2]


class Recorder:
    """A client that keeps every update, and answers permission requests with ``answer`` (an option id; None:
    cancelled; a list: one answer each, in order, its last for the rest)."""

    def __init__(self, answer: str | None = "run"):
        self.updates: list[tuple[str, Any]] = []
        self.permissions: list[Any] = []
        self.answer = answer
        self.asked = asyncio.Event()

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))

    async def request_permission(self, options: list[Any], session_id: str, tool_call: Any,
                                 **kwargs: Any) -> RequestPermissionResponse:
        self.permissions.append({"options": options, "tool_call": tool_call})
        self.asked.set()
        answer = self.answer
        if isinstance(answer, list):
            answer = answer.pop(0) if len(answer) > 1 else answer[0]
        if answer is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(option_id=answer, outcome="selected"))

    def on_connect(self, conn: Any) -> None:
        pass

    def kinds(self, session_id: str | None = None) -> list[str]:
        return [update.session_update for sid, update in self.updates if session_id in (None, sid)]

    def of(self, kind: str) -> list[Any]:
        return [update for _, update in self.updates if update.session_update == kind]

    def messages(self) -> str:
        return "".join(update.content.text for update in self.of("agent_message_chunk"))

    def wire(self) -> str:
        """Everything the agent sent, as JSON (what a secret must never be in)."""
        return json.dumps([update.model_dump(mode="json", by_alias=True) for _, update in self.updates])


def script(folder: Path, steps: Any, name: str = "steps.json") -> str:
    path = folder / name
    path.write_text(json.dumps(steps))
    return f"scripted:{path}"


def agent_env(folder: Path, **more: str) -> dict[str, str]:
    environment = {key: value for key, value in os.environ.items() if key != "DEEPAGENT_LM"}
    return environment | {"PYTHONPATH": str(ROOT), "DSPY_CACHEDIR": str(folder / ".dspy_cache"),
                          "LITELLM_LOCAL_MODEL_COST_MAP": "true"} | more


@contextlib.asynccontextmanager
async def agent(client: Recorder, folder: Path, *args: str, env: dict[str, str] | None = None
                ) -> AsyncIterator[tuple[Any, Any]]:
    """`deepagent acp ARGS` started in ``folder``, initialised; yields (connection, process)."""
    async with spawn_agent_process(client, sys.executable, "-m", "deepagent_magics", "acp", *args,
                                   env=env or agent_env(folder), cwd=str(folder)) as (conn, process):
        await asyncio.wait_for(conn.initialize(protocol_version=PROTOCOL_VERSION), 60)
        yield conn, process
