"""Real Jupyter kernels for the tests, driven over the protocol as a frontend drives them.

One place for what every kernel test needs: start an ipykernel in a folder and always shut it down
(``started_kernel``, or the ``kernel`` fixture), and run one cell to its end (``execute``), which
collects that cell's IOPub messages until the kernel is idle again, reads its shell reply (matched by
msg_id), and can answer the cell's ``input_request``s as a user at the keyboard would. What a test
needs from the cell is on the returned ``Cell``: the reply's status, stdout, the error, the payload,
the messages themselves.
"""

from __future__ import annotations

import queue
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable

import pytest
from jupyter_client.manager import start_new_kernel


def start_kernel(cwd, kernel_name: str = "python3"):
    """A new kernel running in ``cwd``: (manager, client), the client's channels started and ready."""
    return start_new_kernel(kernel_name=kernel_name, cwd=str(cwd))


def stop_kernel(manager, client) -> None:
    client.stop_channels()
    manager.shutdown_kernel(now=True)


@contextmanager
def started_kernel(cwd, kernel_name: str = "python3"):
    """``with started_kernel(tmp_path) as (manager, client):`` the kernel is shut down however the block ends."""
    manager, client = start_kernel(cwd, kernel_name)
    try:
        yield manager, client
    finally:
        stop_kernel(manager, client)


@pytest.fixture
def kernel(tmp_path):
    """A kernel of its own for one test, running in its tmp_path: (manager, client)."""
    with started_kernel(tmp_path) as pair:
        yield pair


@dataclass
class Cell:
    """One executed cell, as the frontend saw it."""

    msg_id: str
    messages: list = field(default_factory=list)  # this cell's IOPub messages, in order
    strays: list = field(default_factory=list)  # IOPub messages of other parents read meanwhile (comms, threads)
    reply: dict = field(default_factory=dict)  # the shell reply's content
    idle: bool = False

    @property
    def status(self) -> str:
        return self.reply.get("status", "")

    @property
    def payload(self) -> list:
        return self.reply.get("payload", [])

    def _streams(self, names) -> str:
        return "".join(m["content"]["text"] for m in self.messages
                       if m["msg_type"] == "stream" and m["content"]["name"] in names)

    @property
    def stdout(self) -> str:
        return self._streams(("stdout",))

    @property
    def streams(self) -> str:
        """stdout and stderr, as they arrived."""
        return self._streams(("stdout", "stderr"))

    @property
    def output(self) -> str:
        """What a notebook shows as text: every stream and every error's traceback, in order."""
        parts = []
        for m in self.messages:
            if m["msg_type"] == "stream":
                parts.append(m["content"]["text"])
            elif m["msg_type"] == "error":
                parts.append("\n".join(m["content"]["traceback"]))
        return "".join(parts)

    def _error(self, key):
        errors = [m["content"][key] for m in self.messages if m["msg_type"] == "error"]
        return errors[-1] if errors else None

    @property
    def error(self) -> str | None:
        """The name of the cell's (last) error on IOPub, or None."""
        return self._error("ename")

    @property
    def evalue(self) -> str | None:
        return self._error("evalue")

    def add(self, msg) -> None:
        if msg["parent_header"].get("msg_id") != self.msg_id:
            self.strays.append(msg)
            return
        self.messages.append(msg)
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            self.idle = True


def reply_to(client, msg_id, timeout=60):
    """The shell reply to ``msg_id`` (replies to earlier requests are passed over)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            reply = client.get_shell_msg(timeout=max(0.01, deadline - time.monotonic()))
        except queue.Empty:
            break
        if reply["parent_header"].get("msg_id") == msg_id:
            return reply
    raise AssertionError(f"no shell reply to {msg_id} within {timeout} s")


def execute(client, code, timeout=60, *, allow_stdin=None,
            on_input: Callable[[str, Cell], str | None] | None = None) -> Cell:
    """Run ``code`` to its end: the kernel must be idle after it within ``timeout`` s, and reply to it.

    ``on_input(prompt, cell)`` answers each ``input_request`` the cell makes (its return value is
    typed in; None sends nothing, e.g. when it pressed the stop button instead). ``allow_stdin``
    is the request's flag (None: the client's default).

    After a cell ends in an error, ipykernel aborts every execute_request that reaches it before its
    "stop aborting" marker does (stop_on_error): a request sent the moment the error reply arrives
    can lose that race, more often while the kernel's other threads are busy. Such a request is
    answered "aborted" without running, so it is sent again (a few times)."""
    for _ in range(5):
        cell = _execute_once(client, code, timeout, allow_stdin, on_input)
        if cell.status != "aborted":
            return cell
        time.sleep(0.1)
    return cell


def _execute_once(client, code, timeout, allow_stdin, on_input) -> Cell:
    msg_id = client.execute(code, allow_stdin=allow_stdin)
    cell = Cell(msg_id)
    poll = 0.02 if on_input else None
    deadline = time.monotonic() + timeout
    while not cell.idle:
        left = deadline - time.monotonic()
        assert left > 0, f"the cell did not end within {timeout} s: {cell.output[-2000:]}"
        if on_input is not None:
            try:
                msg = client.get_stdin_msg(timeout=poll)
                if msg["msg_type"] == "input_request":
                    answer = on_input(msg["content"]["prompt"], cell)
                    if answer is not None:
                        client.input(answer)
            except queue.Empty:
                pass
        try:
            cell.add(client.get_iopub_msg(timeout=poll or left))
            while on_input is not None and not cell.idle:  # read what is there before asking stdin again
                cell.add(client.get_iopub_msg(timeout=poll))
        except queue.Empty:
            pass
    cell.reply = reply_to(client, msg_id, timeout)["content"]
    return cell
