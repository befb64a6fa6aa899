"""The limits leave nothing behind and hold wherever a sub-agent's kernel runs (issue 30, item 4).

A host SIGKILLed while its limited kernels run leaves no cgroup (the keeper removes them) and no
process; groups left by a host that is gone are removed by the next one; the default limits are what a
kernel really has; a kernel that runs without the sandbox (bubblewrap missing) is limited too; on a machine
without a cgroup root's record says that nothing holds its process count.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import psutil
import pytest

from deepagent_magics.interpreters.kernel import KernelInterpreter
from deepagent_magics.interpreters.pool import KernelPool, cgroups, sandbox
from deepagent_magics.interpreters.kernel import LimitExceeded
from deepagent_magics.interpreters.pool.limits import ResourceLimits
from deepagent_magics.interpreters.pool.sandbox import SandboxPolicy

pytestmark = [pytest.mark.kernel, pytest.mark.subprocess]


@pytest.fixture
def mechanism():
    found = cgroups.mechanism()
    if found is None or not found.folders:
        pytest.skip("no cgroup this process can make here (docs/safety.md: rlimits hold the limits then)")
    return found


def gone_within(predicate, seconds: float = 20.0) -> bool:
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)
    return True


HOST = """
import json, os, sys, time
from deepagent_magics.interpreters.kernel import KernelInterpreter
from deepagent_magics.interpreters.pool import KernelPool, cgroups
pool = KernelPool(size=0)
interpreters = [KernelInterpreter(pool=pool, cwd=sys.argv[1]) for _ in range(2)]
for interpreter in interpreters:
    interpreter.execute("import subprocess\\nsleeper = subprocess.Popen(['sleep', '300'])")
kernels = [interpreter.kernel for interpreter in interpreters]
print(json.dumps({"groups": [folder for k in kernels for folder in k.limits.group.folders.values()],
                  "hosts": list(cgroups.mechanism().folders.values()),
                  "pids": [p for k in kernels for p in (k.pid, k.signal_group)]}), flush=True)
time.sleep(600)
"""


def test_a_host_killed_with_its_limited_kernels_running_leaves_no_cgroup_and_no_process(mechanism, tmp_path):
    host = subprocess.Popen([sys.executable, "-c", HOST, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        state = json.loads(host.stdout.readline())
        assert len(state["groups"]) == 2 * len(mechanism.folders)
        assert all(os.path.isdir(folder) for folder in state["groups"] + state["hosts"])
        tree = psutil.Process(host.pid).children(recursive=True)
        host.send_signal(signal.SIGKILL)
        host.wait(timeout=30)
        assert gone_within(lambda: not any(os.path.exists(f) for f in state["groups"] + state["hosts"])), state
        assert gone_within(lambda: not [p for p in tree if p.is_running() and p.status() != psutil.STATUS_ZOMBIE])
    finally:
        if host.poll() is None:
            host.kill()


def test_the_groups_of_a_host_that_is_gone_are_removed_by_the_next_one(mechanism):
    dead = subprocess.Popen(["true"])
    dead.wait()
    parent = os.path.dirname(next(iter(mechanism.folders.values())))
    left = os.path.join(parent, f"{cgroups.HOST_PREFIX}{dead.pid}-0dead0")
    os.mkdir(left)
    os.mkdir(os.path.join(left, "k-left"))
    alive = os.path.join(parent, f"{cgroups.HOST_PREFIX}{os.getpid()}-0live0")  # a live host's: kept
    os.mkdir(alive)
    try:
        cgroups._sweep(parent)
        assert not os.path.exists(left) and os.path.isdir(alive)
    finally:
        for folder in (os.path.join(left, "k-left"), left, alive):
            if os.path.isdir(folder):
                os.rmdir(folder)


def test_a_kernel_has_the_default_limits(tmp_path):
    pool = KernelPool(size=0)
    interpreter = KernelInterpreter(pool=pool, cwd=str(tmp_path))
    try:
        report = json.loads(interpreter.execute(textwrap.dedent("""
            import json, resource
            names = ('NOFILE', 'CPU', 'FSIZE', 'CORE')
            print(json.dumps({n: resource.getrlimit(getattr(resource, 'RLIMIT_' + n))[0] for n in names}))
            """)))
        defaults = ResourceLimits()
        assert report == {"NOFILE": defaults.open_files, "CPU": defaults.cpu_time, "FSIZE": defaults.file_size << 20,
                          "CORE": 0}
        group = interpreter.kernel.limits.group
        if group is not None and "pids" in group.folders:
            with open(os.path.join(group.folders["pids"], "pids.max")) as handle:
                assert int(handle.read()) == defaults.processes
    finally:
        interpreter.shutdown()
        pool.stop()


def test_a_kernel_without_the_sandbox_is_limited_too(tmp_path, monkeypatch):
    monkeypatch.setattr(sandbox, "BWRAP", "deepagent-no-such-bwrap")
    sandbox.forget_probes()
    pool = KernelPool(size=0, sandbox=SandboxPolicy(limits=ResourceLimits(open_files=128)))
    interpreter = KernelInterpreter(pool=pool, cwd=str(tmp_path))
    try:
        with pytest.raises(LimitExceeded) as raised:
            interpreter.execute("import os\nkept = [open(os.devnull) for _ in range(1000)]")
        assert str(raised.value) == ("the sub-agent was stopped: it tried to have more than 128 files open at once "
                                     "(limit --subagent-open-files, held by rlimit)")
        assert interpreter.kernel.isolation["sandbox"] == "none"
        pid = interpreter.kernel.pid
        assert gone_within(lambda: not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)
    finally:
        interpreter.shutdown()
        pool.stop()
        sandbox.forget_probes()


def test_without_a_cgroup_roots_record_says_nothing_holds_its_process_count(tmp_path, monkeypatch):
    """For uid 0 the kernel never enforces RLIMIT_NPROC, not even in the sandbox's user namespace (it maps to
    uid 0): on a machine where no cgroup can be made, the record says so instead of claiming a limit."""
    if os.geteuid() != 0:
        pytest.skip("root's path: as another user the rlimit holds (test_subagent_resource_limits)")
    monkeypatch.setattr(cgroups, "mechanism", lambda: None)  # a machine where no cgroup can be made
    pool = KernelPool(size=0, sandbox=SandboxPolicy(limits=ResourceLimits(processes=48)))
    interpreter = KernelInterpreter(pool=pool, cwd=str(tmp_path))
    try:
        limits = json.loads(interpreter.execute(
            "import json, resource\nprint(json.dumps(resource.getrlimit(resource.RLIMIT_NPROC)))"))
        assert interpreter.kernel.limits.record["processes"] == {"max": 48, "by": "not held"}
        assert interpreter.kernel.limits.record["memory"]["by"] == "rlimit"
        assert limits != [48, 48]  # not set: it would claim what it does not do
    finally:
        interpreter.shutdown()
        pool.stop()
