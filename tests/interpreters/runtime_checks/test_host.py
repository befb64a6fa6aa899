"""interpreters/runtime_checks/host.py: which of the root agent's steps are watched: only those of a run tree that
asks for approval or has spend caps."""

from __future__ import annotations

import contextlib

from deepagent_magics.core.policy.approval import Approver, attach
from deepagent_magics.core.policy.spend import SpendBudget
from deepagent_magics.core.run.run import Run
from deepagent_magics.interpreters.runtime_checks.host import step_scope


def away():
    return contextlib.nullcontext()


def test_a_run_without_approval_or_caps_registers_nothing():
    run = Run("t")
    assert step_scope(run, "x = 1", away) is None
    attach(run, Approver(policy="never"))
    assert step_scope(run, "x = 1", away) is None
    run.spend = SpendBudget()  # no cap set
    assert step_scope(run, "x = 1", away) is None


def test_caps_alone_follow_the_step_and_ask_nothing():
    run = Run("t")
    run.spend = SpendBudget(max_tokens=100)
    scope = step_scope(run, "x = 1", away)
    assert scope["ask"] is None and scope["run"] is run


def test_approval_asks_through_the_runs_approver_and_a_finished_run_asks_no_one(tmp_path):
    run = Run("t")
    run.start()
    run.begin_step("r", "open('/etc/x', 'w')")
    attach(run, Approver(policy=lambda proposal: "n not there", workspace=str(tmp_path)))
    scope = step_scope(run, "open('/etc/x', 'w')", away)
    assert scope["workspace"] == str(tmp_path) and "writes_outside_workspace" in scope["rules"]
    refusal = scope["ask"]({"rule": "writes_outside_workspace", "action": "write /etc/x? outside the workspace"})
    assert refusal.startswith("Not allowed: the user's approval policy refused this action")
    run.finish("finished")
    assert "the run that started this code has ended" in scope["ask"]({"rule": "network", "action": "x"})
