"""interpreters/working_directory.py: each step run in its own folder and back; the user's folder put back after a
run that moved it (through a real run: tests/adversarial/test_working_directory.py)."""

from __future__ import annotations

import os

from deepagent_magics.interpreters.working_directory import at_start, getcwd, restore, stepping_in


def test_a_step_runs_in_its_folder_and_the_process_comes_back(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "task").mkdir()
    with stepping_in(str(tmp_path / "task")):
        assert os.getcwd() == str(tmp_path / "task")
    assert os.getcwd() == str(tmp_path)
    with stepping_in(None):
        assert os.getcwd() == str(tmp_path)


def test_where_to_go_back_to_is_read_only_for_a_run_in_the_users_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert at_start(None) == str(tmp_path) and at_start(str(tmp_path / "x")) is None


def test_a_run_that_moved_away_is_put_back_and_says_where_it_had_gone(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "elsewhere").mkdir()
    os.chdir(tmp_path / "elsewhere")
    assert restore(str(tmp_path)) == str(tmp_path / "elsewhere")
    assert os.getcwd() == str(tmp_path)
    assert restore(str(tmp_path)) is None  # it had not moved


def test_a_folder_deleted_under_the_run_is_named_as_such(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "gone").mkdir()
    os.chdir(tmp_path / "gone")
    os.rmdir(tmp_path / "gone")
    assert getcwd() is None
    assert restore(str(tmp_path)) == "a folder since deleted" and os.getcwd() == str(tmp_path)
