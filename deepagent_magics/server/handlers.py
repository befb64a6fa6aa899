"""The run API's handlers, under ``/deepagent/api/``: list, read, follow, start and stop runs.

Every handler is a Jupyter Server `APIHandler` behind the server's own authentication
(``@web.authenticated``: no valid token, 403) and authorizer (``@authorized`` on the
``deepagent`` resource). Workspaces are folders under the server's root: a path outside
it is refused (403). Errors are JSON ``{"message": ...}`` with 400, 403, 404 or 409.

A browser is a caller too. The handlers keep Jupyter Server's checks for a request its login
cookie authenticates (the ``_xsrf`` token on anything that changes state, an ``Origin`` of the
server's own, a ``Host`` of the loopback's); only the explicit token skips them. That token goes
in a header: in a URL (``?token=``) it would stay in histories, proxies' logs and ``Referer``
headers, so such a request is refused (400) before it is read.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from pathlib import Path
from typing import Any

import nbformat
from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from tornado import web
from tornado.iostream import StreamClosedError

from ..records import LogTail, events_path, list_records, load_record, runs_dir
from ..records.export import to_notebook
from .launch import RUN_ID, Launch, Launcher, RequestError, check_body

KEEPALIVE = 15.0  # seconds between SSE comments while a run is quiet
QUIET_KERNEL = 5.0  # a run's log quiet this long while its kernel is not busy: the kernel died or restarted
IDLE_END = 30.0  # a log that has not grown this long, of a run no live kernel of ours is running, ended mid-run


class RunsAPIHandler(APIHandler):
    auth_resource = "deepagent"

    async def prepare(self) -> None:
        if "token" in self.request.query_arguments:
            raise web.HTTPError(400, "send the server's token in a header ('Authorization: token ...'), "
                                     "not in the URL")
        await super().prepare()

    def _request_summary(self) -> str:
        """Tornado's summary of the request in its log lines (an error's too), without the query string."""
        query = "?..." if self.request.query else ""
        return f"{self.request.method} {self.request.path}{query} ({self.request.remote_ip})"

    @property
    def launcher(self) -> Launcher:
        return self.settings["deepagent_launcher"]

    @property
    def root(self) -> Path:
        return Path(self.settings["server_root_dir"]).expanduser().resolve()

    def fail(self, status: int, message: str) -> None:
        raise web.HTTPError(status, message.replace("%", "%%"))

    def workspace(self, value: str | None) -> Path:
        """``value`` as a folder under the server's root (relative to it, or absolute inside it)."""
        if value is None or value == "":
            return self.root
        if "\x00" in value:
            self.fail(400, "the workspace path holds a NUL byte")
        path = Path(value).expanduser()
        path = (path if path.is_absolute() else self.root / path).resolve()
        if path != self.root and self.root not in path.parents:
            self.fail(403, f"workspace {value!r} is outside the server's root")
        return path

    def workspaces(self) -> list[Path]:
        asked = self.get_query_argument("workspace", None)
        if asked is not None:
            return [self.workspace(asked)]
        seen = [self.root] + [launch.workspace for launch in self.launcher.launches.values()]
        return list(dict.fromkeys(seen))

    def find(self, run_id: str) -> tuple[dict[str, Any] | None, Launch | None, Path]:
        """The run's record (None if none yet), its launch (None if not started here), its workspace."""
        if not re.fullmatch(RUN_ID, run_id):
            self.fail(404, f"no run {run_id!r}")
        launch = self.launcher.launches.get(run_id)
        places = [launch.workspace] if launch else self.workspaces()
        for workspace in places:
            path = runs_dir(workspace) / f"{run_id}.json"
            if path.is_file():
                try:
                    record = load_record(path)
                except (OSError, ValueError):
                    continue
                record.pop("_path", None)
                record["workspace"] = str(workspace)
                if launch:
                    record["kernel_id"] = launch.kernel_id
                    record["asking"] = launch.asking
                return record, launch, workspace
        if launch is None:
            self.fail(404, f"no run {run_id!r}")
        return None, launch, launch.workspace

    def body(self) -> Any:
        try:
            return json.loads(self.request.body or b"")
        except ValueError as exc:
            self.fail(400, f"the body is not valid JSON: {exc}")


