"""One way a run is stopped, and the root's cancel signal (issue 11 follow-up).

Every way a run ends early (the user's stop button, the user's ``q`` at an approval question, a spend
cap, the time cap, an interrupt, a failure) ends the root run through one path, and sets the root
session's ``cancelled`` event, so a long tool walk the agent started in a thread of its own (a ``grep``
over a huge tree) stops early, as a sub-agent's already does when its kernel is stopped.

The "huge tree" is a real tree of files whose opening is slowed (a network drive): walked to the end
it takes about half a minute; the tests give a stopped walk a generous 10 s to notice.
"""

from __future__ import annotations

import threading
import time

import pytest

from deepagent_magics import DeepAgent
from deepagent_magics.core.workspace import safe_fs
from deepagent_magics.core.run.run import Run
from deepagent_magics.core.policy.steering import StopRequested, steering_of
from deepagent_magics.core.run.stopping import StopRun
from deepagent_magics.testing import ScriptedLM

FILES = 600
PER_FILE = 0.05  # seconds each file takes to open: the whole walk takes FILES * PER_FILE = 30 s
NOTICE = 10.0  # generous: a stopped walk ends well within this (uncancelled it takes 30 s)

START_WALK = """import threading, time
walk = {}
def _walk():
    walk['result'] = grep('needle')
    walk['ended'] = time.monotonic()
walker = threading.Thread(target=_walk, daemon=True)
walker.start()
print('walk started')"""


