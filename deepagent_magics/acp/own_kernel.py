"""Where a session with no notebook runs: a kernel of its own, in the session's folder.

An editor (or any ACP client outside Jupyter) has no notebook to run in, so each session starts
a Python kernel (``jupyter_client``) in its ``cwd`` and runs each prompt there as a ``%%deepagent``
cell, exactly as the run API runs one in a server's kernel (`server.launch.cell_code`): the run's REPL
is that kernel's namespace (the next prompt sees the variables the last made), its record and event
log go to the workspace. The cell is sent with stdin allowed, so an approval is an ``input_request``
the session answers for the user. A cancel interrupts the kernel (the run ends ``interrupted`` and
its sub-agents' kernels are stopped); a kernel that does not end the cell soon after is shut down, so
nothing is left behind. The kernel ends with the session (`close`), and with this process however it
ends (SIGKILL included): the host's keeper (`interpreters.pool.keeper`, a process of its own that sees
the host die) kills the kernel and every process below it, whatever signals their code ignores. The
keeper does it, not ipykernel's own parent poller (switched off, `NO_PARENT_POLL`): that one ends only
the kernel, a second or so later, and once it has, the processes the kernel started are orphans the
keeper can no longer find.
"""

from __future__ import annotations

import asyncio
import os
import queue
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_client.manager import AsyncKernelManager

from ..interpreters.pool import keeper
from ..records.events import LogTail, events_path
from ..server.launch import cell_code
from .options import CELL_FLAGS

READY = 120.0  # seconds a new kernel may take to answer
SERVER_ACCESS = "DEEPAGENT_JUPYTER_"  # the Jupyter Server's URL, token and root (notebook_kernel.ServerAccess)
STOP_GRACE = 30.0  # seconds after an interrupt before a kernel still running the cell is shut down (stuck in C code)
NO_PARENT_POLL = "--IPKernelApp.parent_handle=1"  # ipykernel polls no parent of pid 1 (0 prints to stdout)


@dataclass
class Poll:
    """What happened since the last look: new events, a question asked, and whether the cell ended."""

    events: list[dict[str, Any]] = field(default_factory=list)
    question: str | None = None  # an input_request's prompt: the run asks the user
    ended: bool = False  # the cell's reply came and the log is read to its end (or has none)
    error: str | None = None  # the cell failed: the run never started, or ended in an exception


class OwnKernel:
    """A kernel of the session's own in ``cwd``; ``setup`` is code run once when it starts (the LM)."""

    def __init__(self, cwd: Path, workspace: Path, setup: str = ""):
        self.cwd, self.workspace = cwd, workspace
        self.setup = setup
        self.manager: AsyncKernelManager | None = None
        self.client: Any = None
        self.msg_id: str | None = None
        self.tail: LogTail | None = None
        self.reply: dict[str, Any] | None = None

    def where(self) -> str:
        return (f"I work in a Python kernel of my own in `{self.cwd}`, started for this conversation (no notebook "
                "is attached: the variables I make last as long as this session); files and run records stay "
                "in that folder.")

    async def _ready(self) -> None:
        if self.manager is not None and await self.manager.is_alive():
            return
        await self.close()
        manager = AsyncKernelManager()
        env = {name: value for name, value in os.environ.items() if not name.startswith(SERVER_ACCESS)}
        await manager.start_kernel(cwd=str(self.cwd), env=env,  # the server's token is not the agent's
                                   extra_arguments=[NO_PARENT_POLL])
        self.manager, self.client = manager, manager.client()
        keeper.watch(getattr(manager.provisioner, "pid", None), getattr(manager.provisioner, "pgid", None))
        self.client.start_channels()
        await self.client.wait_for_ready(timeout=READY)
        if self.setup:
            reply = await self.client.execute_interactive(self.setup, silent=True, store_history=False,
                                                          allow_stdin=False, timeout=READY)
            content = reply.get("content", {})
            if content.get("status") != "ok":
                raise RuntimeError(f"the kernel could not be set up: {content.get('ename')}: {content.get('evalue')}")

    async def start(self, run_id: str, task: str, flags: dict[str, Any], continues: str | None) -> None:
        """Send the prompt's cell: ``flags`` the settings' values, ``continues`` the run it follows (None: new)."""
        await self._ready()
        more = ("--door", "acp") + (("--continue", continues) if continues else ("--new",))
        code = cell_code(run_id, task, self.workspace, flags, CELL_FLAGS, more)
        self.tail, self.reply = LogTail(events_path(self.workspace, run_id)), None
        if self.tail.path.exists():  # a log before its run began was planted: only what the run appends is read
            self.tail.offset = self.tail.path.stat().st_size
        self.msg_id = self.client.execute(code, store_history=False, allow_stdin=True)

    async def poll(self) -> Poll:
        poll = Poll()
        client = self.client
        try:
            if client is None:
                raise ConnectionError("no kernel")
            poll.question = await self._question(client)
            if self.reply is None:
                self.reply = await self._reply(client) or self.reply  # (a cancel may have taken the reply meanwhile)
        except Exception:  # shut down after a cancel it did not heed (while we looked): the cell is over
            if self.client is client and client is not None:
                raise
            poll.events, poll.ended, poll.error = (self.tail.read() if self.tail else []), True, "the kernel was shut down"
            return poll
        poll.events = self.tail.read() if self.tail is not None else []
        if self.reply is not None:
            poll.events += self.tail.read() if self.tail is not None else []
            content = self.reply.get("content", {})
            if content.get("status") != "ok":
                poll.error = f"{content.get('ename', 'Error')}: {content.get('evalue', '')}".strip()
            poll.ended = True
        return poll

    async def _question(self, client: Any) -> str | None:
        try:
            message = await client.get_stdin_msg(timeout=0)
        except (queue.Empty, asyncio.TimeoutError):
            return None
        if message.get("msg_type") == "input_request":
            return str(message.get("content", {}).get("prompt", ""))
        return None

    async def _reply(self, client: Any) -> dict[str, Any] | None:
        while True:
            try:
                message = await client.get_shell_msg(timeout=0)
            except (queue.Empty, asyncio.TimeoutError):
                return None
            if message.get("parent_header", {}).get("msg_id") == self.msg_id:
                return message

    async def answer(self, text: str) -> None:
        self.client.input(text)

    async def stop(self) -> None:
        """Interrupt the cell; shut the kernel down if it has not ended the cell `STOP_GRACE` seconds later."""
        if self.manager is None or self.reply is not None:
            return
        await self.manager.interrupt_kernel()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + STOP_GRACE
        while loop.time() < deadline:
            self.reply = await self._reply(self.client) or self.reply
            if self.reply is not None:
                return
            await asyncio.sleep(0.05)
        await self.close()  # the next prompt starts a new kernel and continues the conversation from its record

    async def close(self) -> None:
        """Shut the kernel down, asking first (its exit stops the sub-agent kernels it started; a kernel that
        does not end within jupyter_client's wait is killed)."""
        manager, client, self.manager, self.client = self.manager, self.client, None, None
        if client is not None:
            client.stop_channels()
        if manager is not None:
            pid = getattr(manager.provisioner, "pid", None)
            try:
                await manager.shutdown_kernel(now=False)
            except Exception:  # already gone
                pass
            keeper.forget(pid)