def summary(record: dict[str, Any]) -> dict[str, Any]:
    keys = ("id", "task", "status", "error", "started_at", "ended_at", "elapsed", "workspace", "kernel_id",
            "usage_total", "result", "extracted", "created_at")
    out = {key: record[key] for key in keys if key in record}
    out["steps"] = len(record.get("steps") or [])
    return out


class RunsHandler(RunsAPIHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        """Runs, newest first: ``?status=``, ``?workspace=``, ``?q=`` (text in the task), ``?limit=``."""
        status = self.get_query_argument("status", None)
        text = (self.get_query_argument("q", None) or "").lower()
        try:
            limit = int(self.get_query_argument("limit", "100"))
        except ValueError:
            self.fail(400, "limit must be a whole number")
        runs = {}
        for workspace in self.workspaces():
            for record in list_records([workspace]):
                record["workspace"] = str(workspace)
                runs[record["id"]] = record
        for launch in self.launcher.launches.values():
            if launch.id in runs:
                runs[launch.id]["kernel_id"] = launch.kernel_id
            elif launch.workspace in self.workspaces():
                runs[launch.id] = launch.stub()
        rows = [summary(r) for r in runs.values()
                if (status is None or r.get("status") == status) and text in str(r.get("task", "")).lower()]
        rows.sort(key=lambda r: r.get("started_at") or r.get("created_at") or 0, reverse=True)
        self.finish({"runs": rows[: max(limit, 0)]})

    @web.authenticated
    @authorized
    async def post(self) -> None:
        """Start a run: ``{task, kernel_id?, kernel_name?, workspace?, lm?, max_iters?, ...}``; 201 at once."""
        try:
            body = check_body(self.body())
            workspace = self.workspace(body.get("workspace"))
            launch = await self.launcher.start(body, workspace)
        except RequestError as exc:
            self.fail(exc.status, str(exc))
        self.set_status(201)
        self.set_header("Location", self.request.path.rstrip("/") + "/" + launch.id)
        self.finish({"id": launch.id, "kernel_id": launch.kernel_id, "workspace": str(workspace),
                     "status": "pending"})


class RunHandler(RunsAPIHandler):
    @web.authenticated
    @authorized
    async def get(self, run_id: str) -> None:
        record, launch, _ = self.find(run_id)
        self.finish(record if record is not None else launch.stub())


class StopHandler(RunsAPIHandler):
    @web.authenticated
    @authorized
    async def post(self, run_id: str) -> None:
        record, launch, _ = self.find(run_id)
        if launch is None:
            self.fail(409, f"run {run_id} was not started through this server: interrupt its kernel")
        why_not = self.launcher.not_running(launch, record["status"] if record is not None else None)
        if why_not:
            self.fail(409, f"run {run_id} is not running in kernel {launch.kernel_id}: {why_not}; nothing was interrupted")
        await self.launcher.stop(launch)
        self.set_status(202)
        self.finish({"id": run_id, "stopping": True, "kernel_id": launch.kernel_id})


class AnswerHandler(RunsAPIHandler):
    @web.authenticated
    @authorized
    async def post(self, run_id: str) -> None:
        """``{"answer": "y"}``: the user's answer to the run's question (an approval), sent when the run asks."""
        _, launch, _ = self.find(run_id)
        if launch is None:
            self.fail(409, f"run {run_id} was not started through this server: answer in its notebook")
        body = self.body()
        try:
            self.launcher.answer(launch, body.get("answer") if isinstance(body, dict) else None)
        except RequestError as exc:
            self.fail(exc.status, str(exc))
        self.set_status(202)
        self.finish({"id": run_id, "answered": True})


class FilesHandler(RunsAPIHandler):
    @web.authenticated
    @authorized
    async def get(self, run_id: str) -> None:
        record, _, workspace = self.find(run_id)
        sizes = dict((record or {}).get("files") or {})
        for path in (record or {}).get("files_written") or []:
            sizes.setdefault(path, None)
        files = [{"path": path, "size": size, "exists": _inside_file(workspace, path)} for path, size in sizes.items()]
        self.finish({"id": run_id, "workspace": str(workspace), "files": files})


def _inside_file(workspace: Path, path: str) -> bool | None:
    """Whether ``path`` is a file in ``workspace``; None (not looked at) for a path that leaves it.

    The paths come from the record, which anyone who can write the workspace can plant: a path
    outside it (absolute, ``..``, through a link out) is never looked up, so ``files`` answers
    nothing about the server's other files.
    """
    if "\x00" in path:
        return None
    try:
        target = (workspace / path).resolve()
    except (OSError, RuntimeError):
        return None
    if workspace.resolve() not in target.parents:
        return None
    return target.is_file()


class NotebookHandler(RunsAPIHandler):
    @web.authenticated
    @authorized
    async def get(self, run_id: str) -> None:
        record, _, _ = self.find(run_id)
        if record is None:
            self.fail(409, f"run {run_id} has no record yet")
        self.set_header("Content-Type", "application/x-ipynb+json")
        self.set_header("Content-Disposition", f'attachment; filename="{run_id}.ipynb"')
        self.finish(nbformat.writes(to_notebook(record)))


class EventsHandler(RunsAPIHandler):
    """Server-Sent Events: the logged events (``id:`` is the seq), then new ones live, until the run ends."""

    @web.authenticated
    @authorized
    async def get(self, run_id: str) -> None:
        _, launch, workspace = self.find(run_id)
        last = self.request.headers.get("Last-Event-ID") or self.get_query_argument("after", "0")
        try:
            after = int(last)
        except ValueError:
            self.fail(400, f"Last-Event-ID must be an event's id (a whole number), not {last!r}")
        self.set_header("Content-Type", "text/event-stream")
        self.set_header("Cache-Control", "no-cache")
        self.set_header("X-Accel-Buffering", "no")
        tail = LogTail(events_path(workspace, run_id), after)
        last_new = last_sent = time.monotonic()
        try:
            while True:
                events = tail.read()
                for event in events:
                    self.write(f"id: {event['seq']}\nevent: {event['kind']}\n"
                               f"data: {json.dumps(event, ensure_ascii=False)}\n\n")
                now = time.monotonic()
                if events:
                    last_new = last_sent = now
                    await self.flush()
                if tail.done:
                    break
                ended = self._ended_without_end(launch, now - last_new)
                if ended:
                    for event in tail.read():  # what was appended since the read above
                        self.write(f"id: {event['seq']}\nevent: {event['kind']}\n"
                                   f"data: {json.dumps(event, ensure_ascii=False)}\n\n")
                    if tail.done:
                        break
                    self.write(f"event: ended_mid_run\ndata: {json.dumps({'id': run_id, 'reason': ended})}\n\n")
                    break
                if now - last_sent > KEEPALIVE:
                    self.write(": keepalive\n\n")
                    await self.flush()
                    last_sent = now
                await asyncio.sleep(0.1)
            await self.finish()
        except StreamClosedError:
            pass  # the client went away

    def _ended_without_end(self, launch: Launch | None, idle: float) -> str | None:
        """Why a log that has no end will get none (or None while it may still grow)."""
        if launch is not None and launch.done:
            return launch.error or "the run's cell ended without finishing the run"
        lost = self.launcher.lost(launch) if launch is not None else None
        if lost:
            return lost
        if launch is not None and idle > QUIET_KERNEL and not self.launcher.kernel_busy(launch.kernel_id):
            return "its kernel is no longer running it (the kernel died or restarted)"
        if launch is None and idle > IDLE_END:
            return f"nothing new for {IDLE_END:.0f} s"
        return None
