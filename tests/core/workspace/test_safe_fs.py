"""core/workspace/safe_fs.py: every component entered relative to its parent without following a link; atomic writes;
regular files only (the race attacks: tests/adversarial/test_workspace_races.py)."""

from __future__ import annotations

import errno
import os
import stat

import pytest

from deepagent_magics.core.workspace import safe_fs


@pytest.fixture
def root(tmp_path):
    with safe_fs.opened(safe_fs.open_root(tmp_path)) as fd:
        yield fd


def test_folders_are_made_and_entered_and_a_link_on_the_way_is_refused(tmp_path, root):
    with safe_fs.opened(safe_fs.open_dir(root, ["a", "b"], create=True)) as fd:
        safe_fs.write_atomic(fd, "f.txt", b"hi")
    assert (tmp_path / "a" / "b" / "f.txt").read_text() == "hi"
    (tmp_path / "out").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "out")
    with pytest.raises(OSError) as caught:
        safe_fs.open_dir(root, ["link"], create=True)
    assert caught.value.errno in safe_fs.RACED
    with pytest.raises(FileNotFoundError):
        safe_fs.open_dir(root, ["missing"])


def test_a_write_replaces_the_file_whole_and_keeps_its_mode(tmp_path, root):
    target = tmp_path / "f.txt"
    target.write_text("old")
    target.chmod(0o640)
    assert safe_fs.write_atomic(root, "f.txt", b"new content") == 11
    assert target.read_text() == "new content" and stat.S_IMODE(target.stat().st_mode) == 0o640
    assert [name for name in os.listdir(tmp_path) if name.endswith(".tmp")] == []
    (tmp_path / "d").mkdir()
    with pytest.raises(IsADirectoryError):
        safe_fs.write_atomic(root, "d", b"x")


def test_only_regular_files_are_read_never_through_a_link_or_a_fifo(tmp_path, root):
    (tmp_path / "f.txt").write_text("text")
    assert safe_fs.read_text(root, "f.txt") == "text"
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(safe_fs.NotRegularFile):
        safe_fs.open_regular(root, "fifo")  # returns at once: opened without blocking
    (tmp_path / "link").symlink_to(tmp_path / "f.txt")
    with pytest.raises(OSError) as caught:
        safe_fs.open_regular(root, "link")
    assert caught.value.errno == errno.ELOOP


def test_entries_name_each_kind_without_following_links(tmp_path, root):
    (tmp_path / "d").mkdir()
    (tmp_path / "f").write_text("x")
    (tmp_path / "l").symlink_to(tmp_path / "d")
    os.mkfifo(tmp_path / "p")
    assert safe_fs.entries(root) == [("d", "dir"), ("f", "file"), ("l", "link"), ("p", "other")]
    assert safe_fs.lstat(root, "l") is not None and stat.S_ISLNK(safe_fs.lstat(root, "l").st_mode)
    assert safe_fs.lstat(root, "none") is None


def test_walk_goes_top_down_skips_what_it_is_told_and_stops_when_asked(tmp_path, root):
    for folder in ("a/b", "skip/me", "c"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "a" / "b" / "f").write_text("x")
    (tmp_path / "l").symlink_to(tmp_path / "a")
    seen = [(prefix, dirnames, others) for prefix, dirnames, others, _ in safe_fs.walk(root, {"skip"})]
    assert seen == [("", ["a", "c"], [("l", "link")]), ("a/", ["b"], []), ("a/b/", [], [("f", "file")]), ("c/", [], [])]
    calls = []
    stopped = list(safe_fs.walk(root, set(), should_stop=lambda: calls.append(1) or len(calls) > 2))
    assert len(stopped) < len(seen) + 1
