"""interpreters/pool/pool.py: KernelPool: real kernels started ahead of need, used once, and never outliving their host."""

from __future__ import annotations

import contextvars
import copy
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import psutil
import pytest
from jupyter_core.utils import ensure_event_loop

from deepagent_magics.interpreters import pool as kernel_pool
from deepagent_magics.interpreters.pool import KernelPool, KernelStartError

pytestmark = pytest.mark.kernel


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def wait_gone(pids, seconds: float = 15.0) -> list[int]:
    """The pids still alive after waiting up to ``seconds`` (a poll, not a timing assertion)."""
    deadline = time.monotonic() + seconds
    alive = [pid for pid in pids if not gone(pid)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.2)
        alive = [pid for pid in alive if not gone(pid)]
    return alive


def wait_removed(paths, seconds: float = 15.0) -> list[str]:
    """The paths still there after waiting up to ``seconds``: the last process to remove one (a kernel's
    watcher or the keeper) may still be at it when the kernels are gone."""
    deadline = time.monotonic() + seconds
    left = [path for path in paths if os.path.exists(path)]
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = [path for path in left if os.path.exists(path)]
    return left


def test_a_warm_pool_hands_out_ready_kernels_refills_and_stops_every_kernel():
    pool = KernelPool(size=2).warm()
    try:
        assert pool.wait_ready(timeout=120)
        warm = set(pool.pids())
        kernel = pool.take()
        assert kernel.pid in warm and kernel.alive() and pool.ready == 1
        assert pool.wait_ready(timeout=120)  # refilled in the background
        started = set(pool.pids())
        assert len(started) == 3 and kernel.pid in started
        pool.release(kernel)  # used once: killed
        assert gone(kernel.pid)
        assert copy.deepcopy(pool) is pool  # copies of an agent share its pool
    finally:
        pool.stop()
    assert pool.pids() == []
    assert wait_gone(started, seconds=5) == []
    with pytest.raises(KernelStartError):
        pool.take()


def test_an_empty_pool_starts_kernels_on_demand_and_resizes():
    pool = KernelPool(size=0)
    try:
        kernel = pool.take()  # cold start
        assert kernel.alive() and pool.ready == 0
        pool.release(kernel)
        pool.resize(1)
        assert pool.wait_ready(timeout=120)
        pool.resize(0)
        assert pool.ready == 0 and pool.pids() == []
    finally:
        pool.stop()


def test_cold_starts_in_threads_that_share_a_copied_context():
    """Sub-agent threads run in copies of their parent's context (for DSPy's settings); starting
    kernels there must not share one event loop through it (jupyter_client's blocking API would)."""
    ensure_event_loop()  # this thread has used jupyter_client's blocking API, as a notebook may have
    pool = KernelPool(size=0)
    kernels, errors = [], []

    def take():
        try:
            kernels.append(pool.take())
        except Exception as exc:  # pragma: no cover - what the test guards against
            errors.append(exc)

    threads = [threading.Thread(target=contextvars.copy_context().run, args=(take,)) for _ in range(3)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert errors == [] and len(kernels) == 3 and all(k.alive() for k in kernels)
    finally:
        pool.stop()


def test_the_default_pool_follows_the_settings():
    try:
        pool = kernel_pool.default_pool(0)
        assert kernel_pool.default_pool() is pool
        assert kernel_pool.default_pool(1) is pool and pool.size == 1
        other = kernel_pool.default_pool(1, kernel_name="python3")
        assert other is not pool and pool.closed and other.kernel_name == "python3"
    finally:
        kernel_pool.stop_default_pool()
    assert other.closed


HOST = """
import json, os, sys, time
from deepagent_magics.interpreters.pool import KernelPool, live_kernel_dirs
from deepagent_magics.interpreters.kernel import KernelInterpreter

pool = KernelPool(size=2).warm()
assert pool.wait_ready(timeout=120)
interpreter = KernelInterpreter(pool=pool)        # one kernel in use, one ready, one refilling
interpreter.execute("import subprocess; child = subprocess.Popen(['sleep', '600.0713'])")
# Found by its command line: in a sandbox the kernel's pids are those of its own PID namespace.
for _ in range(100):
    grandchild = [int(p) for p in os.listdir("/proc") if p.isdigit() and b"600.0713" in open(f"/proc/{p}/cmdline", "rb").read()]
    if grandchild:
        break
    time.sleep(0.05)
grandchild = grandchild[0]
pool.wait_ready(timeout=120)
print(json.dumps({"kernels": pool.pids(), "grandchild": grandchild, "dirs": live_kernel_dirs()}), flush=True)
sys.stdin.readline()  # until the test has seen them alive
{ending}
"""


@pytest.mark.parametrize("ending", ["sys.exit(0)", "time.sleep(600)"], ids=["normal exit", "SIGKILL"])
def test_no_kernel_outlives_its_host_process(tmp_path, ending):
    """At exit the kernels' process groups are killed; if the host is SIGKILLed, each kernel
    kills its own group. Either way their private directories are removed."""
    script = tmp_path / "host.py"
    script.write_text(textwrap.dedent(HOST).replace("{ending}", ending))
    host = subprocess.Popen([sys.executable, str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, cwd=tmp_path)
    try:
        line = host.stdout.readline()
        assert line, "the host printed nothing"
        started = json.loads(line)
        pids = started["kernels"] + [started["grandchild"]]
        assert len(started["kernels"]) == 3 and not any(gone(pid) for pid in pids)
        assert len(started["dirs"]) == 3 and all(os.path.isdir(d) for d in started["dirs"])
        host.stdin.write("go\n")
        host.stdin.flush()
        if ending.startswith("time.sleep"):
            host.send_signal(signal.SIGKILL)
        assert host.wait(timeout=60) in (0, -signal.SIGKILL)
    finally:
        if host.poll() is None:
            host.kill()
    if ending == "sys.exit(0)":
        # The exit handler killed and reaped them before the host was gone: no waiting needed.
        assert [pid for pid in pids if not gone(pid)] == []
    assert wait_gone(pids) == []
    assert wait_removed(started["dirs"]) == []
    # The host's own directory: removed at exit, or (killed outright) by the next process to make one.
    host_dir = os.path.dirname(started["dirs"][0])
    subprocess.run([sys.executable, "-c", "from deepagent_magics.interpreters.pool import Kernel; Kernel()"],
                   check=True, timeout=60)
    assert not os.path.exists(host_dir)
