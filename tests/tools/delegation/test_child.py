"""tools/delegation/child.py: one sub-agent on a host thread: its outcome, its stop, its time limit (the child's own
agent here runs in a shell interpreter, so no kernel is needed; with kernels: tests/tools/delegation/test_subagents.py)."""

from __future__ import annotations

import threading
import time

from deepagent_magics import DeepAgent, ScriptedLM
from deepagent_magics.core.run.run import Run
from deepagent_magics.tools.delegation.child import STOP_GRACE, Child
from deepagent_magics.tools.delegation.tree import Spec


def child_of(tmp_path, steps, timeout=None):
    parent = Run("parent")
    parent.begin_step("Delegate.", "delegate(...)")
    child = Child(Spec("count to three", "context given"), 0, timeout=timeout)
    child.agent = DeepAgent(lm=ScriptedLM(steps), workspace=tmp_path)
    child.run = parent.add_child(child.spec.task)
    return child


def test_a_child_that_submits_gives_what_its_run_finished_with(tmp_path):
    child = child_of(tmp_path, [("Count.", "SUBMIT(result={'count': 3})")])
    wake = threading.Event()
    child.start(wake)
    assert wake.wait(30) and child.done.is_set()
    outcome = child.outcome()
    assert outcome.ok and outcome.value is child.run.result and "'count': 3" in outcome.text
    assert child.run.status == "finished" and child.run.parent_step == 1


def test_a_child_stopped_before_it_started_is_interrupted_or_failed_with_the_message(tmp_path):
    child = child_of(tmp_path, [("x", "SUBMIT(result=1)")])
    child.stop(None)
    child.start(threading.Event())
    child.thread.join(10)
    assert child.run.status == "interrupted" and child.outcome().text == "Error: the sub-agent was interrupted."
    other = child_of(tmp_path, [("x", "SUBMIT(result=1)")])
    other.stop("the parent stopped")
    other.start(threading.Event())
    other.thread.join(10)
    assert other.run.status == "failed" and "the parent stopped" in other.run.error


def test_past_its_time_a_child_is_stopped_then_abandoned_and_says_so(tmp_path):
    child = child_of(tmp_path, [], timeout=1.0)
    child.started_at = time.monotonic() - 5
    child.enforce_timeout(time.monotonic())
    assert child.stopped and child.hard and child.timed_out
    child.enforce_timeout(time.monotonic() + STOP_GRACE)
    assert child.done.is_set() and child.run.status == "failed"
    assert child.outcome().text == ("Error: the sub-agent ran past its time limit of 1 s and was stopped; its files "
                                    "in the workspace are kept.")


def test_a_stop_reaches_the_childs_own_children(tmp_path):
    parent, grandchild = child_of(tmp_path, []), child_of(tmp_path, [])
    parent.adopt(grandchild)
    parent.stop("stopped by the user", hard=True)
    assert grandchild.stopped and grandchild.stop_message == "stopped by the user"
    late = child_of(tmp_path, [])
    parent.adopt(late)  # adopted after the stop: stopped at once
    assert late.stopped
