"""One Jupyter kernel for one sub-agent: started, connected, prepared, and killed after.

By default a kernel runs the host's own Python (``sys.executable -m
ipykernel_launcher``), so it has the same packages; ``kernel_name`` picks an
installed kernel spec instead. Each kernel runs in a sandbox (`sandbox`: bubblewrap,
where it can run here) in which only its workspace is writable, is its own process
group and the subreaper of whatever its code starts (in the sandbox, the init of its
own PID namespace), talks over unix sockets in a private directory, and gets the
kernel-side runtime (`kernel_side`, with `wire` and
`processes`, shipped as source) and DSPy's sandbox shim installed before anyone
takes it. Killing a kernel ends everything below it (`lifecycle.kill_kernel`).
"""

from __future__ import annotations

import logging
import os
import queue
import shutil
import signal
import sys
import tempfile
import threading
import time
from typing import Any

import zmq
from jupyter_client import AsyncKernelManager, BlockingKernelClient
from jupyter_client.kernelspec import KernelSpec, KernelSpecManager

from ...errors import DeepAgentError
from ...coroutines import run_coroutine
from .. import kernel_side
from ..kernel_side import RUNTIME_NAME
from . import launcher, lifecycle, sandbox, seccomp
from .kernel_limits import KernelLimits
from .sandbox import SandboxPolicy

log = logging.getLogger(__name__)

HOST_KERNEL = "deepagent-host-python"
STARTUP_TIMEOUT = 60.0

# The kernel-side modules, shipped as source (the kernel may not have this package): each becomes
# `_deepagent_<name>` in the kernel's sys.modules (a folder's `/` becomes `_`), in this order; kernel_side comes
# last and installs.
SHIPPED = ("wire", "processes", "guards", "output_limit", "runtime_checks/actions", "runtime_checks/hook", "kernel_side")
INSTALL = (
    "def _deepagent_install(sources):\n"
    "    import sys, types\n"
    "    for name, filename, source in sources:\n"
    "        module = types.ModuleType('_deepagent_' + name)\n"
    "        exec(compile(source, filename, 'exec'), module.__dict__)\n"
    "        sys.modules[module.__name__] = module\n"
    "    module.install(host_pid={host_pid}, lifeline_fd={lifeline_fd}, kernel_dir={kernel_dir!r})\n"
    "_deepagent_install({sources!r})\n"
    "del _deepagent_install\n"
)


class KernelStartError(DeepAgentError, RuntimeError):
    """A kernel could not be started (a missing kernel spec, a kernel that died at start-up)."""


