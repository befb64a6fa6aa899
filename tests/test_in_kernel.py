"""%%deepagent inside a real Jupyter kernel, driven over the protocol as a frontend would."""

from __future__ import annotations

import time

import pytest
from jupyter_client.manager import start_new_kernel

pytestmark = pytest.mark.kernel


@pytest.fixture
def kernel(tmp_path):
    manager, client = start_new_kernel(kernel_name="python3", cwd=str(tmp_path))
    try:
        yield manager, client
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def execute(client, code, timeout=60):
    """Run code; return (status, stdout text, error name)."""
    msg_id = client.execute(code)
    stdout, error = [], None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        msg = client.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        kind, content = msg["msg_type"], msg["content"]
        if kind == "stream" and content["name"] == "stdout":
            stdout.append(content["text"])
        elif kind == "error":
            error = content["ename"]
        elif kind == "status" and content["execution_state"] == "idle":
            break
    reply = client.get_shell_msg(timeout=timeout)
    return reply["content"]["status"], "".join(stdout), error


SETUP = """
%load_ext deepagent_magics
import dspy
from deepagent_magics.testing import ScriptedLM
data = {"rows": 3}
lm = ScriptedLM([
    ("Start.", "started = True\\nprint('working')"),
    ("Long step.", "import time\\nfor _ in range(600):\\n    time.sleep(0.1)"),
    ("Never reached.", "SUBMIT(result='no')"),
])
%deepagent_config --workspace ws --quiet on
"""


def test_a_kernel_interrupt_stops_the_run_keeps_the_trajectory_and_the_kernel(kernel):
    manager, client = kernel
    assert execute(client, SETUP)[0] == "ok"

    msg_id = client.execute("%%deepagent --lm lm\nwork for a long time")
    # Wait until the agent is inside its long step, then interrupt as the stop button does.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        msg = client.get_iopub_msg(timeout=60)
        if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "status" \
                and msg["content"]["execution_state"] == "busy":
            break
    time.sleep(1.5)
    manager.interrupt_kernel()
    reply = client.get_shell_msg(timeout=60)
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "KeyboardInterrupt"

    status, out, error = execute(
        client,
        "run = _deepagent_run\n"
        "print(run.status, len(run.steps), started, data, type(dspy).__name__, dspy.__name__)\n"
        "print('SUBMIT' in globals(), 'write_todos' in globals())",
    )
    assert status == "ok", error
    assert out.splitlines() == ["interrupted 2 True {'rows': 3} module dspy", "False False"]
    # The kernel is alive and the next cell runs normally.
    assert execute(client, "print(1 + 1)")[1] == "2\n"
