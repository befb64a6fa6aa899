"""interpreters/pool/keeper.py: the process that kills a dead host's kernels, stopped or not, and only those.

The keeper runs here as the script it is, on a pipe this test holds (EOF: the host is gone). A host
killed with SIGKILL while its kernels are stopped: ``tests/adversarial/test_stopped_orphans.py``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from deepagent_magics.interpreters.pool import keeper
from deepagent_magics.interpreters.pool.keeper import CGROUPS_PREFIX, KERNEL_DIRS_PREFIX, start_time


def sleeper(**kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], **kwargs)


def wait_gone(process: subprocess.Popen, seconds: float = 15) -> bool:
    try:
        process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        return False
    return True


@pytest.fixture
def processes():
    started: list[subprocess.Popen] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.mark.subprocess
def test_a_start_time_tells_a_process_from_a_later_one_with_its_pid():
    assert isinstance(start_time(os.getpid()), int) and start_time(os.getpid()) == start_time(os.getpid())
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    assert start_time(int(finished.stdout)) is None


def test_the_lines_the_keeper_reads():
    kernels, cgroups = {}, set()
    keeper._apply(kernels, cgroups, "+10 10 555 /tmp/deepagent-kernels-1-x/k 1")
    keeper._apply(kernels, cgroups, "+11 0 556")
    keeper._apply(kernels, cgroups, "c/sys/fs/cgroup/deepagent-1")
    keeper._apply(kernels, cgroups, "+x y z")
    keeper._apply(kernels, cgroups, "garbage")
    assert kernels == {10: (10, 555, "/tmp/deepagent-kernels-1-x/k 1"), 11: (0, 556, "")}
    assert cgroups == {"/sys/fs/cgroup/deepagent-1"}
    assert keeper._registration(10, 10, 555, "") == "+10 10 555\n"


def test_a_live_kernel_cannot_be_unregistered_only_one_that_is_gone():
    me = os.getpid()
    kernels = {me: (0, start_time(me), ""), 99: (0, 1, "")}
    keeper._apply(kernels, set(), f"-{me}")
    assert me in kernels  # code writing "-pid" into the pipe does not save a live kernel
    keeper._apply(kernels, set(), "-99")  # start time 1 is not process 99's now (or it is gone)
    assert 99 not in kernels


def test_only_a_kernel_folder_in_a_hosts_kernel_folder_is_removed(tmp_path):
    kernel = tmp_path / f"{KERNEL_DIRS_PREFIX}1-x" / "kernel-a"
    kernel.mkdir(parents=True)
    (kernel / "connection.json").write_text("{}")
    other = tmp_path / "home" / "important"
    other.mkdir(parents=True)
    keeper._remove(str(kernel))
    keeper._remove(str(other))
    keeper._remove("")
    assert not kernel.exists() and other.exists()


def test_only_the_hosts_cgroup_folders_are_removed_once_empty(tmp_path):
    host = tmp_path / f"{CGROUPS_PREFIX}1"
    (host / "kernel-1").mkdir(parents=True)
    foreign = tmp_path / "user.slice"
    foreign.mkdir()
    busy = tmp_path / f"{CGROUPS_PREFIX}2"
    busy.mkdir()
    (busy / "cgroup.procs").write_text("123")  # a group not yet empty: rmdir fails, tried until the wait ends
    keeper._remove_cgroups({str(host), str(foreign), str(busy), str(tmp_path / f"{CGROUPS_PREFIX}gone")}, wait=0.3)
    assert not host.exists() and foreign.exists() and busy.exists()


def test_watching_tells_the_keeper_a_line_per_kernel_and_nothing_for_what_cannot_be_watched(monkeypatch):
    sent = []
    monkeypatch.setattr(keeper, "_send", sent.append)
    monkeypatch.setattr(keeper, "_watched", {})
    monkeypatch.setattr(keeper, "_cgroups", [])
    me = os.getpid()
    keeper.watch(me, 0, "/tmp/k")
    keeper.watch(me, 0, "/tmp/bad\n-1")  # a folder that would inject a line
    keeper.watch(None, None)
    keeper.watch_cgroups(["/sys/fs/cgroup/deepagent-1", "/sys/fs/cgroup/deepagent-1"])
    keeper.forget(me)
    keeper.forget(me)
    assert sent == [f"+{me} 0 {start_time(me)} /tmp/k\n", "c/sys/fs/cgroup/deepagent-1\n", f"-{me}\n"]


@pytest.mark.subprocess
def test_when_the_host_is_gone_the_keeper_kills_its_kernels_stopped_or_not_and_leaves_the_rest(tmp_path, processes):
    running = sleeper(start_new_session=True)
    stopped = sleeper(start_new_session=True)
    unrelated = sleeper(start_new_session=True)
    forgotten = sleeper(start_new_session=True)
    processes.extend([running, stopped, unrelated, forgotten])
    os.kill(stopped.pid, signal.SIGSTOP)
    folder = tmp_path / f"{KERNEL_DIRS_PREFIX}{os.getpid()}-x" / "kernel-1"
    folder.mkdir(parents=True)
    cgroup = tmp_path / f"{CGROUPS_PREFIX}cg"
    cgroup.mkdir()
    keeper_process = subprocess.Popen([sys.executable, "-I", keeper.__file__, str(os.getpid())],
                                      stdin=subprocess.PIPE, process_group=0)
    processes.append(keeper_process)
    lines = [keeper._registration(running.pid, running.pid, start_time(running.pid), str(folder)),
             keeper._registration(stopped.pid, stopped.pid, start_time(stopped.pid), ""),
             keeper._registration(unrelated.pid, unrelated.pid, start_time(unrelated.pid) + 1, ""),  # a reused pid
             keeper._registration(forgotten.pid, forgotten.pid, start_time(forgotten.pid), ""),
             f"c{cgroup}\n"]
    keeper_process.stdin.write("".join(lines).encode())
    keeper_process.stdin.flush()
    forgotten.kill()
    forgotten.wait()
    keeper_process.stdin.write(f"-{forgotten.pid}\n".encode())  # closed by the host: heeded, it is gone
    keeper_process.stdin.flush()
    time.sleep(0.3)
    keeper_process.send_signal(signal.SIGTERM)  # ignored: only the host's going ends it
    time.sleep(0.3)
    assert keeper_process.poll() is None
    keeper_process.stdin.close()  # the host is gone
    assert wait_gone(keeper_process)
    assert wait_gone(running) and wait_gone(stopped)
    assert unrelated.poll() is None  # not the process that was registered
    assert not folder.exists() and not cgroup.exists()
