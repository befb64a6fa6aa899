"""magics/inputs/folders.py: a workspace must be a folder path that can be one; ``~`` expands."""

from __future__ import annotations

import os

import pytest
from IPython.core.error import UsageError

from deepagent_magics.magics.inputs.folders import check_workspace, expand_path, make_workspace


def test_home_is_expanded(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert expand_path("~/ws") == os.path.join(str(tmp_path), "ws")
    assert check_workspace("~/ws") == os.path.join(str(tmp_path), "ws")


def test_a_folder_that_does_not_exist_yet_is_fine(tmp_path):
    assert check_workspace(tmp_path / "new" / "deeper") == str(tmp_path / "new" / "deeper")


@pytest.mark.parametrize("value", ["", "   ", "a\x00b"])
def test_what_is_no_path_is_one_line(value):
    with pytest.raises(UsageError, match="is not a folder path"):
        check_workspace(value)


def test_a_file_or_a_folder_under_a_file_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(UsageError, match="is a file, not a folder"):
        check_workspace(tmp_path / "notes.txt")
    with pytest.raises(UsageError, match="is a file, so there can be no folder under it"):
        check_workspace(tmp_path / "notes.txt" / "ws", flag="--skills-dir")


def test_the_folder_is_made_now_and_one_that_cannot_be_is_one_line(tmp_path):
    make_workspace(str(tmp_path / "a" / "b"))
    assert (tmp_path / "a" / "b").is_dir()
    (tmp_path / "f").write_text("x")
    with pytest.raises(UsageError, match="--workspace .*: cannot create the folder"):
        make_workspace(str(tmp_path / "f" / "sub"))
