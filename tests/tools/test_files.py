"""tools/files.py: the workspace and todo tools, called as the agent calls them (inside a session)."""

from __future__ import annotations

import os

import pytest

from deepagent_magics import tools
from deepagent_magics.core.run.run import Run
from deepagent_magics.core.run.session import Session, activate, deactivate
from deepagent_magics.core.workspace.workspace import Workspace


@pytest.fixture
def session(tmp_path):
    run = Run("test")
    session = Session(run, Workspace(tmp_path, on_write=run.record_file))
    token = activate(session)
    yield session
    deactivate(token)


def test_write_then_read_round_trip_with_numbered_lines(session, tmp_path):
    assert "Wrote" in tools.write_file("notes/a.txt", "alpha\nbeta\ngamma\n")
    assert (tmp_path / "notes" / "a.txt").read_text() == "alpha\nbeta\ngamma\n"
    text = tools.read_file("notes/a.txt")
    assert text.splitlines() == ["     1\talpha", "     2\tbeta", "     3\tgamma"]
    assert session.run.files_written == ["notes/a.txt"]


def test_read_file_offset_and_limit_say_what_is_left(session):
    tools.write_file("long.txt", "".join(f"line {i}\n" for i in range(1, 11)))
    text = tools.read_file("long.txt", offset=2, limit=3)
    lines = text.splitlines()
    assert lines[:3] == ["     3\tline 3", "     4\tline 4", "     5\tline 5"]
    assert "5 more lines" in lines[3] and "offset=5" in lines[3]


def test_ls_lists_directories_first_with_sizes(session):
    tools.write_file("b.txt", "xx")
    tools.write_file("sub/c.txt", "y")
    listing = tools.ls().splitlines()
    assert listing[0] == "sub/"
    assert listing[1].startswith("b.txt") and "2 B" in listing[1]


def test_edit_file_replaces_once_and_refuses_missing_or_ambiguous_text(session, tmp_path):
    tools.write_file("r.md", "a x a x")
    missing = tools.edit_file("r.md", "zzz", "q")
    assert missing.startswith("Error:") and "not found" in missing
    ambiguous = tools.edit_file("r.md", "a", "b")
    assert ambiguous.startswith("Error:") and "2 times" in ambiguous
    assert (tmp_path / "r.md").read_text() == "a x a x"  # an edit that fails changes nothing
    assert "Replaced 1" in tools.edit_file("r.md", "a x a", "A x a")
    assert "Replaced 2" in tools.edit_file("r.md", "x", "y", replace_all=True)
    assert (tmp_path / "r.md").read_text() == "A y a y"


def test_glob_and_grep(session):
    tools.write_file("src/one.py", "import os\nprint('revenue up')\n")
    tools.write_file("src/two.md", "Revenue fell\nnothing here\n")
    tools.write_file("top.py", "x = 1\n")
    assert tools.glob("**/*.py") == ["src/one.py", "top.py"]
    hits = tools.grep(r"[Rr]evenue")
    assert hits.splitlines() == ["src/one.py:2: print('revenue up')", "src/two.md:1: Revenue fell"]
    assert tools.grep("revenue", glob="*.md") == "(no matches)"
    assert tools.grep("(").startswith("Error: invalid regular expression")


def test_grep_output_is_capped(session):
    tools.write_file("many.txt", "hit\n" * 1000)
    lines = tools.grep("hit").splitlines()
    assert len(lines) == 201 and "stopped at 200 matches" in lines[-1]


def test_write_file_is_atomic_when_the_write_fails(session, tmp_path, monkeypatch):
    tools.write_file("keep.txt", "original")

    def broken_replace(src, dst, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    result = tools.write_file("keep.txt", "new content")
    assert result.startswith("Error:") and "disk full" in result
    assert (tmp_path / "keep.txt").read_text() == "original"
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]  # no temp file left behind


def test_todos_accept_lists_and_json_and_refuse_bad_status(session):
    assert "2 items, 1 completed" in tools.write_todos(
        [{"content": "plan", "status": "completed"}, {"content": "do", "status": "in_progress"}]
    )
    assert tools.read_todos()[1] == {"content": "do", "status": "in_progress"}
    tools.write_todos('[{"content": "json", "status": "pending"}]')
    assert session.run.todos == [{"content": "json", "status": "pending"}]
    bad = tools.write_todos([{"content": "x", "status": "done"}])
    assert bad.startswith("Error:") and "in_progress" in bad
    assert session.run.todos == [{"content": "json", "status": "pending"}]


def test_tool_calls_and_errors_are_events_on_the_run(session):
    events = []
    session.run.subscribe(events.append)
    tools.read_file("../etc/passwd")
    calls = [e for e in events if e.kind == "tool_call"]
    assert calls[-1].data["name"] == "read_file" and "outside the workspace" in calls[-1].data["error"]


@pytest.mark.parametrize(
    "path", ["../x", "/etc/passwd", "a/../../x", "sub/../../../x", "..", "a/b/../../../c"]
)
def test_paths_leaving_the_workspace_are_refused_by_every_tool(session, path):
    for call in (
        lambda: tools.read_file(path),
        lambda: tools.write_file(path, "x"),
        lambda: tools.ls(path),
        lambda: tools.edit_file(path, "a", "b"),
        lambda: tools.grep("x", path=path),
    ):
        assert call().startswith("Error:")


def test_a_symlink_pointing_out_is_refused(session, tmp_path_factory):
    outside = tmp_path_factory.mktemp("outside")
    (outside / "secret.txt").write_text("secret")
    root = session.workspace.root
    (root / "link").symlink_to(outside, target_is_directory=True)
    (root / "filelink").symlink_to(outside / "secret.txt")
    assert "outside the workspace" in tools.read_file("link/secret.txt")
    assert "outside the workspace" in tools.read_file("filelink")
    assert "outside the workspace" in tools.write_file("link/new.txt", "x")
    assert not (outside / "new.txt").exists()
    assert tools.glob("**/*.txt") == []
    assert "secret" not in tools.grep("secret")
