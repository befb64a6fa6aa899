"""core/policy/steering.py: the run tree's inbox: stop after this step, notes shown from the next step on, todos
replaced at the next boundary (through a real run: tests/adversarial/test_steering.py)."""

from __future__ import annotations

import pytest
from dspy.primitives.repl_types import REPLEntry, REPLHistory

from deepagent_magics.core.policy.steering import (
    MAX_NOTE_CHARS,
    NOTES_HEAD,
    NotedHistory,
    StopRequested,
    before_step,
    check_stop,
    check_todos,
    steering_of,
)
from deepagent_magics.core.run.run import Run
from deepagent_magics.core.run.session import Session
from deepagent_magics.core.workspace.workspace import Workspace


def session(tmp_path, run=None):
    return Session(run or Run("t"), Workspace(tmp_path))


def test_the_inbox_is_the_trees_one_made_on_first_use():
    root = Run("root")
    child = root.add_child("sub")
    assert steering_of(root) is None
    inbox = steering_of(child, create=True)
    assert steering_of(root) is inbox and steering_of("not a run") is None


def test_a_stop_is_raised_before_the_next_step_of_any_agent_of_the_tree(tmp_path):
    root = Run("root")
    root.begin_step("r", "c")
    child = root.add_child("sub")
    check_stop(session(tmp_path, root))
    steering_of(root, create=True).request_stop()
    with pytest.raises(StopRequested, match="stopped by the user after step 1"):
        check_stop(session(tmp_path, root))
    with pytest.raises(StopRequested):
        check_stop(session(tmp_path, child))


def test_notes_reach_the_root_from_its_next_step_on_after_its_history(tmp_path):
    root = Run("root")
    inbox = steering_of(root, create=True)
    assert not inbox.send_note("   ")
    assert inbox.send_note("use the 2023 numbers " + "x" * MAX_NOTE_CHARS)
    history = REPLHistory(entries=[REPLEntry(reasoning="r", code="print(1)", output="1")])
    kwargs = before_step(session(tmp_path, root), {"repl_history": history, "other": 1})
    shown = kwargs["repl_history"]
    assert isinstance(shown, NotedHistory) and kwargs["other"] == 1
    text = shown.format()
    assert text.startswith(history.format()) and NOTES_HEAD in text and "- use the 2023 numbers" in text
    assert len(inbox.notes[0]) == MAX_NOTE_CHARS and inbox.notes[0].endswith("…")
    assert root.config["user_notes"][0]["step"] == 1
    again = before_step(session(tmp_path, root), {"repl_history": history})
    assert NOTES_HEAD in again["repl_history"].format()  # every request after it shows it


def test_todo_edits_replace_the_roots_list_once_and_a_sub_agent_sees_neither(tmp_path):
    root = Run("root")
    child = root.add_child("sub")
    inbox = steering_of(root, create=True)
    inbox.edit_todos([{"content": " check totals ", "status": "in_progress"}])
    inbox.send_note("n")
    assert before_step(session(tmp_path, child), {"x": 1}) == {"x": 1}
    before_step(session(tmp_path, root), {})
    assert root.todos == [{"content": "check totals", "status": "in_progress"}]
    assert inbox.take_todos() is None


@pytest.mark.parametrize("todos, says", [("x", "must be a list"), ([{"content": ""}], "non-empty"),
                                         ([{"content": "a", "status": "doing"}], "has status 'doing'")])
def test_a_malformed_todo_list_is_one_line(todos, says):
    with pytest.raises(ValueError, match=says):
        check_todos(todos)
