"""interpreters/pool/kernel_limits.py: one kernel's limits at work: the command that holds them, the record that
says what holds each, and which one a dead kernel, a failed step or a filling workspace hit.

No kernel starts here: the command `KernelLimits.command` makes is run on a small Python program (the
rlimits it sees, a CPU loop killed at its limit, a write refused at its size), the disk check watches
real files, and a gateway kernel's set-up code is run under a lower hard limit than asked for. What
model-written code does to break the limits is in tests/adversarial/test_subagent_resource_limits.py.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from deepagent_magics.interpreters.pool import cgroups, kernel_limits
from deepagent_magics.interpreters.pool.kernel_limits import KernelLimits
from deepagent_magics.interpreters.pool.limits import MiB, NOT_HELD, OFF, RLIMIT, WORKSPACE_CHECK, LimitHit, \
    ResourceLimits

pytestmark = pytest.mark.subprocess  # runs processes under prlimit

# No processes or memory limit: no cgroup is made, the rlimits hold what is asked.
RLIMITS_ONLY = ResourceLimits(processes=0, memory=0, cpu_time=1, file_size=1, open_files=200, disk=0)
SHOW = ("import resource as r\n"
        "print(*(r.getrlimit(getattr(r, 'RLIMIT_' + n)) for n in ('CPU', 'FSIZE', 'NOFILE', 'CORE')))")


def run(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL, **kwargs)


def test_the_command_holds_the_limits_and_the_record_says_what_holds_each():
    limits = KernelLimits(RLIMITS_ONLY, "test-command")
    assert limits.group is None
    done = run(limits.command([sys.executable, "-c", SHOW]))
    assert done.stdout.split() == ["(1,", "2)", f"({MiB},", f"{MiB})", "(200,", "200)", "(0,", "0)"], done.stderr
    assert limits.record == {"processes": {"max": 0, "by": OFF}, "memory": {"max": 0, "by": OFF},
                             "cpu_time": {"max": 1, "by": RLIMIT}, "file_size": {"max": 1, "by": RLIMIT},
                             "open_files": {"max": 200, "by": RLIMIT}, "disk": {"max": 0, "by": OFF}}
    assert not limits.sandboxed


def test_a_sandbox_wraps_the_command_outside_its_rlimits():
    limits = KernelLimits(RLIMITS_ONLY, "test-sandboxed")
    argv = [sys.executable, "-c", SHOW]
    command = limits.command(argv, lambda inner: ["env", "SANDBOXED=1", *inner])
    assert limits.sandboxed and command[-len(argv):] == argv
    assert command.index("SANDBOXED=1") < command.index("--cpu=1:2")  # the sandbox runs prlimit, not the other way
    assert "(1, 2)" in run(command).stdout


def test_a_kernel_killed_at_its_cpu_limit_is_said_to_have_hit_it():
    limits = KernelLimits(RLIMITS_ONLY, "test-cpu")
    process = subprocess.Popen(limits.command([sys.executable, "-c", "while True: pass"]))
    limits.started(process.pid, process.pid)
    assert process.wait(timeout=60) in (-signal.SIGXCPU, -signal.SIGKILL)
    hit = limits.after_death(process.returncode)
    assert hit == LimitHit("cpu_time", 1, RLIMIT) and limits.record["hit"] == {"limit": "cpu_time", "by": RLIMIT}


def test_an_exit_of_its_own_is_no_limit_and_a_sandboxs_exit_status_is_read_as_its_kernels_signal():
    assert KernelLimits(RLIMITS_ONLY, "test-exit").after_death(1) is None
    assert KernelLimits(RLIMITS_ONLY, "test-none").after_death(None) is None
    long = ResourceLimits(processes=0, memory=0, cpu_time=30, file_size=0, open_files=0, disk=0)
    assert KernelLimits(long, "test-killed").after_death(-signal.SIGKILL) is None  # far from its CPU time
    sandboxed = KernelLimits(RLIMITS_ONLY, "test-bwrap")
    sandboxed.command(["python"], lambda inner: ["bwrap", "--", *inner])
    assert sandboxed.after_death(128 + signal.SIGXFSZ) == LimitHit("file_size", 1, RLIMIT)
    unsandboxed = KernelLimits(RLIMITS_ONLY, "test-plain")
    assert unsandboxed.after_death(128 + signal.SIGXFSZ) is None  # exit status 153 of its own
    off = KernelLimits(ResourceLimits.none(), "test-off")
    assert off.after_death(-signal.SIGXCPU) is None and off.after_death(-signal.SIGXFSZ) is None


def test_a_step_refused_a_write_past_its_file_size_says_so_and_any_other_error_does_not(tmp_path):
    limits = KernelLimits(RLIMITS_ONLY, "test-file-size")
    code = "import traceback\ntry:\n    open('big', 'wb').write(b'x' * (2 << 20))\nexcept OSError:\n" \
           "    traceback.print_exc()"
    done = run(limits.command([sys.executable, "-c", code]), cwd=tmp_path)
    assert "File too large" in done.stderr
    assert KernelLimits(RLIMITS_ONLY, "test-other").after_step("ZeroDivisionError: division by zero") is None
    assert limits.after_step(None) is None
    assert limits.after_step(done.stderr) == LimitHit("file_size", 1, RLIMIT)
    assert limits.after_step("ZeroDivisionError") == LimitHit("file_size", 1, RLIMIT)  # the first hit stays


def test_the_disk_check_blames_the_workspace_only_for_what_was_written_in_it(tmp_path_factory):
    workspace, elsewhere = tmp_path_factory.mktemp("workspace"), tmp_path_factory.mktemp("elsewhere")
    limits = KernelLimits(ResourceLimits(processes=0, memory=0, cpu_time=0, file_size=0, open_files=0, disk=1),
                          "test-disk")
    assert limits.record["disk"] == {"max": 1, "by": WORKSPACE_CHECK}
    limits.begin([str(workspace), ""])
    (elsewhere / "other.bin").write_bytes(os.urandom(3 * MiB))  # the same disk, not the sub-agent's
    os.sync()
    assert limits.check(force=True) is None
    (workspace / "mine.bin").write_bytes(os.urandom(3 * MiB))
    os.sync()
    assert limits.check(force=True) == LimitHit("disk", 1, WORKSPACE_CHECK)


class Clock:
    """A monotonic clock that moves only when the test moves it: no test waits for, or measures, time."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_workspace_under_the_limit_at_one_walk_is_walked_again_at_the_next_check(tmp_path_factory):
    # Others fill the file system past the limit, so the cheap check sends the watch to walk the workspace,
    # which holds nothing yet; the attack then writes past the limit before the next check.
    workspace, elsewhere = tmp_path_factory.mktemp("workspace"), tmp_path_factory.mktemp("elsewhere")
    clock = Clock()
    watch = kernel_limits._DiskWatch(MiB, [str(workspace)], clock)
    (elsewhere / "other.bin").write_bytes(os.urandom(3 * MiB))
    os.sync()
    assert not watch.over()
    assert watch.next_walk == clock.now + kernel_limits.CHECK_EVERY  # it walked: a walk that took no time
    clock.now += 2 * kernel_limits.CHECK_EVERY
    (elsewhere / "more.bin").write_bytes(os.urandom(2 * MiB))  # the others keep writing
    (workspace / "fill.bin").write_bytes(os.urandom(3 * MiB))
    os.sync()
    assert watch.over()


