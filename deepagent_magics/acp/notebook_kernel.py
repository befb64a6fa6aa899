"""Where a chat's session runs inside Jupyter Server: the live kernel of the notebook it belongs to.

The session reaches the server that started it (its URL, token and root in the environment the
persona gives its subprocess, `ServerAccess`) and runs each prompt through the run API
(``POST /deepagent/api/runs`` with the notebook's ``kernel_id``): the same ``%%deepagent`` cell a user
would type, in the notebook's kernel, so the variables the agent makes are that notebook's and the
run keeps the same record. The notebook's kernel is the one of its session on the server (the one
JupyterLab shows); a notebook not open yet gets a session, as opening it would, and JupyterLab then
opens it on that kernel. The run's events come from the run API's feed (Server-Sent Events); an
approval is answered with ``POST runs/{id}/answer``; a cancel is ``POST runs/{id}/stop``. The
notebook's kernel is never shut down by the session.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest

from ..core.run.event_kinds import APPROVAL_ASKED
from ..settings import SERVER, at
from .own_kernel import Poll

API = "deepagent/api/runs"
URL, TOKEN, ROOT = "DEEPAGENT_JUPYTER_URL", "DEEPAGENT_JUPYTER_TOKEN", "DEEPAGENT_JUPYTER_ROOT"
PASSED = {s.name: s for s in at(SERVER)}  # the settings the run API hands on to the cell
STOP_TRIES = 50  # looks, 0.1 s apart, for a cell the kernel has not begun yet when the user cancels


@dataclass(frozen=True)
class ServerAccess:
    """The Jupyter Server a session runs in: its URL, its token (never sent over ACP) and its root folder."""

    url: str
    token: str
    root: Path

    @classmethod
    def from_env(cls, environ: dict[str, str]) -> "ServerAccess | None":
        if not environ.get(URL) or not environ.get(ROOT):
            return None
        return cls(environ[URL].rstrip("/") + "/", environ.get(TOKEN, ""), Path(environ[ROOT]).resolve())

    async def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        request = HTTPRequest(self.url + path, method=method, headers=self._headers(),
                              body=json.dumps(body) if body is not None else (b"" if method == "POST" else None),
                              request_timeout=60)
        try:
            response = await AsyncHTTPClient().fetch(request)
            code, text = response.code, response.body
        except HTTPClientError as exc:
            code, text = exc.code, exc.response.body if exc.response is not None else b""
        try:
            return code, json.loads(text or b"null")
        except ValueError:
            return code, None

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"token {self.token}", "Content-Type": "application/json"} if self.token else {}


def notebook_for(cwd: Path, meta: Any, root: Path) -> Path | None:
    """The notebook a chat belongs to: the one its ``_meta`` names (``notebook``, or ``chat``: ``X.chat`` is
    ``X.ipynb``'s, beside it), else the only notebook in its folder; None when there is none inside the root."""
    meta = meta if isinstance(meta, dict) else {}
    candidates = []
    if isinstance(meta.get("notebook"), str):
        candidates.append(root / meta["notebook"])
    if isinstance(meta.get("chat"), str):
        candidates.append((root / meta["chat"]).with_suffix(".ipynb"))
    if not candidates:
        found = sorted(cwd.glob("*.ipynb"))
        candidates = found if len(found) == 1 else []
    for path in candidates:
        path = path.resolve()
        if (root == path.parent or root in path.parents) and path.suffix == ".ipynb" and path.is_file():
            return path
    return None


class NotebookKernel:
    """The live kernel of ``notebook`` on the Jupyter Server ``server``, reached through its run API."""

    def __init__(self, server: ServerAccess, notebook: Path, workspace: Path):
        self.server, self.notebook, self.workspace = server, notebook, workspace
        self.relative = notebook.relative_to(server.root).as_posix()
        self.run_id: str | None = None
        self.events: asyncio.Queue = asyncio.Queue()
        self.feed: asyncio.Task | None = None
        self.ended_error: str | None = None

    def where(self) -> str:
        return (f"I work in the live kernel of `{self.relative}`: the variables I make are that notebook's, as if a "
                f"cell had made them, and files and run records stay in `{self.workspace}`.")

    async def _kernel_id(self) -> str:
        code, sessions = await self.server.call("GET", "api/sessions")
        for session in sessions if code == 200 and isinstance(sessions, list) else []:
            if session.get("path") == self.relative and session.get("kernel"):
                return session["kernel"]["id"]
        code, session = await self.server.call("POST", "api/sessions", {
            "path": self.relative, "type": "notebook", "name": self.notebook.name, "kernel": {"name": "python3"}})
        if code not in (200, 201) or not isinstance(session, dict):
            raise RuntimeError(f"the server would not start a kernel for {self.relative} ({code})")
        return session["kernel"]["id"]

    async def start(self, run_id: str, task: str, flags: dict[str, Any], continues: str | None) -> None:
        body = {"task": task, "kernel_id": await self._kernel_id(), "workspace": str(self.workspace),
                "run_id": run_id, "continue": continues or False, "door": "notebook"}
        body.update({name: value for name, value in flags.items()  # a default is left to the notebook's own config
                     if name in PASSED and value is not None and value != PASSED[name].default})
        code, reply = await self.server.call("POST", API, body)
        if code != 201:
            raise RuntimeError(f"the run API refused the run ({code}): {(reply or {}).get('message', '')}")
        self.run_id, self.ended_error, self.events = run_id, None, asyncio.Queue()
        self.feed = asyncio.ensure_future(self._follow(run_id))

    async def _follow(self, run_id: str) -> None:
        """The run's Server-Sent Events, each into `events`, until the feed ends."""
        block: list[str] = []
        pending = b""

        def on_chunk(chunk: bytes) -> None:
            nonlocal pending
            pending += chunk
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                text = line.decode("utf-8", "replace")
                if text:
                    block.append(text)
                    continue
                fields = dict(item.split(": ", 1) for item in block if ": " in item and not item.startswith(":"))
                block.clear()
                if "data" in fields:
                    self.events.put_nowait((fields.get("event"), json.loads(fields["data"])))

        request = HTTPRequest(f"{self.server.url}{API}/{quote(run_id)}/events", headers=self.server._headers(),
                              streaming_callback=on_chunk, request_timeout=0, connect_timeout=60)
        try:
            await AsyncHTTPClient(force_instance=True).fetch(request)
        except Exception as exc:  # the server went away: the turn ends saying so
            self.ended_error = f"the run API's feed broke: {exc}"

    async def poll(self) -> Poll:
        poll = Poll()
        while not self.events.empty():
            name, data = self.events.get_nowait()
            if name == "ended_mid_run":
                self.ended_error = str(data.get("reason") or "the run ended mid-run")
                continue
            poll.events.append(data)
            if data.get("kind") == APPROVAL_ASKED:
                poll.question = "approval"  # the run waits on the user: the session asks and `answer`s
        if self.feed is not None and self.feed.done() and self.events.empty():
            poll.ended, poll.error = True, self.ended_error
        return poll

    async def answer(self, text: str) -> None:
        await self.server.call("POST", f"{API}/{quote(self.run_id or '')}/answer", {"answer": text})

    async def stop(self) -> None:
        for _ in range(STOP_TRIES):  # 409 while the kernel has not begun the cell: it may be busy a moment
            code, _ = await self.server.call("POST", f"{API}/{quote(self.run_id or '')}/stop")
            if code != 409 or (self.feed is not None and self.feed.done()):
                return
            await asyncio.sleep(0.1)

    async def close(self) -> None:
        if self.feed is not None and not self.feed.done():
            self.feed.cancel()
