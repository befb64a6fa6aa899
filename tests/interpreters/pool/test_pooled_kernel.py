"""interpreters/pool/pooled_kernel.py: one sub-agent's kernel: started in its sandbox over unix sockets in a private
folder, prepared with the kernel-side runtime and DSPy's shim, interrupted, and killed whole with its folder.

Real kernels (`start_kernel`, as the pool starts them); the pool's own work (warming, handing out, stopping
every kernel, none outliving its host) is tests/interpreters/pool/test_pool.py, the attacks on the sandbox
tests/adversarial/test_sandbox*.py.
"""

from __future__ import annotations

import json
import os
import queue
import sys
import time

import psutil
import pytest
from dspy.primitives.facade import SHIM_SETUP

from deepagent_magics.interpreters import kernel_side
from deepagent_magics.interpreters.pool import sandbox
from deepagent_magics.interpreters.pool.pooled_kernel import HOST_KERNEL, SHIPPED, Kernel, KernelStartError, \
    _HostSpecs, shipped_sources, start_kernel
from deepagent_magics.interpreters.pool.sandbox import SandboxPolicy

pytestmark = [pytest.mark.kernel, pytest.mark.timeout(300)]


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def reply(kernel: Kernel, code: str, timeout: float = 60) -> dict:
    """The shell reply to ``code`` run in ``kernel``."""
    msg_id = kernel.client.execute(code)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            message = kernel.client.get_shell_msg(timeout=0.5)
        except queue.Empty:
            continue
        if message["parent_header"].get("msg_id") == msg_id:
            return message["content"]
    raise AssertionError(f"no reply to {code!r}")


@pytest.fixture(scope="module")
def started(tmp_path_factory):
    workspace = tmp_path_factory.mktemp("workspace")
    kernel = start_kernel(cwd=str(workspace))
    yield kernel, workspace
    kernel.close()


def test_a_kernel_talks_over_unix_sockets_in_its_own_folder_and_runs_in_its_workspace(started):
    kernel, workspace = started
    connection = json.loads(open(kernel.manager.connection_file).read())
    assert connection["transport"] == "ipc" and connection["ip"].startswith(kernel.dir + os.sep)
    assert kernel.alive() and kernel.workspace == os.path.realpath(workspace)
    assert reply(kernel, f"import os\nassert os.getcwd() == {kernel.workspace!r}")["status"] == "ok"
    assert (workspace / ".deepagent").is_dir()  # made, so the sandbox binds it read-only


def test_a_kernel_is_sandboxed_where_bubblewrap_runs_and_its_limits_are_recorded(started):
    kernel, _ = started
    if sandbox.unavailable() is not None:
        assert kernel.isolation == {"sandbox": "none", "reason": sandbox.unavailable()}
    else:
        assert kernel.isolation["sandbox"] == "bubblewrap" and kernel.isolation["network"] is False
        assert kernel.signal_group not in (None, kernel.pid)  # the kernel below bwrap: where an interrupt goes
    assert kernel.limits is not None and kernel.limits.record["cpu_time"]["max"] > 0


def test_the_runtime_and_dspys_shim_are_installed_before_anyone_takes_it(started):
    kernel, _ = started
    names = [f"_deepagent_{name.replace('/', '_')}" for name in SHIPPED]
    assert reply(kernel, f"import sys\nassert all(n in sys.modules for n in {names!r})\n"
                         f"assert {kernel_side.RUNTIME_NAME!r} in dir()")["status"] == "ok"
    assert kernel.preinstalled == frozenset([SHIM_SETUP])


def test_set_up_code_that_fails_is_a_start_error_with_its_exception(started):
    kernel, _ = started
    with pytest.raises(KernelStartError, match="set-up failed: ZeroDivisionError"):
        kernel.run_setup("1 / 0", timeout=60)
    kernel.run_setup("ready = True", timeout=60)
    assert reply(kernel, "assert ready")["status"] == "ok"


def test_an_interrupt_stops_the_running_code_and_the_kernel_goes_on(started):
    kernel, _ = started
    # Python code, not a sleep: a SIGINT another thread of the kernel receives does not cut a C sleep short.
    msg_id = kernel.client.execute("print('running', flush=True)\nwhile True:\n    sum(range(1000))",
                                   stop_on_error=False)  # the next request is not aborted for its error
    while True:  # until the code runs
        message = kernel.client.get_iopub_msg(timeout=60)
        if message["parent_header"].get("msg_id") == msg_id and message["msg_type"] == "stream":
            break
    kernel.interrupt()
    while True:
        message = kernel.client.get_shell_msg(timeout=60)
        if message["parent_header"].get("msg_id") == msg_id:
            break
    assert message["content"]["ename"] == "KeyboardInterrupt"
    assert reply(kernel, "1 + 1")["status"] == "ok"


def test_closing_kills_the_kernel_and_what_it_started_and_removes_its_folder(tmp_path):
    kernel = start_kernel(cwd=str(tmp_path))
    assert reply(kernel, "import subprocess\nchild = subprocess.Popen(['sleep', '600'])")["status"] == "ok"
    pids = [kernel.pid, *(p.pid for p in psutil.Process(kernel.pid).children(recursive=True))]
    assert len(pids) >= 2  # the kernel (below bwrap, in a sandbox) and its child
    kernel.close()
    assert not kernel.alive() and kernel.closed and not os.path.exists(kernel.dir)
    assert [pid for pid in pids if not gone(pid)] == []
    kernel.close()  # twice: nothing more to do


def test_a_kernel_spec_that_does_not_exist_is_a_start_error_naming_it_and_leaves_no_folder():
    kernel = Kernel("no-such-kernel-spec", sandbox=None)
    with pytest.raises(KernelStartError, match="could not start kernel 'no-such-kernel-spec'"):
        kernel.start(timeout=30)
    assert not os.path.exists(kernel.dir) and kernel.closed


def test_a_required_sandbox_that_cannot_run_refuses_before_anything_starts(monkeypatch, tmp_path):
    monkeypatch.setattr(sandbox, "BWRAP", "no-such-bwrap-here")
    sandbox.forget_probes()
    try:
        kernel = Kernel(sandbox=SandboxPolicy(required=True), workspace=str(tmp_path))
        with pytest.raises(KernelStartError, match="--require-sandbox") as raised:
            kernel.start(timeout=30)
        assert "no-such-bwrap-here is not installed" in str(raised.value) and kernel.pid is None
    finally:
        sandbox.forget_probes()


def test_the_host_kernel_is_this_python_and_a_spec_is_wrapped_in_the_sandbox():
    specs = _HostSpecs()
    assert specs.get_kernel_spec(HOST_KERNEL).argv[:3] == [sys.executable, "-m", "ipykernel_launcher"]
    specs.wrap = lambda argv: ["wrapper", "--", *argv]
    assert specs.get_kernel_spec(HOST_KERNEL).argv[:3] == ["wrapper", "--", sys.executable]


def test_the_runtime_is_shipped_as_source_in_order_with_kernel_side_compiled_under_its_own_name():
    sources = shipped_sources()
    assert [name for name, _, _ in sources] == [name.replace("/", "_") for name in SHIPPED]
    assert sources[-1][:2] == ("kernel_side", kernel_side.RUNTIME_FILENAME)
    for name, filename, source in sources:
        compile(source, filename, "exec")  # each compiles on its own: the kernel may not have this package
