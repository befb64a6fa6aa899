"""core/workspace/workspace.py: the folder the agent lists, reads, writes, edits and searches; never outside it, never
into the host's own state (hostile cases: tests/adversarial/test_host_state.py, test_workspace_races.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deepagent_magics.core.workspace.workspace import (
    GREP_MAX_MATCHES,
    HostStatePath,
    LINE_CHARS,
    Workspace,
    WorkspaceError,
    binary_kind,
)


@pytest.fixture
def ws(tmp_path):
    written = []
    workspace = Workspace(tmp_path, on_write=lambda path, size: written.append((path, size)))
    workspace.written = written
    return workspace


@pytest.mark.parametrize("path, says", [("../x", "is outside the workspace"), ("/etc/passwd", "is absolute"),
                                        ("a\x00b", "contains a NUL byte")])
def test_paths_that_leave_the_workspace_are_refused(ws, path, says):
    with pytest.raises(WorkspaceError, match=says):
        ws.resolve(path)


def test_a_link_that_points_out_is_refused_and_shown_as_such(ws, tmp_path):
    (tmp_path / "out").symlink_to("/etc")
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        ws.read_file("out/passwd")
    assert "out@  (a link that leaves the workspace or loops)" in ws.ls()


def test_write_read_and_edit_a_file(ws, tmp_path):
    assert ws.write_file("notes/a.txt", "one\ntwo\nthree\n") == "Wrote 14 bytes to notes/a.txt"
    assert ws.written == [("notes/a.txt", 14)]
    assert ws.read_file("notes/a.txt") == "     1\tone\n     2\ttwo\n     3\tthree"
    assert ws.read_file("notes/a.txt", offset=1, limit=1, read_on="read_file(") == (
        "     2\ttwo\n... (1 more lines; read_file('notes/a.txt', offset=2))")
    assert ws.edit_file("notes/a.txt", "two", "2") == "Replaced 1 occurrence(s) in notes/a.txt"
    assert (tmp_path / "notes" / "a.txt").read_text() == "one\n2\nthree\n"


def test_an_edit_must_name_text_that_occurs_once_unless_all_are_meant(ws):
    ws.write_file("a.txt", "x x")
    with pytest.raises(WorkspaceError, match="occurs 2 times"):
        ws.edit_file("a.txt", "x", "y")
    with pytest.raises(WorkspaceError, match="was not found"):
        ws.edit_file("a.txt", "z", "y")
    with pytest.raises(WorkspaceError, match="must not be empty"):
        ws.edit_file("a.txt", "", "y")
    assert ws.edit_file("a.txt", "x", "y", replace_all=True) == "Replaced 2 occurrence(s) in a.txt"


def test_the_hosts_own_folder_is_read_but_never_written(ws, tmp_path):
    (tmp_path / ".deepagent").mkdir()
    (tmp_path / ".deepagent" / "note").write_text("host")
    assert "host" in ws.read_file(".deepagent/note")
    for path in (".deepagent/runs/x.json", ".DeepAgent/x"):
        with pytest.raises(HostStatePath):
            ws.write_file(path, "planted")
    with pytest.raises(HostStatePath):
        ws.edit_file(".deepagent/note", "host", "agent")


def test_a_binary_file_says_what_it_is_and_a_long_line_is_cut(ws, tmp_path):
    (tmp_path / "p.png").write_bytes(b"\x89PNG\r\n\x1a\n....")
    with pytest.raises(WorkspaceError, match="is a PNG image, not text"):
        ws.read_file("p.png")
    assert binary_kind(b"a\x00b") == "a binary file" and binary_kind(b"text") is None
    (tmp_path / "long.txt").write_text("y" * (LINE_CHARS + 500) + "\nnext\n")
    first = ws.read_file("long.txt").splitlines()[0]
    assert first.endswith("... (500 more characters in this line)")


def test_ls_glob_grep_and_tree_skip_what_is_not_the_agents(ws, tmp_path):
    ws.write_file("data/a.csv", "x,y\n1,2\n")
    ws.write_file("data/deep/b.csv", "found here\n")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "c.csv").write_text("found here")
    assert ws.ls() == "data/"
    assert ws.ls("data") == "deep/\na.csv  8 B"
    assert ws.glob("**/*.csv") == ["data/a.csv", "data/deep/b.csv"]
    assert ws.glob("*.csv") == []
    assert ws.grep("found") == "data/deep/b.csv:1: found here"
    assert ws.grep("found", glob="*.txt") == "(no matches)"
    assert sorted(ws.tree()) == [("data/a.csv", 8), ("data/deep/b.csv", 11)]
    with pytest.raises(WorkspaceError, match="must stay inside"):
        ws.glob("../*")


def test_grep_stops_at_its_bound_and_when_the_run_is_cancelled(ws):
    ws.write_file("many.txt", "hit\n" * (GREP_MAX_MATCHES + 50))
    out = ws.grep("hit").splitlines()
    assert len(out) == GREP_MAX_MATCHES + 1 and out[-1].startswith("... (stopped at")
    assert ws.grep("hit", should_stop=lambda: True).endswith("(stopped: the run was cancelled)")
    with pytest.raises(WorkspaceError, match="no backreferences"):
        ws.grep(r"(a)\1")


segment = st.sampled_from(["..", ".", "a", "b", "link", "inner", "", "x.txt", "~"])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(segment, min_size=1, max_size=6), absolute=st.booleans())
def test_no_generated_path_escapes_the_workspace(tmp_path_factory, parts, absolute):
    base = tmp_path_factory.mktemp("ws")
    root = base / "root"
    (root / "a" / "inner").mkdir(parents=True)
    (base / "outside").mkdir()
    (root / "link").symlink_to(base / "outside", target_is_directory=True)
    (root / "a" / "b").symlink_to(root / "a" / "inner", target_is_directory=True)  # an inside link is fine
    workspace = Workspace(root)
    path = ("/" if absolute else "") + "/".join(parts)
    try:
        resolved = workspace.resolve(path)
    except WorkspaceError:
        return
    resolved_real = Path(os.path.realpath(resolved))
    assert resolved_real == root.resolve() or root.resolve() in resolved_real.parents
