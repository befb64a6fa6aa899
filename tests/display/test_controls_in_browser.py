"""The steering controls in a real JupyterLab, clicked in headless Chromium while the cell runs.

A ``%%deepagent`` cell runs a scripted agent whose steps wait (each step writes ``stepN.started``
in the notebook's folder and waits for ``stepN.go``), so the test knows which step the agent is in.
During step 1 it types a note and sends it, and rewrites the todo list and applies it; during
step 2 it clicks "Stop after this step". The dashboard's own feedback line confirms each click
while the cell is still running (the kernel handled it mid-cell), and afterwards the run proves
the effects: it ended ``stopped`` after step 2 with no third LM request; the second LM request
contains the note; step 2's ``read_todos()`` returned the edited list.

JupyterLab and the page come from tests/browser.py.
"""

from __future__ import annotations

import time

import playwright.sync_api as playwright_api
import pytest
from tests.browser import ARTIFACTS_DIR, lab, open_notebook, page, run_cell  # noqa: F401 - the fixtures

pytestmark = pytest.mark.browser

STEPS = [
    ("Plan.", "write_todos([{'content': 'load the data', 'status': 'in_progress'}])\nwait_for('step1')"),
    ("Read the todos.", "print('TODOS', read_todos())\nwait_for('step2')"),
    ("Never.", "never = True"),
    ("Done.", "SUBMIT(result='never')"),
]
SETUP_CELL = f"""\
%load_ext deepagent_magics
from deepagent_magics.testing import ScriptedLM
def wait_for(name):
    import os, time
    open(name + '.started', 'w').close()
    for _ in range(1200):
        if os.path.exists(name + '.go'):
            return
        time.sleep(0.05)
lm = ScriptedLM({STEPS!r})
%deepagent_config --workspace ws --display widgets
"""
TASK_CELL = "%%deepagent --lm lm\nWork slowly so that the user can steer"
CHECK_CELL = ("run = _deepagent_run\n"
              "print('STATUS', run.status, len(run.steps), len(lm.requests), 'never' in globals())\n"
              "print('NOTE-SEEN', 'NOTE-42: use the median' in lm.requests[1]['user'])\n"
              "print(run.steps[1].output)")


def wait_for_file(path, within=90):
    deadline = time.monotonic() + within
    while not path.exists():
        if time.monotonic() > deadline:
            raise AssertionError(f"{path.name} never appeared: the agent did not reach that step")
        time.sleep(0.1)


def test_each_steering_control_works_while_the_cell_runs(lab, page):  # noqa: F811
    expect = playwright_api.expect
    root = open_notebook(lab, page, "steering.ipynb", [SETUP_CELL, TASK_CELL, CHECK_CELL])
    run_cell(page, 1)

    dashboard = page.locator(".deepagent-dashboard")
    dashboard.wait_for(timeout=90_000)
    feedback = dashboard.locator(".deepagent-steer").last
    wait_for_file(root / "step1.started")

    # A note to the agent.
    dashboard.locator(".dag-steer-note textarea").fill("NOTE-42: use the median")
    dashboard.locator("button.dag-steer-send").click()
    expect(feedback).to_contain_text("Note sent", timeout=20_000)  # handled while the cell runs
    # The todo list, edited.
    todos = dashboard.locator(".dag-steer-todos textarea")
    expect(todos).to_have_value("- [~] load the data", timeout=20_000)  # the agent's list, ready to edit
    todos.fill("- [x] load the data\n- [ ] plot the median")
    dashboard.locator("button.dag-steer-apply").click()
    expect(feedback).to_contain_text("Todo list of 2 items applied", timeout=20_000)
    assert not (root / "step2.started").exists()  # all of it while the agent was still in step 1
    page.screenshot(path=str(ARTIFACTS_DIR() / "steering-running.png"))
    (root / "step1.go").touch()

    # Stop after this step.
    wait_for_file(root / "step2.started")
    dashboard.locator("button.dag-steer-stop").click()
    expect(feedback).to_contain_text("stops after the step it is in", timeout=20_000)
    (root / "step2.go").touch()

    expect(dashboard.locator(".dag-status").first).to_contain_text("stopped", timeout=90_000)
    run_cell(page, 2)
    output = page.locator(".jp-Notebook .jp-Cell").nth(2).locator(".jp-OutputArea")
    expect(output).to_contain_text("STATUS stopped 2 2 False", timeout=60_000)  # no third LM request
    expect(output).to_contain_text("NOTE-SEEN True")
    expect(output).to_contain_text("TODOS [{'content': 'load the data', 'status': 'completed'}, "
                                   "{'content': 'plot the median', 'status': 'pending'}]")
    dashboard.screenshot(path=str(ARTIFACTS_DIR() / "steering-stopped.png"))
