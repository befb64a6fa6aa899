"""core/run/session.py: the session a run's tools act on, found from any context the interpreter set; one run at a
time per namespace (hostile timings: tests/adversarial/test_one_run_per_namespace.py)."""

from __future__ import annotations

import contextvars
import threading

import pytest

from deepagent_magics.core.run.run import Run
from deepagent_magics.core.run.session import (
    NamespaceBusy,
    Session,
    activate,
    active,
    claim,
    current,
    deactivate,
    release,
)
from deepagent_magics.core.workspace.workspace import Workspace
from deepagent_magics.errors import UserError


def test_a_tool_called_outside_a_run_is_told_so(tmp_path):
    assert active() is None
    with pytest.raises(RuntimeError, match="can only be called by an agent's code during a run"):
        current()


def test_the_session_is_current_where_it_was_activated_and_in_copies_of_that_context(tmp_path):
    session = Session(Run("t"), Workspace(tmp_path))
    token = activate(session)
    try:
        assert current() is session
        seen = []
        context = contextvars.copy_context()
        thread = threading.Thread(target=lambda: seen.append(context.run(active)))
        thread.start()
        thread.join()
        assert seen == [session]
        bare = []
        other = threading.Thread(target=lambda: bare.append(active()))  # a thread started without the context
        other.start()
        other.join()
        assert bare == [None]
    finally:
        deactivate(token)
    assert active() is None
    assert not session.cancelled.is_set() and session.cwd is None


def test_one_run_at_a_time_per_namespace():
    namespace, first, second = {}, Run("first"), Run("second")
    claim(namespace, first)
    try:
        with pytest.raises(NamespaceBusy, match=f"another agent run \\({first.id}, pending\\) is using this namespace"):
            claim(namespace, second)
        claim({}, second)  # another namespace (an equal dict is not the same namespace)
        release(namespace, second)  # not its claim: nothing happens
        with pytest.raises(NamespaceBusy):
            claim(namespace, second)
    finally:
        release(namespace, first)
    claim(namespace, second)
    release(namespace, second)
    assert issubclass(NamespaceBusy, UserError) and issubclass(NamespaceBusy, RuntimeError)
