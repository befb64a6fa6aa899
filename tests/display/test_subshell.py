"""Steering in a real ipykernel: the dashboard's controls work while the %%deepagent cell is running.

A frontend's clicks and typing are ``comm_msg``s on the shell channel. While a cell runs the
kernel's main thread handles none of them; the controls' comms are routed to a kernel subshell
(display/subshell.py), which does. This test is the frontend: it finds the controls' comms on
IOPub and sends what JupyterLab sends (a value update, a click) while the cell sleeps inside a
step, then checks the effects: the note is in the next LM request, the next ``read_todos()``
returns the edited list, and a stop ends the run ``stopped`` after the step it was in.
"""

from __future__ import annotations

import json
import time

import pytest
from tests.kernels import execute, kernel, reply_to  # noqa: F401 - the fixture

pytestmark = pytest.mark.kernel

CELL = """%%deepagent --lm lm --display widgets --workspace {ws}
Work slowly so the user can steer
"""

SCRIPT = """
%load_ext deepagent_magics
from deepagent_magics.testing import ScriptedLM
def wait_for(name):
    import os, time
    open(name + '.started', 'w').close()
    for _ in range(300):
        if os.path.exists(name + '.go'):
            return
        time.sleep(0.05)
lm = ScriptedLM([
    ("Plan.", "write_todos([{'content': 'load', 'status': 'in_progress'}])\\nwait_for('step1')"),
    ("Read the todos.", "print('TODOS', read_todos())\\nwait_for('step2')"),
    ("Never.", "never = True"),
    ("Done.", "SUBMIT(result='never')"),
])
"""


class Frontend:
    """What JupyterLab does with widgets, reduced: remember each comm's classes; send updates and clicks."""

    def __init__(self, client):
        self.client = client
        self.classes: dict[str, list[str]] = {}
        self.seen: list[dict] = []

    def pump(self, seconds: float = 0.2) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                msg = self.client.get_iopub_msg(timeout=0.05)
            except Exception:
                continue
            self.seen.append(msg)
            if msg["msg_type"] in ("comm_open", "comm_msg"):
                state = (msg["content"].get("data") or {}).get("state") or {}
                if "_dom_classes" in state:
                    self.classes[msg["content"]["comm_id"]] = state["_dom_classes"]

    def comm(self, css: str, within: float = 20) -> str:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            found = [comm for comm, classes in self.classes.items() if css in classes]
            if found:
                return found[-1]
            self.pump()
        raise AssertionError(f"no widget with class {css}")

    def send(self, comm_id: str, data: dict) -> None:
        self.client.shell_channel.send(self.client.session.msg("comm_msg", {"comm_id": comm_id, "data": data}))

    def type_into(self, css: str, text: str) -> None:
        self.send(self.comm(css), {"method": "update", "state": {"value": text}, "buffer_paths": []})

    def click(self, css: str) -> None:
        self.send(self.comm(css), {"method": "custom", "content": {"event": "click"}})


def wait_for_file(path, within=30):
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if path.exists():
            return
        time.sleep(0.05)
    raise AssertionError(f"{path.name} never appeared")


def test_the_controls_work_while_the_cell_runs(kernel, tmp_path):  # noqa: F811 - the fixture
    _, client = kernel
    setup = execute(client, SCRIPT)
    assert setup.status == "ok", setup.reply
    frontend = Frontend(client)
    cell_id = client.execute(CELL.format(ws=tmp_path))

    wait_for_file(tmp_path / "step1.started")  # the cell is inside step 1, busy
    frontend.type_into("dag-steer-note", "NOTE-7f3: prefer the median")
    frontend.click("dag-steer-send")
    frontend.type_into("dag-steer-todos", "- [x] load\n- [ ] plot the median")
    frontend.click("dag-steer-apply")
    frontend.pump(1.0)  # the subshell handles them now, while step 1 still runs
    (tmp_path / "step1.go").touch()

    wait_for_file(tmp_path / "step2.started")
    frontend.click("dag-steer-stop")
    frontend.pump(1.0)
    (tmp_path / "step2.go").touch()

    reply = reply_to(client, cell_id)
    assert reply["content"]["status"] == "ok", reply["content"]
    frontend.pump(0.5)

    report = ("import json\nrun = _deepagent_run\nprint('REPORT' + json.dumps({'status': run.status, 'steps': "
              "len(run.steps), 'out2': run.steps[1].output, 'request2': lm.requests[1]['user'], "
              "'requests': len(lm.requests), 'never': 'never' in globals()}))")
    cell = execute(client, report, timeout=30)
    line = next((line for line in cell.stdout.splitlines() if line.startswith("REPORT")), None)
    data = json.loads(line[len("REPORT"):]) if line else None
    assert data is not None
    assert data["status"] == "stopped" and data["steps"] == 2 and data["requests"] == 2 and not data["never"]
    assert "NOTE-7f3: prefer the median" in data["request2"]
    assert ("TODOS [{'content': 'load', 'status': 'completed'}, {'content': 'plot the median', 'status': 'pending'}]"
            in data["out2"])
