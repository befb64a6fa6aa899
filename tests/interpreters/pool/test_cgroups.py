"""interpreters/pool/cgroups.py: a kernel's control group, made, joined, limited, read, killed and removed.

Most tests play a cgroup hierarchy in a temporary folder (its files are plain files there); one uses
the machine's own groups where this process may make them. Through real kernels see
``tests/interpreters/pool/test_limits.py`` and ``tests/adversarial/test_subagent_limits_cleanup.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from deepagent_magics.interpreters.pool import cgroups
from deepagent_magics.interpreters.pool.cgroups import (HOST_PREFIX, SYSTEMD, V1, V2, KernelGroup, Mechanism,
                                                        joined)


def folders(tmp_path, *controllers: str) -> dict[str, str]:
    made = {}
    for controller in controllers:
        (tmp_path / controller).mkdir()
        made[controller] = str(tmp_path / controller)
    return made


def read(path) -> str:
    with open(path) as handle:
        return handle.read()


# --------------------------------------------------------------------------- joining
def test_the_joining_shell_takes_the_groups_then_the_command():
    argv = joined(["python", "-m", "x"], ["/g/pids/cgroup.procs", "/g/memory/cgroup.procs"])
    assert argv[1:3] == ["-c", cgroups.JOIN] and argv[3] == "deepagent-join"
    assert argv[4:] == ["/g/pids/cgroup.procs", "/g/memory/cgroup.procs", "--", "python", "-m", "x"]
    assert joined(["k"])[4:] == ["--", "k"]


@pytest.mark.subprocess
def test_the_command_runs_as_the_process_that_joined_every_group(tmp_path):
    procs = [tmp_path / "a.procs", tmp_path / "b.procs"]
    done = subprocess.run(joined([sys.executable, "-c", "import os; print(os.getpid())"], [str(p) for p in procs]),
                          capture_output=True, text=True, timeout=30)
    pid = done.stdout.strip()
    assert done.returncode == 0 and all(read(p).strip() == pid for p in procs)  # exec'd: the same process


@pytest.mark.subprocess
def test_a_group_that_cannot_be_joined_stops_the_command(tmp_path):
    marker = tmp_path / "ran"
    done = subprocess.run(joined(["touch", str(marker)], [str(tmp_path / "missing" / "cgroup.procs")]),
                          capture_output=True, timeout=30)
    assert done.returncode == 125 and not marker.exists()


# --------------------------------------------------------------------------- a group's folders and limits
def test_a_v2_group_is_a_folder_per_controller_with_its_limits(tmp_path):
    mechanism = Mechanism(V2, folders(tmp_path, "pids", "memory"), frozenset({"pids", "memory"}))
    group = mechanism.group("kernel-1", processes=64, memory=256 << 20)
    memory = tmp_path / "memory" / "kernel-1"
    assert read(tmp_path / "pids" / "kernel-1" / "pids.max") == "64"
    assert read(memory / "memory.max") == str(256 << 20) and read(memory / "memory.swap.max") == "0"
    assert read(memory / "memory.oom.group") == "1"  # an OOM kill ends the whole kernel
    assert group.holds("memory") and not group.holds("cpu") and group.kind == V2
    assert group.command(["k"])[4:] == [str(tmp_path / "pids" / "kernel-1" / "cgroup.procs"),
                                        str(memory / "cgroup.procs"), "--", "k"]


def test_a_v1_group_limits_memory_and_swap_by_v1s_names(tmp_path):
    Mechanism(V1, folders(tmp_path, "memory"), frozenset({"memory"})).group("k", processes=10, memory=1000)
    assert read(tmp_path / "memory" / "k" / "memory.limit_in_bytes") == "1000"
    assert read(tmp_path / "memory" / "k" / "memory.memsw.limit_in_bytes") == "1000"
    assert not (tmp_path / "memory" / "k" / "pids.max").exists()


def test_no_limit_is_written_for_zero(tmp_path):
    Mechanism(V2, folders(tmp_path, "pids", "memory")).group("k", processes=0, memory=0)
    assert os.listdir(tmp_path / "pids" / "k") == [] and os.listdir(tmp_path / "memory" / "k") == []


def test_a_group_that_cannot_be_made_whole_leaves_nothing_behind(tmp_path):
    made = folders(tmp_path, "pids")
    mechanism = Mechanism(V2, {**made, "memory": str(tmp_path / "no-such-hierarchy")})
    with pytest.raises(OSError):
        mechanism.group("k", processes=1, memory=1)
    assert os.listdir(tmp_path / "pids") == []


def test_a_systemd_group_is_a_scope_with_the_limits_as_properties(monkeypatch):
    monkeypatch.setattr(cgroups.os, "geteuid", lambda: 1000)
    group = Mechanism(SYSTEMD, {}, frozenset({"pids", "memory"})).group("kernel-1", processes=32, memory=4096)
    prefix = group.command(["k"])[:group.command(["k"]).index("--") + 1]
    assert prefix[1:] == ["--user", "--scope", "--quiet", "--collect", f"--unit={HOST_PREFIX}{os.getpid()}-kernel-1",
                          "-p", "TasksMax=32", "-p", "MemoryMax=4096", "-p", "MemorySwapMax=0", "--"]
    assert group.remove() is True  # systemd removes the scope itself


def test_a_systemd_group_finds_its_folder_once_the_kernel_runs():
    group = Mechanism(SYSTEMD, {}, frozenset({"pids", "memory"})).group("k", 0, 0)
    group.found(os.getpid())
    if not group.folders:
        pytest.skip("no cgroup v2 line in /proc/self/cgroup here")
    assert set(group.folders) == {"pids", "memory", "cpu"} and len(set(group.folders.values())) == 1


# --------------------------------------------------------------------------- counters
@pytest.mark.parametrize(("kind", "files", "hit"), [
    (V2, {"memory/memory.events": "low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\n"}, "memory"),
    (V1, {"memory/memory.oom_control": "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n"}, "memory"),
    (V2, {"pids/pids.events": "max 3\n", "memory/memory.events": "oom_kill 0\n"}, "processes"),
    (V2, {"pids/pids.events": "max 0\n", "memory/memory.events": "oom_kill 0\n"}, None),
    (V2, {}, None),
])
def test_the_counters_say_which_limit_refused_something(tmp_path, kind, files, hit):
    made = folders(tmp_path, "pids", "memory")
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    assert KernelGroup(Mechanism(kind), made, []).hit() == hit


def test_a_group_is_removed_once_empty_and_said_still_there_when_not(tmp_path):
    made = folders(tmp_path, "pids", "memory")
    (tmp_path / "memory" / "still-busy").mkdir()  # rmdir of a group with a child group fails
    group = KernelGroup(Mechanism(V2), dict(made), [])
    assert group.remove(wait=0.2) is False
    assert not (tmp_path / "pids").exists() and (tmp_path / "memory").exists()
    os.rmdir(tmp_path / "memory" / "still-busy")
    assert group.remove(wait=0) is True


def test_a_group_still_busy_when_its_kernel_closed_is_removed_by_the_next_group_made(tmp_path):
    """On a loaded machine a killed kernel's processes may outlast `remove`'s wait: its group is not left
    for as long as the host lives (CI: a fork bomb's test found earlier tests' groups still there)."""
    hosts = folders(tmp_path, "pids")
    busy = tmp_path / "pids" / "k-old"
    (busy / "still-busy").mkdir(parents=True)  # a process still in it, as rmdir sees it
    mechanism = Mechanism(V2, hosts, frozenset({"pids"}))
    assert KernelGroup(mechanism, {"pids": str(busy)}, []).remove(wait=0) is False and busy.exists()
    os.rmdir(busy / "still-busy")  # its last process has exited since
    mechanism.group("k-new", processes=0, memory=0)
    assert not busy.exists() and (tmp_path / "pids" / "k-new").is_dir()


@pytest.mark.subprocess
def test_killing_a_group_kills_every_process_it_lists(tmp_path):
    made = folders(tmp_path, "pids")
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    (tmp_path / "pids" / "cgroup.procs").write_text(f"{process.pid}\n")
    (tmp_path / "pids" / "cgroup.kill").write_text("")
    KernelGroup(Mechanism(V2), made, []).kill(wait=0.3)  # a plain file keeps listing it: waited for 0.3 s
    assert process.wait(timeout=10) == -9
    assert read(tmp_path / "pids" / "cgroup.kill") == "1"  # v2: one write for the whole tree


# --------------------------------------------------------------------------- finding the mechanism
def test_a_hosts_folder_is_made_under_its_own_group_and_gone_hosts_empty_folders_swept(tmp_path):
    dead = int(read("/proc/sys/kernel/pid_max")) + 1  # no process can have it
    gone = tmp_path / f"{HOST_PREFIX}{dead}-aa"
    (gone / "kernel-1").mkdir(parents=True)
    living = tmp_path / f"{HOST_PREFIX}{os.getppid()}-bb"
    living.mkdir()
    other = tmp_path / "user.slice"
    other.mkdir()
    mine = cgroups._host_folder(str(tmp_path))
    assert os.path.basename(mine).startswith(f"{HOST_PREFIX}{os.getpid()}-") and os.path.isdir(mine)
    assert not gone.exists() and living.exists() and other.exists()


def test_v2_enables_the_controllers_for_the_kernels_groups(tmp_path):
    (tmp_path / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    (tmp_path / "cgroup.subtree_control").write_text("")
    found = cgroups._v2_direct(str(tmp_path))
    host = found.folders["pids"]
    assert found.kind == V2 and found.controllers == {"pids", "memory", "cpu"}
    assert set(found.folders.values()) == {host} and os.path.dirname(host) == str(tmp_path)
    assert read(os.path.join(host, "cgroup.subtree_control")) == "+pids +memory +cpu"


def test_v2_without_the_limiting_controllers_is_no_mechanism(tmp_path):
    (tmp_path / "cgroup.controllers").write_text("cpu io\n")
    assert cgroups._v2_direct(str(tmp_path)) is None


def test_v1_uses_each_writable_hierarchy_and_needs_a_limiting_one(tmp_path):
    mounts = folders(tmp_path, "pids", "cpu")
    found = cgroups._v1(mounts, {"pids": "/", "cpu": "/", "memory": "/"})
    assert found.kind == V1 and found.controllers == {"pids", "cpu"}
    assert all(os.path.dirname(folder) == mounts[name] for name, folder in found.folders.items())
    (tmp_path / "other").mkdir()
    cpu_only = folders(tmp_path / "other", "cpu")
    assert cgroups._v1(cpu_only, {"cpu": "/"}) is None  # the CPU share alone limits nothing
    assert os.listdir(cpu_only["cpu"]) == []  # and its host folder is dropped again


@pytest.mark.subprocess
def test_a_mechanism_works_when_a_process_in_its_group_runs(tmp_path, monkeypatch):
    mechanism = Mechanism(V1, folders(tmp_path, "pids"))
    assert cgroups._works(mechanism)
    probe, = os.listdir(tmp_path / "pids")
    assert probe.startswith("probe-") and read(tmp_path / "pids" / probe / "pids.max") == "64"
    which = cgroups.shutil.which
    monkeypatch.setattr(cgroups.shutil, "which", lambda name: which("false") if name == "true" else which(name))
    assert not cgroups._works(mechanism)  # a process that does not run to its end: no mechanism


def test_the_mechanism_is_probed_once_per_process(monkeypatch):
    calls = []
    monkeypatch.setattr(cgroups, "_find", lambda: calls.append(1) or None)
    cgroups.forget()
    try:
        assert cgroups.mechanism() is None and cgroups.mechanism() is None and len(calls) == 1
        cgroups.forget()
        cgroups.mechanism()
        assert len(calls) == 2
    finally:
        cgroups.forget()


@pytest.mark.subprocess
def test_on_this_machine_a_group_holds_its_process_limit_and_says_so():
    found = cgroups.mechanism()
    if found is None or not found.controllers & {"pids"} or found.kind == SYSTEMD:
        pytest.skip(f"no cgroup with pids this process can make here ({found})")
    group = found.group(f"test-{os.getpid()}", processes=4, memory=0)
    try:
        fork_bomb = "for i in 1 2 3 4 5 6 7 8; do sleep 1 & done; wait"
        done = subprocess.run(group.command(["sh", "-c", fork_bomb]), capture_output=True, text=True, timeout=60)
        assert group.hit() == "processes", done.stderr
    finally:
        group.kill()
        assert group.remove()
