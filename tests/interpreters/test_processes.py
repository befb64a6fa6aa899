"""`processes.descendants` finds the same tree whether it reads the tree's own children files
or walks every process in /proc (the fallback for kernels without children files)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest

from deepagent_magics.interpreters import processes

pytestmark = pytest.mark.subprocess

TREE = textwrap.dedent("""
    import subprocess, sys, time
    # a child in its own session, which starts a grandchild: both stay below us
    subprocess.Popen([sys.executable, "-c",
        "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)"],
        start_new_session=True)
    time.sleep(60)
""")


@pytest.fixture
def tree():
    root = subprocess.Popen([sys.executable, "-c", TREE])
    try:
        deadline = time.monotonic() + 30
        while len(processes.descendants(root.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        yield root.pid
    finally:
        processes.kill_tree(root.pid)
        root.wait(timeout=10)


@pytest.mark.skipif(not processes.CHILDREN_FILES, reason="this kernel has no /proc/<pid>/task/<tid>/children")
def test_the_children_files_and_the_full_walk_find_the_same_descendants(tree, monkeypatch):
    by_children_files = sorted(processes.descendants(tree))
    monkeypatch.setattr(processes, "CHILDREN_FILES", False)
    by_full_walk = sorted(processes.descendants(tree))
    assert len(by_children_files) == 2
    assert by_children_files == by_full_walk


def test_kill_tree_leaves_none_of_the_tree(tree):
    below = processes.descendants(tree)
    assert len(below) == 2
    processes.kill_tree(tree)
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in below) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(pid) for pid in below)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().split(b") ")[1][:1] != b"Z"  # a zombie is dead, waiting for its reaper
    except (OSError, IndexError):
        return False
