"""Agent-supplied patterns cannot freeze the notebook: grep and glob match in linear time.

A regular expression with catastrophic backtracking runs in C holding the GIL, so no
Python-level timeout stops it: `grep(r"(a+)+$")` over a line of a's and a b froze the
notebook. The workspace uses a linear-time engine (RE2) for every agent pattern, says
clearly which patterns it cannot take, and its long loops stop when the run is cancelled.
Each "freeze" bound below is generous: it only proves the search did not backtrack
(the backtracking versions take minutes to years).
"""

from __future__ import annotations

import threading
import time

import pytest

from deepagent_magics import tools
from deepagent_magics.core.run.run import Run
from deepagent_magics.core.run.session import Session, activate, deactivate
from deepagent_magics.core.workspace.workspace import Workspace

EVIL = [
    r"(a+)+$",
    r"(a|a)+$",
    r"(a|aa)+$",
    r"(a*)*$",
    r"(.*a){20}$",
    r"^(a+)+b?c$",
    r"(\w+\s?)+$",
]


@pytest.fixture
def session(tmp_path):
    run = Run("grep")
    session = Session(run, Workspace(tmp_path, on_write=run.record_file))
    token = activate(session)
    yield session
    deactivate(token)


def _timed(call):
    started = time.monotonic()
    result = call()
    return result, time.monotonic() - started


@pytest.mark.parametrize("pattern", EVIL)
def test_a_catastrophic_pattern_returns_at_once(session, tmp_path, pattern):
    (tmp_path / "a.txt").write_text("a" * 5000 + "b\n" + "x" * 40 + "!\n")
    result, seconds = _timed(lambda: tools.grep(pattern))
    assert seconds < 5, f"grep({pattern!r}) took {seconds:.1f} s"
    assert not result.startswith("Error")


def test_the_notebook_thread_keeps_running_while_a_sub_agent_greps(session, tmp_path):
    """A host thread greps (as for a sub-agent); the main thread must keep getting the GIL."""
    (tmp_path / "big.txt").write_text(("a" * 3000 + "b\n") * 200)
    done = threading.Event()
    ticks = []

    def worker():
        token = activate(session)
        try:
            tools.grep(r"(a+)+$")
        finally:
            deactivate(token)
            done.set()

    threading.Thread(target=worker, daemon=True).start()
    deadline = time.monotonic() + 30
    while not done.is_set() and time.monotonic() < deadline:
        ticks.append(time.monotonic())
        time.sleep(0.01)
    assert done.is_set(), "grep did not finish"
    gaps = [b - a for a, b in zip(ticks, ticks[1:])]
    assert not gaps or max(gaps) < 2, f"the main thread was starved for {max(gaps):.1f} s"


def test_matches_still_read_like_grep(session, tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "m.py").write_text("def alpha():\n    return 42\nclass Beta:\n    pass\n")
    assert tools.grep(r"^def \w+\(") == "src/m.py:1: def alpha():"
    assert tools.grep(r"(?P<n>\d+)") == "src/m.py:2:     return 42"
    assert tools.grep(r"café") == "(no matches)"
    (tmp_path / "u.txt").write_text("un café noir\n")
    assert tools.grep(r"caf\w noir") == "u.txt:1: un café noir"  # \w is Unicode, as in Python's re
    assert tools.grep(r"\bnoir\b") == "u.txt:1: un café noir"
    assert tools.grep(r"\\w") == "(no matches)"  # an escaped backslash stays one


@pytest.mark.parametrize("pattern, why", [
    (r"(a)\1", "backreference"),
    (r"foo(?=bar)", "lookaround"),
    (r"(?<!x)y", "lookaround"),
    (r"(?!a)b", "lookaround"),
])
def test_patterns_re2_cannot_take_say_so(session, tmp_path, pattern, why):
    (tmp_path / "a.txt").write_text("aa foobar y\n")
    result = tools.grep(pattern)
    assert result.startswith("Error:") and "linear-time" in result and why in result, result


def test_an_invalid_pattern_is_an_error_string(session, tmp_path):
    (tmp_path / "a.txt").write_text("x\n")
    for pattern in ("(", "[a-", "a{2,1}", "*"):
        assert tools.grep(pattern).startswith("Error:")


@pytest.mark.parametrize("pattern", ["*a*a*a*a*a*a*a*a*a*a*a*a*b", "**/*a*a*a*a*a*a*a*a*a*a*a*c"])
def test_a_catastrophic_glob_returns_at_once(session, tmp_path, pattern):
    (tmp_path / "d").mkdir()
    (tmp_path / ("a" * 200)).write_text("x")
    (tmp_path / "d" / ("a" * 200)).write_text("x")
    result, seconds = _timed(lambda: tools.glob(pattern))
    assert seconds < 5 and result == []
    result, seconds = _timed(lambda: tools.grep("x", glob=pattern))
    assert seconds < 5 and result == "(no matches)"


def test_glob_keeps_its_meaning(session, tmp_path):
    (tmp_path / "docs" / "deep").mkdir(parents=True)
    for name in ("top.md", "docs/a.md", "docs/deep/b.md", "docs/c.txt", ".hidden.md"):
        (tmp_path / name).write_text("x")
    assert tools.glob("*.md") == [".hidden.md", "top.md"]
    assert tools.glob("**/*.md") == [".hidden.md", "docs/a.md", "docs/deep/b.md", "top.md"]
    assert tools.glob("docs/*") == ["docs/a.md", "docs/c.txt", "docs/deep"]
    assert tools.glob("docs/?.md") == ["docs/a.md"]
    assert tools.glob("docs/[ab].*") == ["docs/a.md"]
    assert tools.glob("**/deep") == ["docs/deep"]


@pytest.mark.parametrize("method, args", [
    ("grep", ("zzz",)),
    ("glob", ("**/*.txt",)),
    ("tree", ()),
])
def test_long_workspace_loops_stop_when_asked(tmp_path, method, args):
    for d in range(40):
        folder = tmp_path / f"d{d:02d}"
        folder.mkdir()
        for f in range(50):
            (folder / f"f{f:02d}.txt").write_text("line\n" * 20)
    checks = []

    def should_stop():
        checks.append(1)
        return len(checks) > 5

    workspace = Workspace(tmp_path)
    result = getattr(workspace, method)(*args, should_stop=should_stop)
    assert len(checks) <= 20, "the loop kept going after should_stop() said stop"
    if method == "grep":
        assert "stopped" in result
    elif method == "glob":
        assert len(result) < 2000
    else:
        assert len(result) < 2000


def test_the_file_tools_stop_when_the_session_is_cancelled(session, tmp_path):
    """A cancelled session (a sub-agent past its time limit) stops a host-side grep early."""
    for d in range(30):
        folder = tmp_path / f"d{d:02d}"
        folder.mkdir()
        for f in range(30):
            (folder / f"f{f:02d}.txt").write_text("line\n")
    session.cancelled = threading.Event()
    session.cancelled.set()
    result = tools.grep("line")
    assert "stopped" in result and result.count("line") <= 1
