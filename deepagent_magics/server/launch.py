"""Starting and stopping runs in the server's kernels: a ``%%deepagent`` cell executed there.

`Launcher.start` checks the request, picks the kernel (a running one by id, or a new one
from the server's kernel manager), chooses the run's id, and executes in that kernel::

    %load_ext deepagent_magics
    %%deepagent --run-id ID --workspace W --no-interpolate --display text --door api [--lm ...]
    <task>

so the run is the same as one typed in a notebook: its REPL is that kernel's namespace,
its record and event log go to ``<W>/.deepagent/runs/``. It returns at once; a background
task waits for the cell's reply and keeps what went wrong if the run never started (a
bad ``lm``: the magic's one-line error).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import queue
import re
import shlex
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InvalidValue, UserError
from ..settings import SERVER, Setting, at

log = logging.getLogger(__name__)

# Request fields that become %%deepagent flags: the settings of the table (settings.py) at the SERVER door.
FLAGS: dict[str, Setting] = {setting.name: setting for setting in at(SERVER)}
FIELDS = {"task", "kernel_id", "kernel_name", "workspace", "run_id", "continue", "door", *FLAGS}
DOORS = ("api", "notebook")  # what the agent is told of the kernel: the server's, or the notebook's it belongs to
RUN_ID = r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}"  # a run's id: it names the record's file
MAX_ANSWER = 1000  # characters of an answer to the run's question
JSON_TYPES = {float: (int, float)}  # a JSON number without a point is an int
REPLY_TIMEOUT = 24 * 3600.0  # a run may be long; the wait for its cell's reply is only bookkeeping


class RequestError(UserError):
    """A bad request: ``status`` is the HTTP status to answer with."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


@dataclass
class Launch:
    """A run started through the API, before and after its record exists."""

    id: str
    task: str
    kernel_id: str
    workspace: Path
    created: float = field(default_factory=time.time)
    running: bool = False  # the kernel began executing the cell (its busy status for our request came)
    done: bool = False  # the cell's reply came back (the run ended, or never started)
    error: str | None = None  # the cell failed: the run never started, or ended in an exception
    kernel_pid: int | None = None  # the kernel's process when the cell was sent (another one: it restarted)
    task_handle: Any = None
    asking: str | None = None  # the prompt of the question the run waits on (an approval), until it is answered
    answers: list[str] = field(default_factory=list)  # answers sent before the question reached us, in order

    def stub(self) -> dict[str, Any]:
        """What is known of the run when it has no record (yet, or ever)."""
        status = "pending" if not self.done else ("failed" if self.error else "finished")
        if self.error and "KeyboardInterrupt" in self.error:
            status = "interrupted"
        return {"id": self.id, "task": self.task, "status": status, "error": self.error, "steps": [],
                "kernel_id": self.kernel_id, "workspace": str(self.workspace), "started_at": None,
                "created_at": self.created}


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]


def cell_code(run_id: str, task: str, workspace: Path, body: dict[str, Any], settings: dict[str, Setting] = FLAGS,
              more: tuple[str, ...] = ()) -> str:
    """The code that runs the ``%%deepagent`` cell in the kernel: ``body``'s values of ``settings`` as its flags
    (a door's own: the run API's `FLAGS`, ``deepagent acp``'s), and ``more`` flags of the caller's (after
    ``--door api``, so a caller's ``--door`` is the one taken)."""
    flags = ["--run-id", run_id, "--workspace", str(workspace), "--no-interpolate", "--display", "text", "--door", "api",
             *more]
    for name, setting in settings.items():
        value = body.get(name)
        if setting.kind is bool:  # the cell's switch: --quiet, or --no-stream for one on by default
            if value is not None and value != setting.default:
                flags.append(setting.flag if value else "--no-" + setting.flag[2:])
        elif value is not None:
            flags += [setting.flag, str(value)]
    line = " ".join(shlex.quote(flag) for flag in flags)
    return ("get_ipython().run_line_magic('load_ext', 'deepagent_magics')\n"
            f"get_ipython().run_cell_magic('deepagent', {line!r}, {task!r})\n")


