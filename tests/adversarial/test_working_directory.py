"""The root agent's working directory (interpreters/working_directory.py).

Its code runs in the user's process: an ``os.chdir`` would leave the notebook elsewhere, or in a folder
the agent then deleted, and an evaluation's next task would start there. The directory is put back when
the run ends, and the user is told. An evaluation runs each task's steps in that task's workspace, tasks
running at once each in its own.
"""

from __future__ import annotations

import os
import threading

import pytest

from deepagent_magics import DeepAgent
from deepagent_magics.testing import ScriptedLM


@pytest.fixture
def here(tmp_path, monkeypatch):
    """The process starts each test in a folder of its own (and goes back afterwards)."""
    start = tmp_path / "start"
    start.mkdir()
    monkeypatch.chdir(start)
    return start


def test_a_run_that_changes_directory_leaves_the_process_where_it_was(here, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    steps = [("Move.", f"import os\nos.chdir({str(elsewhere)!r})\nprint(os.getcwd())"), ("Done.", "SUBMIT(result='ok')")]
    run = DeepAgent(lm=ScriptedLM(steps), workspace=tmp_path / "ws", max_depth=0).run("move", namespace={})
    assert run.status == "finished"
    assert str(elsewhere) in run.steps[0].output
    assert os.getcwd() == str(here)
    assert run.config["moved_cwd"] == str(elsewhere)


def test_a_run_that_deletes_the_folder_it_moved_to_still_leaves_the_process_where_it_was(here, tmp_path):
    steps = [("Move into a scratch folder, then delete it.",
              f"import os, shutil\nos.makedirs({str(tmp_path / 'scratch')!r})\nos.chdir({str(tmp_path / 'scratch')!r})\n"
              f"shutil.rmtree({str(tmp_path / 'scratch')!r})"),
             ("Done.", "SUBMIT(result='ok')")]
    run = DeepAgent(lm=ScriptedLM(steps), workspace=tmp_path / "ws", max_depth=0).run("scratch", namespace={})
    assert run.status == "finished", run.error
    assert os.getcwd() == str(here)
    assert run.config["moved_cwd"] == "a folder since deleted"


def test_a_run_that_stays_put_records_nothing(here, tmp_path):
    run = DeepAgent(lm=ScriptedLM([("Done.", "SUBMIT(result='ok')")]), workspace=tmp_path / "ws",
                    max_depth=0).run("stay", namespace={})
    assert run.status == "finished" and "moved_cwd" not in run.config


def test_the_magic_says_the_directory_was_put_back(ip, here, tmp_path, capsys):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    ip.user_ns["lm"] = ScriptedLM([("Move.", f"import os\nos.chdir({str(elsewhere)!r})"), ("Done.", "SUBMIT(result='ok')")])
    ip.run_cell_magic("deepagent", "--lm lm --max-depth 0", "move")
    assert os.getcwd() == str(here)
    said = capsys.readouterr().out
    assert f"the agent changed the working directory (to {elsewhere}); it is back at {here}" in said


def test_a_run_given_a_working_directory_runs_every_step_there_and_says_so(here, tmp_path):
    workspace = tmp_path / "task"
    workspace.mkdir()
    (workspace / "data.csv").write_text("a\n1\n2\n3\n")
    seen = []

    def policy(request):
        seen.append(request.user)  # what the run has: said in each request
        if len(seen) == 1:
            return ("Read the file.", "import os, pandas as pd\nprint(os.getcwd())\nprint(len(pd.read_csv('data.csv')))")
        return ("Done.", "SUBMIT(result='3')")

    run = DeepAgent(lm=ScriptedLM(policy), max_depth=0).run("count", namespace={}, workspace=workspace, cwd=workspace)
    assert run.status == "finished", run.error
    assert run.steps[0].output.splitlines() == [str(workspace), "3"]
    assert f"Workspace (working directory): {workspace}\n" in seen[0]
    assert os.getcwd() == str(here)


def test_runs_at_once_each_step_in_its_own_folder(here, tmp_path):
    """The working directory belongs to the process: two runs in two threads must not see each other's."""
    outputs = {}

    def one(name):
        folder = tmp_path / name
        folder.mkdir()
        steps = [(f"Step {n}.", f"import os, time\ntime.sleep(0.02)\nprint({n}, os.path.basename(os.getcwd()))")
                 for n in range(6)] + [("Done.", "SUBMIT(result='ok')")]
        run = DeepAgent(lm=ScriptedLM(steps), max_depth=0, max_iters=10).run(name, namespace={}, workspace=folder,
                                                                             cwd=folder)
        outputs[name] = [step.output for step in run.steps[:-1]]

    threads = [threading.Thread(target=one, args=(name,)) for name in ("left", "right")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    for name in ("left", "right"):
        assert outputs[name] == [f"{n} {name}" for n in range(6)]
    assert os.getcwd() == str(here)


def test_a_step_stopped_by_the_time_limit_still_goes_back(here, tmp_path):
    workspace = tmp_path / "task"
    workspace.mkdir()
    steps = [("Spin.", "while True:\n    pass"), ("Done.", "import os\nSUBMIT(result=os.getcwd())")]
    run = DeepAgent(lm=ScriptedLM(steps), max_depth=0, timeout=1).run("spin", namespace={}, workspace=workspace,
                                                                      cwd=workspace)
    assert "TimeoutError" in run.steps[0].output
    assert run.result == str(workspace)  # the next step ran in its folder again
    assert os.getcwd() == str(here)
