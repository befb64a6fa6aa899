"""interpreters/pool/lifecycle.py: the kernels a process started are known, killed at its exit, and their files go.

With real kernels and a host killed by SIGKILL see ``tests/adversarial/test_no_orphan_processes.py`` and
``tests/adversarial/test_stopped_orphans.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

from deepagent_magics.interpreters.pool import lifecycle
from deepagent_magics.interpreters.pool.lifecycle import HOST_DIR_PREFIX


@dataclass(eq=False)
class Kernel:
    pid: int | None
    pgid: int | None = None
    dir: str = ""
    killed: bool = False
    manager: Any = field(default_factory=lambda: SimpleNamespace(provisioner=SimpleNamespace(process=None)))
    limits: Any = None


@pytest.fixture
def told(monkeypatch):
    """What the keeper is told (not a real keeper), and this process's kernels fresh."""
    heard = []
    monkeypatch.setattr(lifecycle.keeper, "watch", lambda pid, pgid, folder="": heard.append(("watch", pid, folder)))
    monkeypatch.setattr(lifecycle.keeper, "forget", lambda pid: heard.append(("forget", pid)))
    monkeypatch.setattr(lifecycle, "_live", set())
    monkeypatch.setattr(lifecycle, "_pools", lifecycle.weakref.WeakSet())
    monkeypatch.setattr(lifecycle, "_exiting", False)
    return heard


def group_with_a_child() -> subprocess.Popen:
    """A process in a group of its own with a child of its own (a kernel and what its code started)."""
    code = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); " \
           "print('ready', flush=True); time.sleep(60)"
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, start_new_session=True)
    assert process.stdout.readline().strip() == b"ready"
    return process


def gone(pid: int) -> bool:
    """Not running: no such process, or a zombie waiting to be reaped by whoever adopted it."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(") ")[2].startswith("Z")
    except FileNotFoundError:
        return True


def children_of(pid: int) -> list[int]:
    from deepagent_magics.interpreters.processes import descendants
    return list(descendants(pid))


def test_a_started_kernel_is_known_and_told_to_the_keeper_until_it_is_closed(told):
    kernel = Kernel(pid=101, pgid=101, dir="/k/101")
    assert lifecycle.register(kernel)
    assert lifecycle.live_kernel_pids() == [101] and lifecycle.live_kernel_dirs() == ["/k/101"]
    kernel.killed = True
    assert lifecycle.live_kernel_pids() == [] and lifecycle.live_kernel_dirs() == []
    lifecycle.unregister(kernel)
    assert told == [("watch", 101, "/k/101"), ("forget", 101)]


def test_a_kernel_started_while_the_process_exits_is_refused(told, monkeypatch):
    monkeypatch.setattr(lifecycle, "_exiting", True)
    assert lifecycle.register(Kernel(pid=5)) is False
    assert lifecycle.live_kernel_pids() == [] and told == []


def test_the_lifeline_is_one_pipe_per_process_whose_write_end_stays_here():
    read = lifecycle.lifeline()
    assert lifecycle.lifeline() == read and os.get_inheritable(read) is False
    os.set_blocking(read, False)
    try:
        with pytest.raises(BlockingIOError):  # not EOF: the write end is open while this process lives
            os.read(read, 1)
    finally:
        os.set_blocking(read, True)


@pytest.mark.subprocess
def test_a_killed_kernel_takes_its_children_and_its_group_along():
    kernel = group_with_a_child()
    child = children_of(kernel.pid)[0]
    lifecycle.kill_kernel(os.getpgid(kernel.pid), kernel.pid)
    kernel.wait(timeout=10)
    deadline = time.monotonic() + 10
    while not gone(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert gone(child)


def test_a_kernel_sharing_this_process_group_is_killed_alone(monkeypatch):
    killed = []
    monkeypatch.setattr(lifecycle.processes, "kill_tree", lambda pid: killed.append(("tree", pid)))
    monkeypatch.setattr(lifecycle.os, "killpg", lambda pgid, sig: killed.append(("group", pgid)))
    monkeypatch.setattr(lifecycle.os, "kill", lambda pid, sig: killed.append(("process", pid)))
    lifecycle.kill_kernel(os.getpgid(0), 4242)
    assert killed == [("tree", 4242), ("process", 4242)]  # never this process's own group
    lifecycle.kill_kernel(None, None)
    assert killed == [("tree", 4242), ("process", 4242)]


@pytest.mark.subprocess
def test_the_host_folder_is_made_once_and_dead_hosts_folders_are_swept(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(lifecycle, "_host_dirs", {})
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = tmp_path / f"{HOST_DIR_PREFIX}{int(finished.stdout)}-abc"
    alive = tmp_path / f"{HOST_DIR_PREFIX}{os.getppid()}-def"
    odd = tmp_path / f"{HOST_DIR_PREFIX}notapid-ghi"
    for folder in (dead, alive, odd):
        folder.mkdir()
    mine = lifecycle.host_dir()
    assert lifecycle.host_dir() == mine and os.path.basename(mine).startswith(f"{HOST_DIR_PREFIX}{os.getpid()}-")
    assert not dead.exists() and alive.exists() and odd.exists()


@pytest.mark.subprocess
def test_at_exit_every_kernel_is_killed_its_files_removed_and_pools_closed(told, tmp_path, monkeypatch):
    monkeypatch.setattr(lifecycle, "_host_dirs", {os.getpid(): str(tmp_path / "host")})
    (tmp_path / "host").mkdir()
    process = group_with_a_child()
    folder = tmp_path / "kernel"
    folder.mkdir()
    closed = []
    kernel = Kernel(pid=process.pid, pgid=os.getpgid(process.pid), dir=str(folder),
                    manager=SimpleNamespace(provisioner=SimpleNamespace(process=process)),
                    limits=SimpleNamespace(close=lambda: closed.append("cgroup")))

    class Pool:
        def close_for_exit(self):
            closed.append("pool")

    pool = Pool()
    lifecycle.register_pool(pool)
    lifecycle.register(kernel)
    lifecycle.at_exit()
    assert process.poll() is not None and kernel.killed
    assert not folder.exists() and not (tmp_path / "host").exists()
    assert closed == ["pool", "cgroup"]
    assert lifecycle.register(Kernel(pid=7)) is False  # nothing starts once the process is exiting