def test_a_walk_that_takes_long_waits_in_proportion_unless_a_step_starts_or_ends(tmp_path_factory, monkeypatch):
    workspace, elsewhere = tmp_path_factory.mktemp("workspace"), tmp_path_factory.mktemp("elsewhere")
    clock = Clock()
    watch = kernel_limits._DiskWatch(MiB, [str(workspace)], clock)
    walk = watch._added

    def slow_walk() -> int:  # the real walk, said to take half a second (a huge workspace, a busy disk)
        clock.now += 0.5
        return walk()

    monkeypatch.setattr(watch, "_added", slow_walk)
    (elsewhere / "other.bin").write_bytes(os.urandom(3 * MiB))
    os.sync()
    assert not watch.over()
    walked = clock.now
    (workspace / "fill.bin").write_bytes(os.urandom(3 * MiB))
    os.sync()
    clock.now = walked + kernel_limits.WALK_COST * 0.5 - kernel_limits.CHECK_EVERY
    assert not watch.over()  # the cost stays bounded: a tenth of the time is spent walking
    clock.now = walked + kernel_limits.WALK_COST * 0.5
    assert watch.over()
    assert not watch.over()  # just walked
    assert watch.over(force=True)  # a step's first and last checks walk anyway


def test_a_gateway_kernel_sets_what_it_can_on_itself_never_above_its_own_hard_limit():
    limits = KernelLimits(ResourceLimits(processes=64, memory=512, cpu_time=30, file_size=16, open_files=4096,
                                         disk=100), "test-remote", remote=True)
    assert limits.group is None  # its processes, memory and disk are the gateway's to hold
    assert {name: held["by"] for name, held in limits.record.items()} == {
        "processes": NOT_HELD, "memory": RLIMIT, "cpu_time": RLIMIT, "file_size": RLIMIT, "open_files": RLIMIT,
        "disk": NOT_HELD}
    limits.begin(["/"])
    assert limits._disk is None
    code = limits.remote_setup() + "import resource as r\nprint(r.getrlimit(r.RLIMIT_NOFILE), " \
                                   "r.getrlimit(r.RLIMIT_DATA), r.getrlimit(r.RLIMIT_CPU), sorted(dir()))"
    done = run(["prlimit", "--nofile=300:300", "--", sys.executable, "-c", code])
    assert done.stdout.split(") ")[:3] == ["(300, 300", f"({512 * MiB}, {512 * MiB}", "(30, 31"], done.stderr
    assert "_r" not in done.stdout  # its names are gone from the namespace


@pytest.mark.skipif(cgroups.mechanism() is None, reason="no cgroup can be made here")
def test_where_a_cgroup_can_be_made_it_holds_processes_and_memory_and_goes_with_the_kernel():
    limits = KernelLimits(ResourceLimits(processes=64, memory=512, cpu_time=0, file_size=0, open_files=0, disk=0),
                          "test-group")
    group = limits.group
    assert group is not None
    try:
        for name, controller in (("processes", "pids"), ("memory", "memory")):
            assert limits.record[name]["by"] == (group.kind if group.holds(controller) else RLIMIT)
        done = run(limits.command([sys.executable, "-c", "print(open('/proc/self/cgroup').read())"]))
        with open("/proc/self/cgroup") as own:
            assert done.returncode == 0 and done.stdout.strip() != own.read().strip()  # in a group of its own
    finally:
        limits.close()
    assert limits.group is None
