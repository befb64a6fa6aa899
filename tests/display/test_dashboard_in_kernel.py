"""The dashboard in a real ipykernel: chosen automatically, and updates sent from a sub-agent's thread
carry the running cell's parent header (ipykernel 7 routes by it), whatever that thread's context says."""

from __future__ import annotations

import pytest
from tests.kernels import execute, kernel  # noqa: F401 - the fixture

pytestmark = pytest.mark.kernel


def run_cell(client, code):
    """Execute code; return (its msg_id, every iopub message read until it is idle, whatever its parent)."""
    cell = execute(client, code)
    assert cell.status == "ok", cell.reply
    return cell.msg_id, cell.messages + cell.strays


SETUP = """
import contextvars, threading
from deepagent_magics.core.run.run import Run
from deepagent_magics.display import choose_mode, show_run
stale = contextvars.copy_context()  # a worker's context from an earlier request
"""

THREADED_RUN = """
print(choose_mode(get_ipython()))
run = Run("threaded parent", config={"workspace": "."})
view = show_run(run, shell=get_ipython())
run.start()
run.begin_step("Spawn a sub-agent from a worker.", "delegate('x')")

def work():
    child = run.add_child("child from a thread")
    child.start()
    child.begin_step("Child step.", "z = 1")
    child.end_step("ok")
    child.finish("finished", result="r")
    run.child_finished(child)

worker = threading.Thread(target=lambda: stale.run(work))
worker.start(); worker.join()
run.end_step("done")
run.finish("finished", result="ok")
"""


def test_thread_updates_land_in_the_running_cell(kernel):  # noqa: F811 - the fixture
    _, client = kernel
    run_cell(client, SETUP)
    msg_id, messages = run_cell(client, THREADED_RUN)

    stdout = "".join(m["content"]["text"] for m in messages if m["msg_type"] == "stream")
    assert stdout.strip() == "widgets"  # a kernel with a comm manager gets the dashboard
    opened = [m for m in messages if m["msg_type"] == "comm_open"]
    updates = [m for m in messages if m["msg_type"] == "comm_msg"]
    assert opened and updates
    child_titles = [m for m in updates if "child from a thread" in str(m["content"]["data"].get("state", {}))]
    assert child_titles, "the sub-agent's entry was never updated"
    parents = {m["parent_header"].get("msg_id") for m in opened + updates}
    assert parents == {msg_id}
