"""tools/todos.py: the agent's plan on the run, checked, and shown to read-only agents as unavailable to write."""

from __future__ import annotations

import pytest

from deepagent_magics.core.run.run import Run
from deepagent_magics.core.run.session import Session, activate, deactivate
from deepagent_magics.core.workspace.workspace import Workspace
from deepagent_magics.tools.todos import TODO_LINES, read_todos, write_todos


@pytest.fixture
def run(tmp_path):
    made = Run("plan")
    token = activate(Session(made, Workspace(tmp_path)))
    yield made
    deactivate(token)


def test_the_plan_is_written_on_the_run_and_read_back(run):
    seen = []
    run.subscribe(lambda event: seen.append(event.kind))
    assert write_todos(todos=[{"content": "load", "status": "completed"}, {"content": "plot"}]) == (
        "Todo list updated: 2 items, 1 completed.")
    assert run.todos == [{"content": "load", "status": "completed"}, {"content": "plot", "status": "pending"}]
    assert read_todos() == run.todos and read_todos() is not run.todos
    assert "todos" in seen


def test_a_json_string_is_a_plan_too(run):
    write_todos(todos='[{"content": "a", "status": "in_progress"}]')
    assert run.todos == [{"content": "a", "status": "in_progress"}]


@pytest.mark.parametrize("todos, says", [("{not json", "not valid JSON"), ({"content": "a"}, "must be a list"),
                                         ([{"status": "pending"}], 'must be a dict with "content"'),
                                         ([{"content": "a", "status": "doing"}], "has status 'doing'")])
def test_a_bad_plan_is_an_error_string_and_changes_nothing(run, todos, says):
    write_todos(todos=[{"content": "kept"}])
    message = write_todos(todos=todos)
    assert message.startswith("Error:") and says in message
    assert run.todos == [{"content": "kept", "status": "pending"}]


def test_the_plan_heads_the_tool_list():
    assert TODO_LINES["write_todos"].order <= min(line.order for line in TODO_LINES.values())
    assert write_todos.writes is True