def check_body(body: Any) -> dict[str, Any]:
    """The request body, checked: 400 with the reason for anything wrong."""
    if not isinstance(body, dict):
        raise RequestError(400, "the body must be a JSON object like {\"task\": \"...\"}")
    unknown = sorted(set(body) - FIELDS)
    if unknown:
        raise RequestError(400, f"unknown field(s) {', '.join(unknown)}; known: {', '.join(sorted(FIELDS))}")
    task = body.get("task")
    if not isinstance(task, str) or not task.strip():
        raise RequestError(400, "missing \"task\": a non-empty string, the text of the %%deepagent cell")
    for name in ("kernel_id", "kernel_name", "workspace"):
        if body.get(name) is not None and not isinstance(body[name], str):
            raise RequestError(400, f"\"{name}\" must be a string")
    if body.get("door") is not None and body["door"] not in DOORS:
        raise RequestError(400, f"\"door\" must be one of {', '.join(DOORS)}")
    for name in ("run_id", "continue"):  # continue: the run whose conversation this one continues; false: a new one
        value = body.get(name)
        if value is not None and not (name == "continue" and value is False) and not (
                isinstance(value, str) and re.fullmatch(RUN_ID, value)):
            raise RequestError(400, f"\"{name}\" must be a run id (letters, digits, '_', '.', '-')"
                                    + (" or false" if name == "continue" else ""))
    for name, setting in FLAGS.items():
        value = body.get(name)
        if value is None:
            continue
        if setting.kind is bool:
            if not isinstance(value, bool):
                raise RequestError(400, f"\"{name}\" must be true or false")
            continue
        choices = setting.where(SERVER, "choices")
        if choices and value not in choices:
            raise RequestError(400, f"\"{name}\" must be one of {', '.join(choices)}")
        kind = JSON_TYPES.get(setting.kind, setting.kind)
        if isinstance(value, bool) or not isinstance(value, kind):
            raise RequestError(400, f"\"{name}\" must be {'a string' if kind is str else 'a number'}")
        try:
            setting.check(value, label=f"\"{name}\"")
        except InvalidValue as exc:
            raise RequestError(400, str(exc)) from None
        if isinstance(value, str) and ("\n" in value or not value.strip()):
            raise RequestError(400, f"\"{name}\" must be one non-empty line")
    return body


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


async def _began(client: Any, msg_id: str) -> bool:
    """Whether the kernel's busy status for request ``msg_id`` is among its IOPub messages so far."""
    while True:
        try:
            message = await _maybe_await(client.get_iopub_msg(timeout=0))
        except queue.Empty:  # nothing more for now
            return False
        if (message.get("parent_header", {}).get("msg_id") == msg_id and message.get("msg_type") == "status"
                and message.get("content", {}).get("execution_state") == "busy"):
            return True


