"""%%deepagent inside a real Jupyter kernel, driven over the protocol as a frontend would."""

from __future__ import annotations

import time

import pytest
from tests.kernels import execute, kernel, reply_to  # noqa: F401 - the fixture

pytestmark = pytest.mark.kernel


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


def test_a_kernel_interrupt_stops_the_run_keeps_the_trajectory_and_the_kernel(kernel):  # noqa: F811 - the fixture
    manager, client = kernel
    assert execute(client, SETUP).status == "ok"

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
    reply = reply_to(client, msg_id)
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "KeyboardInterrupt"

    cell = execute(
        client,
        "run = _deepagent_run\n"
        "print(run.status, len(run.steps), started, data, type(dspy).__name__, dspy.__name__)\n"
        "print('SUBMIT' in globals(), 'write_todos' in globals())",
    )
    assert cell.status == "ok", cell.error
    assert cell.stdout.splitlines() == ["interrupted 2 True {'rows': 3} module dspy", "False False"]
    # The kernel is alive and the next cell runs normally.
    assert execute(client, "print(1 + 1)").stdout == "2\n"
