"""The ACP agent: the protocol's requests (``acp.Agent``, served by the SDK's ``run_agent`` over stdio).

``initialize`` says what it takes (text and embedded text resources, ``session/load``);
``session/new`` opens a `sessions.Session` in its place (where the session's code runs: `places`);
``session/prompt`` runs one turn; ``session/cancel`` stops it; ``session/load`` resumes a session from
its records. Every mistake of the client's (an unknown session, a prompt with no text, a block it
cannot read, a folder that is not one) is an ACP error; the agent goes on serving.

Standard output is the protocol's alone: before serving, file descriptor 1 is pointed at stderr
(and the protocol written to a copy of the old one), so nothing a kernel, a sub-agent or a library
prints can break a message.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, RequestError, run_agent, schema

from .places import place_for
from .prompt_text import task_text
from .options import Options
from .sessions import SESSION_ID, Session


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("deepagent-magics")
    except PackageNotFoundError:
        return "unknown"


def new_session_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:8]


class DeepAgentACP:
    """The agent side of ACP, over `sessions.Session`s (one per ``session/new`` or ``session/load``)."""

    def __init__(self, options: Options, environ: dict[str, str] | None = None):
        self.options = options
        self.environ = dict(os.environ if environ is None else environ)
        self.sessions: dict[str, Session] = {}
        self.conn: Any = None

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None,
                         **kwargs: Any) -> schema.InitializeResponse:
        capabilities = schema.AgentCapabilities(load_session=True,
                                                prompt_capabilities=schema.PromptCapabilities(embedded_context=True))
        return schema.InitializeResponse(protocol_version=PROTOCOL_VERSION, agent_capabilities=capabilities,
                                         agent_info=schema.Implementation(name="deepagent", title="Deep Agent",
                                                                          version=_version()))

    async def authenticate(self, method_id: str, **kwargs: Any) -> None:
        return None  # nothing to sign in to: the model's keys are this process's environment

    async def new_session(self, cwd: str, mcp_servers: Any = None, **kwargs: Any) -> schema.NewSessionResponse:
        session = await self._open(new_session_id(), cwd, kwargs.get("deepagent"))
        self.sessions[session.id] = session
        return schema.NewSessionResponse(session_id=session.id)

    async def load_session(self, cwd: str, session_id: str, mcp_servers: Any = None,
                           **kwargs: Any) -> schema.LoadSessionResponse:
        if not SESSION_ID.fullmatch(session_id or ""):
            raise RequestError.invalid_params({"message": f"{session_id!r} is not a session id of this agent"})
        if session_id in self.sessions:
            raise RequestError.invalid_params({"message": f"session {session_id} is open already"})
        session = await self._open(session_id, cwd, kwargs.get("deepagent"))
        try:
            await session.load()
        except BaseException:
            await session.close()
            raise
        self.sessions[session.id] = session
        return schema.LoadSessionResponse()

    async def _open(self, session_id: str, cwd: str, meta: Any) -> Session:
        folder = Path(cwd or "")
        if not folder.is_absolute() or not folder.is_dir():
            raise RequestError.invalid_params({"message": f"cwd {cwd!r} is not an absolute path to a folder"})
        workspace = (self.options.workspace or folder).resolve()
        place = await place_for(folder.resolve(), workspace, self.options, meta, self.environ)

        async def send(update: Any) -> None:
            await self.conn.session_update(session_id=session_id, update=update)

        return Session(session_id, workspace, place, self.options, send, self.conn)

    def _session(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is None:
            raise RequestError.invalid_params({"message": f"no session {session_id!r}: start one with session/new "
                                                          "(or session/load)"})
        return session

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> schema.PromptResponse:
        session = self._session(session_id)
        return await session.prompt(task_text(prompt))

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        session = self.sessions.get(session_id)
        if session is not None:
            await session.cancel()

    async def close(self) -> None:
        """Every session's place closed: no kernel outlives the agent."""
        sessions, self.sessions = list(self.sessions.values()), {}
        for session in sessions:
            with contextlib.suppress(Exception):
                await session.close()


async def _protocol_streams() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """stdin, and a copy of stdout, as the protocol's streams; fd 1 then goes to stderr."""
    loop = asyncio.get_running_loop()
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    reader = asyncio.StreamReader(limit=50 * 1024 * 1024)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, out)
    return reader, asyncio.StreamWriter(transport, protocol, reader, loop)


async def serve(options: Options) -> None:
    """Speak ACP on stdin/stdout until the client closes it (or SIGTERM); then close every session."""
    agent = DeepAgentACP(options)
    reader, writer = await _protocol_streams()
    task = asyncio.current_task()
    loop = asyncio.get_running_loop()
    for number in (signal.SIGTERM, signal.SIGHUP):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(number, task.cancel)
    try:
        await run_agent(agent, writer, reader)
    except asyncio.CancelledError:
        pass
    finally:
        await agent.close()
