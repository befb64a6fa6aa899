"""The dashboard's steering controls, without a browser: the todo text format, what each handler
posts to the run's inbox, and what is shown where a kernel cannot handle clicks mid-cell."""

from __future__ import annotations

import pytest

from deepagent_magics.core.run.run import Run
from deepagent_magics.core.policy.steering import steering_of
from deepagent_magics.display.controls import (
    SteeringControls,
    parse_todos_text,
    todos_text,
)


def test_the_todo_text_round_trips_and_reads_what_people_type():
    todos = [{"content": "load", "status": "completed"}, {"content": "plot", "status": "in_progress"},
             {"content": "write", "status": "pending"}]
    assert parse_todos_text(todos_text(todos)) == todos
    typed = "* [X] load\n\n   plain line  \n- [] empty box\n- [>] doing\n[ ] no dash\n- [?] odd box"
    assert parse_todos_text(typed) == [
        {"content": "load", "status": "completed"}, {"content": "plain line", "status": "pending"},
        {"content": "empty box", "status": "pending"}, {"content": "doing", "status": "in_progress"},
        {"content": "no dash", "status": "pending"}, {"content": "[?] odd box", "status": "pending"}]


@pytest.fixture
def controls(ip):
    return SteeringControls(Run("t"))


def test_without_kernel_subshells_the_controls_are_not_offered_and_a_line_says_why(controls):
    assert controls.live is False
    assert controls.step_controls.children == (controls.feedback,) and controls.todo_editor.children == ()
    assert "need a kernel with subshells" in controls.feedback.value


def test_each_handler_posts_to_the_inbox_and_says_so(controls):
    inbox = steering_of(controls.run)
    controls.note.value = "  "
    controls._on_send()
    assert "empty" in controls.feedback.value and inbox.take_notes() == []
    controls.note.value = "<script>alert(1)</script> use the median"
    controls._on_send()
    assert "<script>" not in controls.feedback.value and controls.note.value == ""
    assert inbox.take_notes() == ["<script>alert(1)</script> use the median"]

    controls.todos.value = "- [x] load\n- [ ] plot"
    controls._on_apply()
    assert inbox.take_todos() == [{"content": "load", "status": "completed"}, {"content": "plot", "status": "pending"}]
    assert "2 items applied" in controls.feedback.value

    controls._on_stop()
    assert inbox.stop.is_set() and controls.stop.disabled


def test_the_agents_todos_fill_the_editor_unless_the_user_is_editing(controls):
    controls.show_todos([{"content": "load", "status": "in_progress"}])
    assert controls.todos.value == "- [~] load"
    controls.todos.value = "- [x] load\n- [ ] my own item"  # the user is typing
    controls.show_todos([{"content": "load", "status": "completed"}])
    assert controls.todos.value == "- [x] load\n- [ ] my own item"
    controls._on_apply()
    controls.show_todos([{"content": "next", "status": "pending"}])  # applied: the agent's list shows again
    assert controls.todos.value == "- [ ] next"
    controls.close()
    assert controls.stop.disabled and controls.send.disabled and controls.apply.disabled
