"""Workspace tools are race-free: no write lands outside, no read follows a link out.

The attacker is a helper (a sub-agent's kernel shares the workspace directory) that
swaps a directory of the workspace with a symlink pointing out, with
``renameat2(RENAME_EXCHANGE)`` in a tight loop, while the agent writes, reads and edits
through that directory. Checking a path and then opening it by name loses that race
(445 of 3,000 writes landed outside); opening every component relative to the
directory already opened, without following links, cannot.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deepagent_magics import tools
from deepagent_magics.core.run.run import Run
from deepagent_magics.core.run.session import Session, activate, deactivate
from deepagent_magics.core.workspace.workspace import Workspace, WorkspaceError

RENAME_EXCHANGE = 2
AT_FDCWD = -100
ROUNDS = 3000

_libc = ctypes.CDLL(None, use_errno=True)


def _exchange(a: str, b: str) -> None:
    if hasattr(_libc, "renameat2"):
        result = _libc.renameat2(AT_FDCWD, a.encode(), AT_FDCWD, b.encode(), RENAME_EXCHANGE)
    else:  # x86_64 syscall number, for an older glibc
        result = _libc.syscall(316, AT_FDCWD, a.encode(), AT_FDCWD, b.encode(), RENAME_EXCHANGE)
    if result != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))


def _can_exchange(tmp_path: Path) -> bool:
    (tmp_path / "x1").mkdir()
    (tmp_path / "x2").symlink_to(tmp_path)
    try:
        _exchange(str(tmp_path / "x1"), str(tmp_path / "x2"))
        _exchange(str(tmp_path / "x1"), str(tmp_path / "x2"))
    except OSError as exc:
        if exc.errno in (errno.ENOSYS, errno.EINVAL, errno.EPERM):
            return False
        raise
    finally:
        (tmp_path / "x2").unlink()
        (tmp_path / "x1").rmdir()
    return True


class Swapper:
    """Swaps ``ws/d`` (a real directory) and ``ws/l`` (a symlink out) until stopped."""

    def __init__(self, root: Path):
        self.a, self.b = str(root / "d"), str(root / "l")
        self.stop = threading.Event()
        self.swaps = 0
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self.stop.is_set():
            _exchange(self.a, self.b)
            self.swaps += 1

    def __enter__(self) -> "Swapper":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join()


@pytest.fixture
def arena(tmp_path):
    """ws/d a real directory, ws/l a symlink to outside/, outside/ holding bait files."""
    if not _can_exchange(tmp_path):
        pytest.skip("renameat2(RENAME_EXCHANGE) is not available here")
    root, outside = tmp_path / "ws", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "d").mkdir()
    (root / "l").symlink_to(outside, target_is_directory=True)
    (root / "d" / "r.txt").write_text("inside\n")
    (root / "d" / "e.txt").write_text("count 0\n")
    (outside / "r.txt").write_text("OUTSIDE-BAIT\n")
    (outside / "e.txt").write_text("count 0\n")
    run = Run("race")
    session = Session(run, Workspace(root, on_write=run.record_file))
    token = activate(session)
    yield root, outside
    deactivate(token)


def _tree(path: Path) -> dict[str, bytes]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(path, followlinks=False):
        for name in filenames:
            full = Path(dirpath) / name
            if not full.is_symlink():
                out[str(full.relative_to(path))] = full.read_bytes()
    return out


def _leftovers(root: Path) -> list[str]:
    return [name for name in _tree(root) if ".tmp" in name or Path(name).name.startswith(".")]


def test_racing_writes_never_land_outside_and_leave_no_temporary_file(arena):
    root, outside = arena
    before = _tree(outside)
    wrote = 0
    with Swapper(root) as swapper:
        for i in range(ROUNDS):
            path = f"d/w{i}.txt" if i % 3 else f"d/sub{i % 7}/deeper/w{i}.txt"
            result = tools.write_file(path, f"payload {i}\n")
            assert result.startswith(("Wrote", "Error:")), result
            wrote += result.startswith("Wrote")
    assert swapper.swaps > 100, "the swapper did not race"
    assert _tree(outside) == before, "a write landed outside the workspace"
    assert not [p for p in outside.rglob("*") if p.name.startswith("sub")], "a folder was created outside"
    assert _leftovers(root) == []
    written = [name for name in _tree(root) if Path(name).name.startswith("w")]
    assert len(written) == wrote and wrote > ROUNDS // 10


def test_racing_reads_never_follow_the_link_out(arena):
    root, _ = arena
    seen = set()
    with Swapper(root) as swapper:
        for i in range(ROUNDS):
            call = (lambda: tools.read_file("d/r.txt"), lambda: tools.grep("BAIT|inside", path="d"),
                    lambda: tools.ls("d"), lambda: tools.grep("BAIT"))[i % 4]
            result = call()
            assert "OUTSIDE-BAIT" not in result, result
            seen.add(result.split("\n")[0][:40])
    assert swapper.swaps > 100


def test_racing_edits_never_change_a_file_outside(arena):
    root, outside = arena
    with Swapper(root):
        for i in range(ROUNDS // 2):
            tools.edit_file("d/e.txt", "count", "count")  # a no-op edit still rewrites the file
            tools.edit_file("d/e.txt", f"count {i}", f"count {i + 1}")
    assert (outside / "e.txt").read_text() == "count 0\n"
    assert _leftovers(root) == []


def test_a_hard_link_to_an_outside_file_is_replaced_never_written_through(tmp_path):
    root, outside = tmp_path / "ws", tmp_path / "out"
    root.mkdir()
    outside.mkdir()
    (outside / "victim.txt").write_text("original victim text\n")
    os.link(outside / "victim.txt", root / "hl.txt")
    workspace = Workspace(root)
    workspace.write_file("hl.txt", "agent text\n")
    workspace.write_file("hl2.txt", "x")
    os.link(outside / "victim.txt", root / "hl3.txt")
    workspace.edit_file("hl3.txt", "victim", "edited")
    assert (outside / "victim.txt").read_text() == "original victim text\n"
    assert (root / "hl.txt").read_text() == "agent text\n"


def test_a_fifo_in_the_workspace_does_not_hang_the_host(tmp_path):
    """A sub-agent's kernel can mkfifo in the workspace; reading it by name would block forever."""
    root = tmp_path
    os.mkfifo(root / "pipe.txt")
    (root / "real.txt").write_text("needle\n")
    workspace = Workspace(root)
    done = {}

    def work():
        done["read"] = _catch(lambda: workspace.read_file("pipe.txt"))
        done["grep"] = workspace.grep("needle")
        done["edit"] = _catch(lambda: workspace.edit_file("pipe.txt", "a", "b"))
        done["tree"] = workspace.tree()

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    thread.join(20)
    assert not thread.is_alive(), "a workspace tool blocked on a FIFO"
    assert done["read"].startswith("Error:") and done["edit"].startswith("Error:")
    assert done["grep"] == "real.txt:1: needle"