class _HostSpecs(KernelSpecManager):
    """Kernel specs in which `HOST_KERNEL` is the host's own interpreter; ``wrap``, when set,
    rewrites a spec's command line (to start it in the sandbox)."""

    wrap: Any = None

    def get_kernel_spec(self, kernel_name: str) -> KernelSpec:
        if kernel_name == HOST_KERNEL:
            spec = KernelSpec(
                argv=[sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                display_name="Python (deepagent host)",
                language="python",
                env={},
                metadata={},
            )
        else:
            spec = super().get_kernel_spec(kernel_name)
        if self.wrap is not None:
            spec.argv = self.wrap(list(spec.argv))
        return spec


class Kernel:
    """One started kernel: its manager, a connected client, and the process group to kill.

    ``kill()`` only signals the process and may be called from any thread;
    ``close()`` also releases the sockets and files and belongs to the thread
    using the client (zmq sockets are not thread-safe).

    jupyter_client's blocking wrappers (``run_sync``) cache their event loop in a
    context variable, which ``contextvars.copy_context()`` would share between the
    sub-agents' threads; so the manager is the async one, driven by
    ``asyncio.run``, and the client is only used for its (synchronous) sockets.
    """

    limits: KernelLimits | None = None  # what it may consume: set with a sandbox policy (`_confine`)

    def __init__(self, kernel_name: str | None = None, sandbox: SandboxPolicy | None = SandboxPolicy(),
                 workspace: str | None = None):
        self.kernel_name = kernel_name or HOST_KERNEL
        self.sandbox = sandbox
        self.workspace = os.path.realpath(workspace) if workspace else None  # writable in the sandbox
        self.isolation: dict[str, Any] = {"sandbox": "none", "reason": "started without a sandbox policy"}
        self.dir = tempfile.mkdtemp(prefix="k-", dir=lifecycle.host_dir())
        self._specs = _HostSpecs()
        self.manager = AsyncKernelManager(
            kernel_spec_manager=self._specs,
            kernel_name=self.kernel_name,
            transport="ipc",  # unix sockets in a private directory: no open TCP ports
            ip=os.path.join(self.dir, "ipc"),
            connection_file=os.path.join(self.dir, "kernel.json"),
        )
        self.client: Any = None
        self.pid: int | None = None
        self.pgid: int | None = None
        self.signal_group: int | None = None  # where an interrupt goes (in a sandbox: the kernel, not bwrap)
        self.killed = False
        self.closed = False
        self.started_at: float | None = None
        self.log_path = os.path.join(self.dir, "kernel.log")
        self.preinstalled: frozenset[str] = frozenset()  # set-up code already run in the kernel
        self._seccomp_fd: int | None = None  # the sandbox's seccomp filter, open while bwrap starts
        self._lock = threading.Lock()

    # ------------------------------------------------------------ lifecycle
    def start(self, cwd: str | None = None, timeout: float = STARTUP_TIMEOUT) -> "Kernel":
        """Launch the kernel (in its sandbox), connect a client and install the kernel-side runtime."""
        try:
            env = self._confine(cwd)
            passed = (lifecycle.lifeline(), *([] if self._seccomp_fd is None else [self._seccomp_fd]))
            with open(self.log_path, "wb") as output:  # the kernel's own logs, not the notebook's
                def starting() -> Any:
                    return self.manager.start_kernel(cwd=self.workspace or cwd or os.getcwd(), stdout=output,
                                                     stderr=output, pass_fds=passed,
                                                     **({"env": env} if env is not None else {}))

                # A sandbox dies with the thread that starts it (bwrap --die-with-parent): the launcher's
                # lives as long as this process.
                launcher.launch(starting) if env is not None else run_coroutine(starting())
        except Exception as exc:
            self.close()
            raise KernelStartError(f"could not start kernel {self.kernel_name!r}: {exc}") from exc
        finally:
            if self._seccomp_fd is not None:  # bwrap has read it (or never will)
                os.close(self._seccomp_fd)
                self._seccomp_fd = None
        provisioner = self.manager.provisioner
        self.pid, self.pgid = getattr(provisioner, "pid", None), getattr(provisioner, "pgid", None)
        self.started_at = time.time()
        if not lifecycle.register(self):
            self.kill()
            raise KernelStartError("the process is exiting")
        try:
            self.client = BlockingKernelClient(connection_file=self.manager.connection_file, context=zmq_context())
            self.client.load_connection_file()
            self.client.start_channels(hb=False)
            self._wait_ready(timeout)
            if self.isolation["sandbox"] == "bubblewrap":
                self.signal_group = _inner_pid(self.pid)
            if self.limits is not None:
                self.limits.started(self.pid, self.signal_group)
            self.run_setup(INSTALL.format(sources=shipped_sources(), host_pid=os.getpid(),
                                           lifeline_fd=lifecycle.lifeline(), kernel_dir=self.dir), timeout)
            self._preinstall_dspy_shim(timeout)
        except Exception as exc:
            detail = self.log_tail()
            self.close()
            raise KernelStartError(
                f"kernel {self.kernel_name!r} did not start: {exc}" + (f"\n{detail}" if detail else "")
            ) from exc
        return self

    def _confine(self, cwd: str | None) -> dict[str, str] | None:
        """Set up the sandbox this kernel starts in; the kernel's environment (None: the host's).
        Where bubblewrap cannot run, the kernel is marked not sandboxed, or refused if that is required."""
        if self.sandbox is None:
            return None
        limits = self.limits = KernelLimits(self.sandbox.limits, os.path.basename(self.dir))
        reason = self.sandbox.status()
        if reason is not None:
            if self.sandbox.required:
                raise KernelStartError(sandbox.refusal(reason))
            self.isolation = {"sandbox": "none", "reason": reason}
            self._specs.wrap = limits.command  # not sandboxed, still limited
            return None
        self.workspace = self.workspace or os.path.realpath(cwd or os.getcwd())
        os.makedirs(os.path.join(self.workspace, ".deepagent"), exist_ok=True)  # exists, so bound read-only
        network, size = self.sandbox.network, limits.tmpfs_size()
        self._seccomp_fd = seccomp_fd = seccomp.open_program() if sandbox.hardening(network).seccomp else None
        self._specs.wrap = lambda argv: limits.command(argv, lambda inner: sandbox.wrap(
            inner, workspace=self.workspace, kernel_dir=self.dir, network=network, seccomp_fd=seccomp_fd,
            tmpfs_size=size))
        self.isolation = self.sandbox.isolation()
        return sandbox.environment(dict(os.environ))

    def _preinstall_dspy_shim(self, timeout: float) -> None:
        """dspy.RLM runs its sandbox ``dspy`` shim as an interpreter's first code; run it now
        (the same source, with the stubs of the two host tools it calls) and skip it later."""
        from dspy.primitives.facade import (
            CALL_TOOL,
            CONSTRUCT_TOOL,
            HOST_TOKEN_VAR,
            SHIM_SETUP,
        )

        self.run_setup(f"{RUNTIME_NAME}.preinstall({SHIM_SETUP!r}, {[CONSTRUCT_TOOL, CALL_TOOL]!r}, "
                       f"{{{HOST_TOKEN_VAR!r}: ''}})", timeout)
        self.preinstalled = frozenset([SHIM_SETUP])

    def _wait_ready(self, timeout: float) -> None:
        """Until the kernel answers kernel_info on shell and its status reaches us on iopub
        (a SUB socket joins late: output sent before it has joined would be lost)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                raise KernelStartError(f"the kernel exited during start-up (exit code {self.exit_code()})")
            msg_id = self.client.kernel_info()
            replied = seen = False
            until = min(deadline, time.monotonic() + 1.0)
            while not (replied and seen) and time.monotonic() < until:
                for channel in (self.client.shell_channel, self.client.iopub_channel):
                    try:
                        msg = channel.get_msg(timeout=0.05)
                    except queue.Empty:
                        continue
                    if msg["parent_header"].get("msg_id") == msg_id:
                        replied |= msg["msg_type"] == "kernel_info_reply"
                        seen |= msg["msg_type"] == "status"
            if replied and seen:
                return
        raise KernelStartError(f"the kernel did not answer within {timeout:g} s")

    def run_setup(self, code: str, timeout: float = STARTUP_TIMEOUT) -> None:
        """Execute set-up code quietly and wait until it has run; raise on an error."""
        msg_id = self.client.execute(code, silent=True, store_history=False)
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not self.alive():
                raise KernelStartError("the kernel stopped answering during set-up")
            try:
                msg = self.client.iopub_channel.get_msg(timeout=min(left, 0.5))
            except queue.Empty:
                continue
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            if msg["msg_type"] == "error":
                content = msg["content"]
                raise KernelStartError(f"set-up failed: {content.get('ename')}: {content.get('evalue')}")
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                self._drain(self.client.shell_channel)
                return

    @staticmethod
    def _drain(channel: Any) -> None:
        while channel.msg_ready():
            channel.get_msg(timeout=0)

    def alive(self) -> bool:
        process = getattr(self.manager.provisioner, "process", None)
        return not self.killed and process is not None and process.poll() is None

    def exit_code(self) -> int | None:
        process = getattr(self.manager.provisioner, "process", None)
        return process.poll() if process is not None else None

    def interrupt(self) -> None:
        """Interrupt the code running in the kernel (SIGINT to its process group)."""
        if not self.alive():
            return
        try:
            spec = self.manager.kernel_spec
            group = self.signal_group or self.pgid
            if getattr(spec, "interrupt_mode", "signal") == "signal" and group:
                os.killpg(group, signal.SIGINT)
            else:  # a kernel that wants an interrupt_request message
                run_coroutine(self.manager.interrupt_kernel())
        except Exception:  # a kernel gone or not answering: the time limit kills it next
            log.debug("interrupting kernel %s failed", self.pid, exc_info=True)

    def kill(self) -> None:
        """Kill the kernel, every process below it and its process group now; safe from any thread."""
        with self._lock:
            first, self.killed = not self.killed, True
        if first:
            lifecycle.kill_kernel(self.pgid, self.pid)
            if self.limits is not None:
                self.limits.kill()  # all of its cgroup, whatever left the tree
        process = getattr(self.manager.provisioner, "process", None)
        if process is not None:
            try:
                process.wait(timeout=5)
            except Exception:  # a process that will not be reaped: said, and the keeper reaps it
                log.warning("kernel %s did not exit after SIGKILL", self.pid)

    def close(self) -> None:
        """Kill the kernel and release its sockets and files (from the thread using the client)."""
        if self.closed:
            return
        self.closed = True
        self.kill()
        try:
            if self.client is not None:
                self.client.stop_channels()
            if self.manager.provisioner is not None:
                # The manager's control socket and zmq context: closed now, never left to the
                # garbage collector (a context collected before its sockets blocks forever).
                run_coroutine(self.manager.cleanup_resources())
        except Exception:  # closing a dead kernel's sockets may fail in any way: its folder goes anyway
            log.debug("cleaning up kernel %s failed", self.pid, exc_info=True)
        shutil.rmtree(self.dir, ignore_errors=True)
        if self.limits is not None:
            self.limits.close()
        lifecycle.unregister(self)

    def log_tail(self, lines: int = 15) -> str:
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as handle:
                text = handle.read()[-4000:]
        except OSError:
            return ""
        return "\n".join(text.strip().splitlines()[-lines:])

    def __repr__(self) -> str:
        state = "closed" if self.closed else ("killed" if self.killed else ("alive" if self.alive() else "dead"))
        return f"<Kernel {self.kernel_name} pid={self.pid} {state}>"


_zmq_context: zmq.Context | None = None


def zmq_context() -> zmq.Context:
    """One zmq context for every kernel client (a context per client would be a thread each)."""
    global _zmq_context
    if _zmq_context is None:
        _zmq_context = zmq.Context()
    return _zmq_context


def start_kernel(kernel_name: str | None = None, cwd: str | None = None,
                 timeout: float = STARTUP_TIMEOUT, sandbox: SandboxPolicy | None = SandboxPolicy()) -> Kernel:
    """A started, connected, prepared kernel (what the pool hands out); ``cwd`` is its workspace."""
    return Kernel(kernel_name, sandbox=sandbox, workspace=cwd).start(cwd=cwd, timeout=timeout)


def _inner_pid(pid: int | None) -> int | None:
    """The kernel below a sandbox's ``bwrap`` (its only child: PID 1 of its namespace, leading its group)."""
    if not pid:
        return None
    try:
        with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as handle:
            children = handle.read().split()
    except OSError:
        from .. import processes

        children = [str(child) for child in processes.descendants(pid)[:1]]
    return int(children[0]) if children else None


def shipped_sources() -> list[tuple[str, str, str]]:
    """(name, filename, source) of each module in `SHIPPED`; kernel_side compiles as RUNTIME_FILENAME
    (the agent's tracebacks leave its frames out by that name)."""
    global _SOURCES
    if _SOURCES is None:
        folder = os.path.dirname(kernel_side.__file__)
        sources = []
        for name in SHIPPED:
            with open(os.path.join(folder, *f"{name}.py".split("/")), encoding="utf-8") as handle:
                filename = kernel_side.RUNTIME_FILENAME if name == "kernel_side" else f"<deepagent {name}>"
                sources.append((name.replace("/", "_"), filename, handle.read()))
        _SOURCES = sources
    return _SOURCES


_SOURCES: list[tuple[str, str, str]] | None = None
