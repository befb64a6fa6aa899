"""records/checkpoint_replay.py: a checkpoint's unpicklable variables rebuilt by running their recorded code again,
in a scratch namespace of copies, silently; only the names asked for come back."""

from __future__ import annotations

import math

from deepagent_magics.records.checkpoint_replay import recorded_code, replay, shown


def test_recorded_code_keeps_only_well_formed_steps():
    runs = [{"run": "r1", "code": ["a = 1", "  ", 3, "b = a + 1"]}, {"run": "r2"}, "junk",
            {"run": "x" * 200, "code": ["c = 2"]}]
    assert recorded_code(runs) == [("r1", "a = 1"), ("r1", "b = a + 1"), ("x" * 80, "c = 2")]
    assert recorded_code({"not": "a list"}) == []


def test_the_user_is_shown_each_step_under_its_run():
    assert shown([("r1", "a = 1\n"), ("r1", "b = 2"), ("r2", "c = 3")]) == (
        "# --- recorded by run r1\na = 1\nb = 2\n# --- recorded by run r2\nc = 3")


def test_the_code_runs_on_copies_and_only_the_wanted_names_come_back():
    namespace = {"orders": [1, 2], "math": math}
    steps = [("r1", "orders.append(-99)\ntotal = sum(orders)\nroot = math.sqrt(16)\nscratch = 5")]
    made = replay(steps, namespace, {"total", "root", "missing"})
    assert made == {"total": -96, "root": 4.0}
    assert namespace == {"orders": [1, 2], "math": math}  # the user's list was copied, not changed


def test_submit_ends_that_runs_replay_and_a_failing_step_does_not_stop_the_next(capsys):
    steps = [("r1", "a = 1\nprint('noise')"), ("r1", "SUBMIT(result=a)"), ("r1", "a = 'after submit'"),
             ("r2", "1 / 0"), ("r2", "b = a + 1")]
    assert replay(steps, {}, {"a", "b"}) == {"a": 1, "b": 2}
    assert capsys.readouterr().out == ""  # replayed code prints nothing into the cell