def _catch(call):
    try:
        return call()
    except WorkspaceError as exc:
        return str(exc)


def test_files_are_created_with_the_users_umask(tmp_path):
    old = os.umask(0o022)
    try:
        workspace = Workspace(tmp_path)
        workspace.write_file("new/plain.txt", "x")
        assert stat.S_IMODE(os.stat(tmp_path / "new" / "plain.txt").st_mode) == 0o644
        assert stat.S_IMODE(os.stat(tmp_path / "new").st_mode) == 0o755
        os.umask(0o077)
        workspace.write_file("private.txt", "x")
        assert stat.S_IMODE(os.stat(tmp_path / "private.txt").st_mode) == 0o600
    finally:
        os.umask(old)


def test_rewriting_a_file_keeps_its_mode(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\necho a\n")
    script.chmod(0o750)
    workspace = Workspace(tmp_path)
    workspace.write_file("run.sh", "#!/bin/sh\necho b\n")
    assert stat.S_IMODE(os.stat(script).st_mode) == 0o750
    workspace.edit_file("run.sh", "echo b", "echo c")
    assert stat.S_IMODE(os.stat(script).st_mode) == 0o750


def test_a_failed_write_leaves_neither_half_a_file_nor_a_temporary_one(tmp_path):
    workspace = Workspace(tmp_path)
    workspace.write_file("keep.txt", "old\n")
    for bad in ("\ud800 lone surrogate", "x" * 10 + "\udfff"):
        with pytest.raises((UnicodeError, ValueError)):
            workspace.write_file("keep.txt", bad)
    assert (tmp_path / "keep.txt").read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt"]


def test_a_long_name_still_writes(tmp_path):
    workspace = Workspace(tmp_path)
    name = "n" * 250 + ".md"
    assert workspace.write_file(name, "x").startswith("Wrote")
    assert (tmp_path / name).read_text() == "x"
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


def test_an_inside_symlink_is_still_followed(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "a.txt").write_text("hello\n")
    (tmp_path / "alias").symlink_to(tmp_path / "real", target_is_directory=True)
    workspace = Workspace(tmp_path)
    assert "hello" in workspace.read_file("alias/a.txt")
    workspace.write_file("alias/b.txt", "via alias")
    assert (tmp_path / "real" / "b.txt").read_text() == "via alias"
    assert (tmp_path / "alias").is_symlink()


# ---------------------------------------------------------------- the property, generated

segment = st.sampled_from(["..", ".", "a", "b", "link", "inner", "", "x.txt", "~", "flink", "loop"])
action = st.sampled_from(["write", "read", "edit", "ls", "grep", "glob"])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(st.tuples(action, st.lists(segment, min_size=1, max_size=5), st.booleans()),
                    min_size=1, max_size=6))
def test_no_generated_operation_escapes_the_workspace(tmp_path_factory, ops):
    base = tmp_path_factory.mktemp("ws")
    root, outside = base / "root", base / "outside"
    (root / "a" / "inner").mkdir(parents=True)
    outside.mkdir()
    (outside / "x.txt").write_text("OUTSIDE-BAIT x\n")
    (root / "link").symlink_to(outside, target_is_directory=True)
    (root / "flink").symlink_to(outside / "x.txt")
    (root / "loop").symlink_to(root / "loop")
    (root / "a" / "b").symlink_to(root / "a" / "inner", target_is_directory=True)  # an inside link is fine
    before = _tree(outside)
    workspace = Workspace(root)
    for kind, parts, absolute in ops:
        path = ("/" if absolute else "") + "/".join(parts)
        try:
            result = {
                "write": lambda: workspace.write_file(path, "x x\n"),
                "read": lambda: workspace.read_file(path),
                "edit": lambda: workspace.edit_file(path, "x", "y"),
                "ls": lambda: workspace.ls(path),
                "grep": lambda: workspace.grep("x|BAIT", path),
                "glob": lambda: workspace.glob(path),
            }[kind]()
        except (WorkspaceError, OSError, ValueError):
            continue
        assert "OUTSIDE-BAIT" not in str(result)
    assert _tree(outside) == before
    assert _leftovers(root) == []
