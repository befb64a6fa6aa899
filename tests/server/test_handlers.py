"""server/handlers.py: what a run's summary holds, and a planted record's paths never looked up outside its workspace
(the handlers on a real Jupyter Server: tests/server/test_run_api.py)."""

from __future__ import annotations

from deepagent_magics.server.handlers import RUN_ID, _inside_file, summary


def test_a_summary_is_the_records_head_and_its_number_of_steps():
    record = {"id": "r1", "task": "t", "status": "finished", "steps": [{}, {}], "config": {"secret": "x"},
              "result": "42"}
    assert summary(record) == {"id": "r1", "task": "t", "status": "finished", "result": "42", "steps": 2}


def test_a_path_that_leaves_the_workspace_is_never_looked_up(tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "out.csv").write_text("x")
    (tmp_path / "secret.txt").write_text("s")
    (workspace / "link").symlink_to(tmp_path / "secret.txt")
    assert _inside_file(workspace, "out.csv") is True and _inside_file(workspace, "gone.csv") is False
    for planted in ("../secret.txt", str(tmp_path / "secret.txt"), "link", "a\x00b"):
        assert _inside_file(workspace, planted) is None
    assert RUN_ID.startswith("[A-Za-z0-9]")
