"""core/policy/approval.py: the user's policy decides whether a block runs; the user is asked with the ``input`` of
the run's start; each decision recorded (the hostile and kernel cases: tests/adversarial/test_approval*.py)."""

from __future__ import annotations

import io

import pytest

from deepagent_magics.core.policy.approval import (
    Approver,
    Decision,
    approved_rules,
    attach,
    check_policy,
    review,
    review_action,
    waited,
)
from deepagent_magics.core.run.run import Run
from deepagent_magics.core.run.stopping import StopRun
from deepagent_magics.errors import InvalidValue

RISKY = "import shutil\nshutil.rmtree('data')"


def approver(policy="risky", answers=(), **kwargs):
    given = list(answers)
    asked = []

    def ask(prompt):
        asked.append(prompt)
        return given.pop(0)

    made = Approver(policy=policy, ask=ask if answers else None, out=io.StringIO(), **kwargs)
    made.asked = asked
    return made


def running():
    run = Run("t")
    run.start()
    run.begin_step("r", RISKY)
    return run


@pytest.mark.parametrize("answer, action, reason", [
    ("y", "run", ""), (" Yes ", "run", ""), ("n too risky", "refuse", "too risky"), ("a", "all", ""), ("q", "quit", ""),
    (True, "run", ""), (False, "refuse", ""), ("maybe", None, None), ("y but", None, None), (3, None, None)])
def test_answers_read_as_decisions(answer, action, reason):
    decision = Decision.parse(answer)
    assert (decision.action, decision.reason) == (action, reason) if action else decision is None


def test_never_asks_nothing_and_risky_asks_only_for_a_risky_block():
    run = running()
    assert approver("never").review(run, RISKY) is None
    quiet = approver("risky", answers=["n"])
    assert quiet.review(run, "x = 1") is None and quiet.asked == []
    assert quiet.review(run, RISKY).startswith("Not run: the user refused this block")
    assert run.approvals[-1]["decision"] == "refused" and run.approvals[-1]["who"] == "user"


def test_an_unreadable_answer_is_asked_again_then_the_answer_counts():
    run = running()
    made = approver("always", answers=["what?", "y"])
    assert made.review(run, "x = 1") is None
    assert len(made.asked) == 2 and approved_rules(run) == frozenset()
    made2 = approver("risky", answers=["y"])
    attach(run, made2)
    assert review(run, RISKY) is None and approved_rules(run) == {"removes_files"}


def test_all_approves_the_rest_and_quit_stops_the_run():
    run = running()
    made = approver("always", answers=["a"])
    assert made.review(run, "x = 1") is None and made.review(run, "y = 2") is None and len(made.asked) == 1
    assert [entry["who"] for entry in run.approvals] == ["user", "approve-all"]
    quitting = approver("always", answers=["q"])
    with pytest.raises(StopRun, match="stopped by the user at the agent's step 1"):
        quitting.review(run, "x = 1")
    with pytest.raises(StopRun):
        quitting.review(run, "y = 2")  # stays stopped


def test_without_stdin_the_block_is_refused_at_once():
    run = running()
    made = approver("always")
    assert "no one can answer here (no stdin" in made.review(run, "x = 1")
    assert "there is no stdin to ask on: refused" in made.out.getvalue()


def test_a_policy_function_decides_and_a_broken_one_refuses_with_a_line():
    run = running()
    assert approver(lambda proposal: "n not today").review(run, RISKY).endswith(
        "Reason given: not today. Nothing in it ran; do not retry it unchanged.")
    broken = approver(lambda proposal: 1 / 0)
    assert "the approval policy raised ZeroDivisionError" in broken.review(run, RISKY)
    assert "your approval policy raised ZeroDivisionError" in broken.out.getvalue()
    assert "returned 'perhaps', not a decision" in approver(lambda proposal: "perhaps").review(run, RISKY)


def test_a_runtime_action_is_asked_under_every_policy_but_never_for_enabled_rules():
    run = running()
    assert approver("never").review_action(run, "network", "connect x?") is None
    made = approver(lambda proposal: False, rules=frozenset({"network"}))
    assert made.review_action(run, "removes_files", "remove x?") is None
    attach(run, made)
    assert review_action(run, "network", "connect evil.example:443?").startswith("Not allowed")
    assert run.approvals[-1]["action"] == "connect evil.example:443?"


def test_time_waiting_for_the_user_is_counted_on_the_asking_run_and_its_parents():
    root = running()
    child = root.add_child("sub")
    child.start()
    child.begin_step("r", RISKY)
    made = approver("always", answers=["y"])
    made.review(child, "x = 1")
    assert child.waited_seconds > 0 and root.waited_seconds == child.waited_seconds
    child.waiting_since = 100.0
    assert waited(child, now=103.0) == pytest.approx(child.waited_seconds + 3.0)


def test_a_policy_must_be_one():
    assert check_policy("risky") == "risky"
    with pytest.raises(InvalidValue, match="unknown approval policy 'sometimes'"):
        check_policy("sometimes")