@pytest.fixture
def huge_tree(tmp_path, monkeypatch):
    """A workspace of FILES files, each slow to open; the slowness ends when the test does."""
    for d in range(FILES // 50):
        folder = tmp_path / f"d{d:02d}"
        folder.mkdir()
        for f in range(50):
            (folder / f"f{f:02d}.txt").write_text("haystack\n")
    done = threading.Event()
    real_open = safe_fs.open_regular

    def slow_open(dir_fd: int, name: str) -> int:
        done.wait(PER_FILE)
        return real_open(dir_fd, name)

    monkeypatch.setattr(safe_fs, "open_regular", slow_open)
    yield tmp_path
    done.set()


def wait_for_walk(namespace: dict) -> str:
    walker = namespace["walker"]
    walker.join(NOTICE)
    assert not walker.is_alive(), "the agent's grep kept walking after its run ended"
    return namespace["walk"]["result"]


# --------------------------------------------------------------------------- one exception, one path
def test_the_stop_button_and_approvals_q_are_one_exception():
    """The stop button's exception is approval's: one type, so one clause in the agent ends both."""
    assert issubclass(StopRequested, StopRun)


# --------------------------------------------------------------------------- each ending cancels the walk
def test_the_stop_button_cancels_a_grep_the_agent_left_running(huge_tree):
    run = Run("walk")
    namespace = {"inbox": steering_of(run, create=True)}
    steps = [("Walk.", START_WALK), ("Stop.", "inbox.request_stop()"), ("More.", "x = 1")]
    DeepAgent(lm=ScriptedLM(steps), workspace=huge_tree).run("walk", namespace=namespace, run=run)
    assert run.status == "stopped" and "stopped by the user after step 2" in run.error
    assert "walk started" in run.steps[0].output
    assert "stopped: the run was cancelled" in wait_for_walk(namespace)


def test_approvals_q_cancels_a_grep_the_agent_left_running(huge_tree):
    def policy(proposal):
        return "q" if "second" in proposal.code else "y"

    steps = [("Walk.", START_WALK), ("Again.", "second = 2"), ("More.", "x = 1")]
    namespace: dict = {}
    run = DeepAgent(lm=ScriptedLM(steps), workspace=huge_tree, approve=policy).run("walk", namespace=namespace)
    assert run.status == "stopped" and "stopped by the user" in run.error
    assert "second" not in namespace  # the refused block did not run
    assert "stopped: the run was cancelled" in wait_for_walk(namespace)


def test_a_token_cap_cancels_a_grep_the_agent_left_running(huge_tree):
    steps = [("Walk.", START_WALK), ("More.", "x = 1"), ("More.", "y = 2")]
    namespace: dict = {}
    lm = ScriptedLM(steps, replies="", tokens=(100, 0))
    run = DeepAgent(lm=lm, workspace=huge_tree, max_tokens=150).run("walk", namespace=namespace)
    assert run.status == "budget_exhausted" and "token cap is reached" in run.error
    assert "stopped: the run was cancelled" in wait_for_walk(namespace)


def test_a_cap_that_still_lets_the_agent_answer_cancels_the_walk_too(huge_tree):
    steps = [("Walk.", START_WALK), ("More.", "x = 1"), ("More.", "y = 2")]
    namespace: dict = {}
    lm = ScriptedLM(steps, replies="What I have so far.", tokens=(100, 0))
    run = DeepAgent(lm=lm, workspace=huge_tree, max_tokens=150).run("walk", namespace=namespace)
    assert run.status == "finished" and run.config["spend"]["reached"]  # answered from what it had
    assert "stopped: the run was cancelled" in wait_for_walk(namespace)


def test_the_time_cap_cancels_a_grep_the_agent_left_running(huge_tree):
    steps = [("Walk.", START_WALK), ("Wait.", "import time\ntime.sleep(1.0)"), ("More.", "x = 1")]
    namespace: dict = {}
    run = DeepAgent(lm=ScriptedLM(steps, replies=""), workspace=huge_tree, max_time=0.5).run("walk",
                                                                                               namespace=namespace)
    assert run.status == "budget_exhausted" and "time cap is reached" in run.error
    assert "stopped: the run was cancelled" in wait_for_walk(namespace)


def test_an_interrupt_cancels_a_grep_the_agent_left_running(huge_tree):
    steps = [("Walk.", START_WALK), ("Interrupt.", "raise KeyboardInterrupt"), ("More.", "x = 1")]
    namespace: dict = {}
    run = Run("walk")
    with pytest.raises(KeyboardInterrupt):
        DeepAgent(lm=ScriptedLM(steps), workspace=huge_tree).run("walk", namespace=namespace, run=run)
    assert run.status == "interrupted"
    assert "stopped: the run was cancelled" in wait_for_walk(namespace)


def test_a_failed_run_cancels_a_grep_the_agent_left_running(huge_tree):
    calls = []

    def policy(request):
        calls.append(1)
        if len(calls) > 1:
            raise ConnectionError("the provider went away")
        return ("Walk.", START_WALK)

    namespace: dict = {}
    run = DeepAgent(lm=ScriptedLM(policy), workspace=huge_tree).run("walk", namespace=namespace)
    assert run.status == "failed" and "provider went away" in run.error
    assert "stopped: the run was cancelled" in wait_for_walk(namespace)


def test_a_run_stopped_while_the_walk_starts_still_cancels_it(huge_tree):
    """The stop and the walk in the same step: the walk is started after the stop was asked for."""
    run = Run("walk")
    namespace = {"inbox": steering_of(run, create=True)}
    steps = [("Stop, then walk.", "inbox.request_stop()\n" + START_WALK), ("More.", "x = 1")]
    DeepAgent(lm=ScriptedLM(steps), workspace=huge_tree).run("walk", namespace=namespace, run=run)
    assert run.status == "stopped"
    assert "stopped: the run was cancelled" in wait_for_walk(namespace)


def test_a_glob_the_agent_left_running_is_cancelled_too(huge_tree, monkeypatch):
    real_entries = safe_fs.entries
    done = threading.Event()

    def slow_entries(dir_fd):  # each folder slow to list: 13 folders, 32 s
        done.wait(2.5)
        return real_entries(dir_fd)

    monkeypatch.setattr(safe_fs, "entries", slow_entries)
    code = START_WALK.replace("grep('needle')", "glob('**/*.txt')")
    run = Run("walk")
    namespace = {"inbox": steering_of(run, create=True)}
    steps = [("Walk.", code), ("Stop.", "inbox.request_stop()"), ("More.", "x = 1")]
    DeepAgent(lm=ScriptedLM(steps), workspace=huge_tree).run("walk", namespace=namespace, run=run)
    assert run.status == "stopped"
    walker = namespace["walker"]
    walker.join(NOTICE)
    done.set()
    assert not walker.is_alive(), "the agent's glob kept walking after its run ended"
    assert len(namespace["walk"]["result"]) < FILES


# --------------------------------------------------------------------------- what is not cancelled
def test_a_run_that_finishes_leaves_the_agents_own_background_work_alone(huge_tree):
    """Only an early ending cancels: an agent that answered may have started work meant to go on."""
    steps = [("Walk.", START_WALK), ("Done.", "SUBMIT(result='started')")]
    namespace: dict = {}
    run = DeepAgent(lm=ScriptedLM(steps), workspace=huge_tree).run("walk", namespace=namespace)
    assert run.status == "finished"
    time.sleep(0.5)
    assert namespace["walker"].is_alive()  # still walking (the fixture's teardown lets it finish fast)
