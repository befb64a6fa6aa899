"""tools/history.py: every step of the run in full, also those compaction summarised in the prompt."""

from __future__ import annotations

from deepagent_magics.core.run.run import Run
from deepagent_magics.core.run.session import Session, activate, deactivate
from deepagent_magics.core.workspace.workspace import Workspace
from deepagent_magics.tools.history import HISTORY, history


def test_steps_come_back_whole_by_number(tmp_path):
    run = Run("t")
    for number in (1, 2, 3):
        run.begin_step(f"r{number}", f"print({number})")
        run.end_step(str(number) * 10_000)
    token = activate(Session(run, Workspace(tmp_path)))
    try:
        assert [entry["step"] for entry in history()] == [1, 2, 3]
        assert history(2, 2) == [{"step": 2, "reasoning": "r2", "code": "print(2)", "output": "2" * 10_000}]
        assert [entry["step"] for entry in history(0, 99)] == [1, 2, 3]
        assert history(4) == []
        assert history("x").startswith("Error:")  # a bad argument is text the agent reads
    finally:
        deactivate(token)
    assert "history() returns every step in full" in HISTORY.notes.values()