class Launcher:
    """The runs this server started, and how to start and stop them in its kernels."""

    def __init__(self, kernel_manager: Any):
        self.kernel_manager = kernel_manager
        self.launches: dict[str, Launch] = {}

    def has_kernel(self, kernel_id: str) -> bool:
        return kernel_id in self.kernel_manager.list_kernel_ids()

    def kernel_pid(self, kernel_id: str) -> int | None:
        try:
            return getattr(getattr(self.kernel_manager.get_kernel(kernel_id), "provisioner", None), "pid", None)
        except KeyError:
            return None

    def lost(self, launch: Launch) -> str | None:
        """Why the kernel can no longer be running the launch's cell, or None."""
        if not self.has_kernel(launch.kernel_id):
            return "its kernel is gone"
        pid = self.kernel_pid(launch.kernel_id)
        if launch.kernel_pid is not None and pid is not None and pid != launch.kernel_pid:
            return "its kernel died or was restarted"
        return None

    def kernel_busy(self, kernel_id: str) -> bool:
        """Whether the kernel is executing something (the server follows its status messages)."""
        try:
            return getattr(self.kernel_manager.get_kernel(kernel_id), "execution_state", "busy") == "busy"
        except KeyError:
            return False

    async def start(self, body: dict[str, Any], workspace: Path) -> Launch:
        kernel_id = body.get("kernel_id")
        if kernel_id is not None and not self.has_kernel(kernel_id):
            raise RequestError(404, f"no running kernel {kernel_id!r}")
        if kernel_id is None:
            options = {"kernel_name": body["kernel_name"]} if body.get("kernel_name") else {}
            try:
                kernel_id = await _maybe_await(self.kernel_manager.start_kernel(path=None, **options))
            except Exception as exc:  # e.g. no such kernel spec
                raise RequestError(400, f"could not start a kernel: {exc}") from exc
        run_id = body.get("run_id") or new_run_id()
        runs = workspace / ".deepagent" / "runs"
        if run_id in self.launches or any((runs / f"{run_id}{suffix}").exists() for suffix in (".json", ".events.jsonl")):
            raise RequestError(409, f"there is a run {run_id} already")
        launch = Launch(run_id, body["task"], kernel_id, workspace)
        self.launches[launch.id] = launch
        more = ("--door", body["door"]) if body.get("door") else ()
        more += ("--new",) if body.get("continue") is False else ("--continue", body["continue"]) if body.get(
            "continue") else ()
        code = cell_code(launch.id, launch.task, workspace, body, more=more)
        asks = body.get("approve") not in (None, "never")  # its questions come as input requests we relay
        launch.task_handle = asyncio.ensure_future(self._execute(launch, code, asks))
        return launch

    def answer(self, launch: Launch, text: str) -> None:
        """Queue the user's answer to the run's question (``POST runs/{id}/answer``): sent when it asks."""
        if not isinstance(text, str) or "\n" in text or len(text) > MAX_ANSWER:
            raise RequestError(400, f"\"answer\" must be one line of at most {MAX_ANSWER} characters: y, n [reason], a "
                                    "or q")
        if launch.done:
            raise RequestError(409, f"run {launch.id} has ended; there is nothing to answer")
        launch.answers.append(text)

    async def _relay(self, client: Any, launch: Launch) -> None:
        """The run's question (an ``input_request`` on the cell's stdin) kept for the API; a queued answer sent."""
        try:
            message = await _maybe_await(client.get_stdin_msg(timeout=0))
            if message.get("msg_type") == "input_request":
                launch.asking = str(message.get("content", {}).get("prompt", ""))
        except Exception:  # queue.Empty: no new question
            pass
        if launch.asking is not None and launch.answers:
            client.input(launch.answers.pop(0))
            launch.asking = None

    async def _execute(self, launch: Launch, code: str, asks: bool = False) -> None:
        client = None
        try:
            client = self.kernel_manager.get_kernel(launch.kernel_id).client()
            client.start_channels()
            await _maybe_await(client.wait_for_ready(timeout=120))
            launch.kernel_pid = self.kernel_pid(launch.kernel_id)
            msg_id = client.execute(code, store_history=False, allow_stdin=asks)
            deadline = time.monotonic() + REPLY_TIMEOUT
            while time.monotonic() < deadline:
                if not launch.running:
                    launch.running = await _began(client, msg_id)
                if asks:
                    await self._relay(client, launch)
                try:
                    reply = await _maybe_await(client.get_shell_msg(timeout=0.2 if not launch.running else 1.0))
                except queue.Empty:  # nothing yet
                    lost = self.lost(launch)
                    if lost:
                        launch.error = f"the run did not end: {lost}"
                        return
                    continue
                if reply.get("parent_header", {}).get("msg_id") != msg_id:
                    continue
                content = reply.get("content", {})
                if content.get("status") != "ok":
                    launch.error = f"{content.get('ename', 'Error')}: {content.get('evalue', '')}".strip()
                return
        except Exception as exc:  # whatever ends the kernel's answer: the run's error, one line, logged
            launch.error = f"could not run the cell in kernel {launch.kernel_id}: {exc}"
            log.warning("deepagent run %s: %s", launch.id, launch.error)
        finally:
            launch.done = True
            if client is not None:
                try:
                    client.stop_channels()
                except Exception:  # channels of a kernel already gone: nothing left to stop
                    pass

    def not_running(self, launch: Launch, status: str | None) -> str | None:
        """Why stopping ``launch`` would interrupt something else, or None when its cell is what the kernel runs now.

        Only a cell the kernel began (its busy status for our request came), whose reply has not
        come, in the same kernel process, of a run whose record (if any yet) says ``running``: an
        interrupt then reaches that cell and nothing of the user's.
        """
        if launch.done:
            return f"it has ended ({status or launch.stub()['status']})"
        if status is not None and status not in ("pending", "running"):
            return f"it has ended ({status})"
        lost = self.lost(launch)
        if lost:
            return lost
        if not launch.running:
            return "its cell has not started yet (the kernel is busy with another request)"
        return None

    async def stop(self, launch: Launch) -> None:
        await _maybe_await(self.kernel_manager.interrupt_kernel(launch.kernel_id))
