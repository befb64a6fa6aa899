"""tools/tool_call.py: every built-in tool's call recorded on the run, its mistakes an ``Error:`` string, a stop and
a cap still ending the run (every tool with hostile arguments: tests/adversarial/test_tools_never_raise.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from deepagent_magics.core.policy.spend import CapReached
from deepagent_magics.core.run.run import Run
from deepagent_magics.core.run.secrets import register_secret
from deepagent_magics.core.run.session import Session, activate, deactivate
from deepagent_magics.core.run.stopping import StopRun
from deepagent_magics.core.workspace.workspace import Workspace, WorkspaceError
from deepagent_magics.tools.tool_call import MESSAGE_CHARS, tool


@pytest.fixture
def session(tmp_path):
    made = Session(Run("t"), Workspace(tmp_path))
    calls = []
    made.run.subscribe(lambda event: calls.append(event.data) if event.kind == "tool_call" else None)
    made.calls = calls
    token = activate(made)
    yield made
    deactivate(token)


@tool
def fine(x=1):
    return x * 2


@tool
def failing(kind="value"):
    raise {"value": ValueError("bad value"), "workspace": WorkspaceError("Error: 'x' is outside the workspace"),
           "other": KeyError("k"), "long": ValueError("y" * 5000), "stop": StopRun("stopped"),
           "cap": CapReached("cap")}[kind]


def test_a_call_is_recorded_and_its_value_returned(session):
    assert fine(x=4) == 8
    assert session.calls == [{"name": "fine", "args": {"x": "4"}, "error": None}]


@pytest.mark.parametrize("kind, message", [("value", "Error: bad value"),
                                           ("workspace", "Error: 'x' is outside the workspace"),
                                           ("other", "Error: KeyError: 'k'")])
def test_an_error_comes_back_as_text_and_is_recorded(session, kind, message):
    assert failing(kind=kind) == message
    assert session.calls[-1]["error"] == message


def test_long_messages_are_bounded_and_a_stop_or_cap_still_ends_the_run(session):
    assert len(failing(kind="long")) == MESSAGE_CHARS
    with pytest.raises(StopRun):
        failing(kind="stop")
    with pytest.raises(CapReached):
        failing(kind="cap")


def test_a_writing_tool_is_refused_to_a_read_only_agent(session):
    @tool
    def scribble():
        raise AssertionError("a read-only agent's call ran")

    scribble.writes = True
    session.agent = SimpleNamespace(read_only=True)
    assert scribble().startswith("Error: scribble() is not available to you: your tools only read.")


def test_arguments_are_recorded_short_and_without_secrets(session):
    register_secret("tool-call-secret-8642097531")
    fine(x="tool-call-secret-8642097531 " + "z" * 500)
    recorded = session.calls[-1]["args"]["x"]
    assert "tool-call-secret" not in recorded and len(recorded) <= 80 and recorded.endswith("...")
    fine(x="z" * 71 + "tool-call-secret-8642097531")  # cut at 77: six characters of it would be left
    assert "tool-c" not in session.calls[-1]["args"]["x"]
    fine(x=list(range(10 ** 6)))
    assert len(session.calls[-1]["args"]["x"]) <= 80
