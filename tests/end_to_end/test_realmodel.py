"""A real model in the loop: the bundled 1.5B coder model (``--lm local``, temperature 0) drives the agent.

What the model writes is its own; what is asserted is what the harness promises whatever it writes: the
run ends ``finished`` or ``failed`` with a one-line reason, never a traceback; the user's variables are
bound to the same, unchanged objects; the record and the event log are complete; a sub-agent's kernel
is gone afterwards. One root task's answer is checked too (at temperature 0 the model's answer is the
same each time for the same prompt). Each step is tens of seconds on 2 cores, so there are few tests
and few steps; the session shares one server (`conftest.local_model`).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pandas as pd
import psutil
import pytest

from deepagent_magics import DeepAgent
from deepagent_magics.interpreters.pool import default_pool, stop_default_pool
from deepagent_magics.records.events import events_path
from deepagent_magics.records.store import runs_dir

pytestmark = [pytest.mark.realmodel, pytest.mark.timeout(1800)]


def ended_as_promised(run) -> None:
    assert run.status in ("finished", "failed"), (run.status, run.error)
    if run.status == "failed":
        assert run.error and "\n" not in run.error.strip() and "Traceback" not in run.error, run.error
    for child in run.children:
        ended_as_promised(child)


def recorded_in_full(run, workspace) -> dict:
    """The run's record says what the run was, and its event log holds every event from start to end."""
    record = json.loads((runs_dir(workspace) / f"{run.id}.json").read_text())
    assert record["status"] == run.status and record["task"] == run.task
    assert len(record["steps"]) == len(run.steps)
    assert [step["code"] for step in record["steps"]] == [step.code for step in run.steps]
    events = [json.loads(line) for line in events_path(workspace, run.id).read_text().splitlines()]
    assert [event["seq"] for event in events] == list(range(1, len(events) + 1))
    own = [event for event in events if event["run"] == run.id]
    assert own[0]["kind"] == "run_started" and own[-1]["kind"] == "run_finished"
    assert sum(event["kind"] == "step_finished" for event in own) == len(run.steps)
    assert sum(event["kind"] == "subagent_started" for event in own) == len(run.children)
    assert sum(event["kind"] == "subagent_finished" for event in own) == len(run.children)
    return record


@pytest.fixture
def workspace(request):
    """The same folder for a test on every machine, and the working directory: both are in the prompt, and at
    temperature 0 the model's reply is then the same wherever the suite runs (a pytest temp path would make
    every request new; what the model writes changes with it)."""
    folder = Path(tempfile.gettempdir()) / "deepagent-realmodel" / request.node.name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    before = os.getcwd()
    os.chdir(folder)
    try:
        yield folder
    finally:
        os.chdir(before)  # first: what tears down after this reads the working directory
        shutil.rmtree(folder, ignore_errors=True)


def test_a_root_task_on_a_dataframe(local_model, workspace):
    units = pd.DataFrame({"region": ["North", "South", "East", "West"], "units": [3, 5, 7, 9]})
    kept = units.copy()
    owner = {"name": "Ada"}
    namespace = {"units": units, "owner": owner}
    agent = DeepAgent(lm="local", workspace=workspace, max_iters=3, max_depth=0)
    # Said plainly in the task: told only by the prompt that listed variables are defined, this 1.5B model
    # loads `units` from a made-up 'units.csv' instead (a capable model does not; docs/local-model.md).
    run = agent.run("The DataFrame `units` is already in the notebook. Print the sum of its `units` column "
                    "and submit the number.", namespace)

    ended_as_promised(run)
    assert namespace["units"] is units and units.equals(kept)
    assert namespace["owner"] is owner and owner == {"name": "Ada"}
    recorded_in_full(run, workspace)
    assert run.status == "finished" and "24" in str(run.result), (run.status, run.result, run.error)


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


@pytest.fixture
def shell(ip, local_model, workspace):
    ip.run_line_magic("deepagent_config", f"--lm local --pool-size 1 --workspace {workspace}")
    yield ip
    stop_default_pool()


def test_a_task_that_delegates(shell, workspace):
    pool = default_pool(1).warm()
    assert pool.wait_ready(1)
    waiting = set(pool.pids())
    shell.user_ns["limit"] = limit = [10, 20]
    result = shell.run_cell(
        "%%deepagent --out answer --max-iters 2 --subagent-max-iters 2\n"
        "Run exactly this Python code:\n"
        "reply = delegate('Compute 6 * 7 with Python code, print it, and submit the number.')\n"
        "print(reply)\n"
        "Then submit the reply.")

    assert result.error_in_exec is None, result.error_in_exec
    run = shell.user_ns["_deepagent_run"]
    ended_as_promised(run)
    assert shell.user_ns["limit"] is limit and limit == [10, 20]
    recorded_in_full(run, workspace)
    if not run.children and not any("delegate(" in (step.code or "") for step in run.steps):
        # Whether this 1.5B model copies the call is the model's choice, and it flips on single words of the
        # prompt and on what the suite ran before (at temperature 0 it passed alone and failed in the whole
        # suite). What the harness owes is checked whenever the model does call delegate: then a child ran.
        pytest.xfail(f"the local model wrote its own code instead of calling delegate: {run.steps[0].code!r:.200}")
    assert run.children, [step.code for step in run.steps]  # it called delegate: a sub-agent ran
    assert waiting and all(gone(pid) for pid in waiting)  # the kernel the sub-agent ran in was used once


def test_a_follow_up_cell(shell, workspace):
    shell.user_ns["base"] = base = 100
    first = shell.run_cell("%%deepagent --out first --max-iters 2\n"
                           "Set the variable x to 17 * 23 with Python code, print x, and submit it.")
    assert first.error_in_exec is None, first.error_in_exec
    one = shell.user_ns["_deepagent_run"]
    second = shell.run_cell("%%deepagent --continue --out second --max-iters 2\n"
                            "Now print x + base with Python code and submit that number.")
    assert second.error_in_exec is None, second.error_in_exec
    two = shell.user_ns["_deepagent_run"]

    assert two is not one and two.config["thread"] == one.id == one.config["thread"]
    for run in (one, two):
        ended_as_promised(run)
        recorded_in_full(run, workspace)
    assert shell.user_ns["base"] is base
