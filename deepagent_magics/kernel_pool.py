"""Fresh Jupyter kernels for sub-agents, started ahead of need.

A sub-agent's REPL is a kernel of its own (a separate process), used by exactly
one sub-agent and killed after it. Starting a kernel takes about a second, so a
`KernelPool` keeps a few started, connected and prepared (the kernel-side
runtime installed), and refills in the background as they are taken::

    pool = KernelPool(size=2).warm()
    kernel = pool.take()        # a ready Kernel; cold-started if none is ready
    ...
    pool.release(kernel)        # kills it
    pool.stop()                 # kills every kernel the pool started

By default a kernel runs the host's own Python (``sys.executable -m
ipykernel_launcher``), so it has the same packages; ``kernel_name`` picks an
installed kernel spec instead.

No kernel may outlive the process that started it: each kernel is its own
process group, and at exit every live one is killed with ``killpg``; if the
host dies without running atexit (SIGKILL), the kernel-side runtime notices
within half a second and kills its own process group (ipykernel's parent
poller would end the kernel too, but not what the agent's code started).
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
import weakref
from collections import deque
from typing import Any

import zmq
from jupyter_client import AsyncKernelManager, BlockingKernelClient
from jupyter_client.kernelspec import KernelSpec, KernelSpecManager

from . import kernel_side
from .kernel_side import RUNTIME_NAME

log = logging.getLogger(__name__)

HOST_KERNEL = "deepagent-host-python"
DEFAULT_SIZE = 2
STARTUP_TIMEOUT = 60.0

_INSTALL = (
    "def _deepagent_install(source):\n"
    "    import sys, types\n"
    "    module = types.ModuleType('_deepagent_kernel_side')\n"
    "    exec(compile(source, {filename!r}, 'exec'), module.__dict__)\n"
    "    sys.modules[module.__name__] = module\n"
    "    module.install(host_pid={host_pid}, lifeline_fd={lifeline_fd}, kernel_dir={kernel_dir!r})\n"
    "_deepagent_install({source!r})\n"
    "del _deepagent_install\n"
)


class KernelStartError(RuntimeError):
    """A kernel could not be started (a missing kernel spec, a kernel that died at start-up)."""


class _HostSpecs(KernelSpecManager):
    """Kernel specs in which `HOST_KERNEL` is the host's own interpreter."""

    def get_kernel_spec(self, kernel_name: str) -> KernelSpec:
        if kernel_name == HOST_KERNEL:
            return KernelSpec(
                argv=[sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                display_name="Python (deepagent host)",
                language="python",
                env={},
                metadata={},
            )
        return super().get_kernel_spec(kernel_name)


# Every kernel process started here and not yet closed: what the exit handler kills.
_live: set["Kernel"] = set()
_live_lock = threading.Lock()
_exiting = False


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

    def __init__(self, kernel_name: str | None = None):
        self.kernel_name = kernel_name or HOST_KERNEL
        self.dir = tempfile.mkdtemp(prefix="k-", dir=_host_dir())
        self.manager = AsyncKernelManager(
            kernel_spec_manager=_HostSpecs(),
            kernel_name=self.kernel_name,
            transport="ipc",  # unix sockets in a private directory: no open TCP ports
            ip=os.path.join(self.dir, "ipc"),
            connection_file=os.path.join(self.dir, "kernel.json"),
        )
        self.client: Any = None
        self.pid: int | None = None
        self.pgid: int | None = None
        self.killed = False
        self.closed = False
        self.started_at: float | None = None
        self.log_path = os.path.join(self.dir, "kernel.log")
        self.preinstalled: frozenset[str] = frozenset()  # set-up code already run in the kernel
        self._lock = threading.Lock()

    # ------------------------------------------------------------ lifecycle
    def start(self, cwd: str | None = None, timeout: float = STARTUP_TIMEOUT) -> "Kernel":
        """Launch the kernel, connect a client and install the kernel-side runtime."""
        try:
            with open(self.log_path, "wb") as output:  # the kernel's own logs, not the notebook's
                _run_async(self.manager.start_kernel(cwd=cwd or os.getcwd(), stdout=output, stderr=output,
                                                     pass_fds=(_lifeline(),)))
        except Exception as exc:
            self.close()
            raise KernelStartError(f"could not start kernel {self.kernel_name!r}: {exc}") from exc
        provisioner = self.manager.provisioner
        self.pid, self.pgid = getattr(provisioner, "pid", None), getattr(provisioner, "pgid", None)
        self.started_at = time.time()
        _register(self)
        try:
            self.client = BlockingKernelClient(connection_file=self.manager.connection_file, context=_context())
            self.client.load_connection_file()
            self.client.start_channels(hb=False)
            self._wait_ready(timeout)
            self.run_setup(_INSTALL.format(source=_source(), filename=kernel_side.RUNTIME_FILENAME,
                                           host_pid=os.getpid(), lifeline_fd=_lifeline(), kernel_dir=self.dir),
                           timeout)
            self._preinstall_dspy_shim(timeout)
        except Exception as exc:
            detail = self.log_tail()
            self.close()
            raise KernelStartError(
                f"kernel {self.kernel_name!r} did not start: {exc}" + (f"\n{detail}" if detail else "")
            ) from exc
        return self

    def _preinstall_dspy_shim(self, timeout: float) -> None:
        """dspy.RLM runs its sandbox ``dspy`` shim as an interpreter's first code; run it now
        (the same source, with the stubs of the two host tools it calls) and skip it later."""
        from dspy.primitives.facade import CALL_TOOL, CONSTRUCT_TOOL, HOST_TOKEN_VAR, SHIM_SETUP

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
                    except Exception:  # queue.Empty
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
            except Exception:  # queue.Empty
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
            if getattr(spec, "interrupt_mode", "signal") == "signal" and self.pgid:
                os.killpg(self.pgid, signal.SIGINT)
            else:  # a kernel that wants an interrupt_request message
                _run_async(self.manager.interrupt_kernel())
        except Exception:
            log.debug("interrupting kernel %s failed", self.pid, exc_info=True)

    def kill(self) -> None:
        """Kill the kernel's process group now; safe from any thread."""
        with self._lock:
            first, self.killed = not self.killed, True
        if first:
            _killpg(self.pgid, self.pid)
        process = getattr(self.manager.provisioner, "process", None)
        if process is not None:
            try:
                process.wait(timeout=5)
            except Exception:
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
                _run_async(self.manager.cleanup_resources())
        except Exception:
            log.debug("cleaning up kernel %s failed", self.pid, exc_info=True)
        shutil.rmtree(self.dir, ignore_errors=True)
        with _live_lock:
            _live.discard(self)

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


def _run_async(coroutine: Any) -> Any:
    """Run a coroutine to completion from synchronous code, in this thread or (when a loop
    already runs here, as on a notebook's main thread) in a helper thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = asyncio.run(coroutine)
        except BaseException as exc:
            outcome["error"] = exc

    helper = threading.Thread(target=run, name="deepagent-kernel-start", daemon=True)
    helper.start()
    helper.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


_zmq_context: zmq.Context | None = None
_lifeline_pipe: tuple[int, int, int] | None = None


def _lifeline() -> int:
    """The read end of a pipe whose write end only this process holds (both are
    non-inheritable; each kernel gets the read end): it reads EOF in a kernel the moment
    this process is gone, however it died."""
    global _lifeline_pipe
    with _live_lock:
        if _lifeline_pipe is None or _lifeline_pipe[2:] != (os.getpid(),):
            read, write = os.pipe()
            _lifeline_pipe = (read, write, os.getpid())
        return _lifeline_pipe[0]


def _context() -> zmq.Context:
    """One zmq context for every kernel client (a context per client would be a thread each)."""
    global _zmq_context
    if _zmq_context is None:
        _zmq_context = zmq.Context()
    return _zmq_context


def start_kernel(kernel_name: str | None = None, cwd: str | None = None,
                 timeout: float = STARTUP_TIMEOUT) -> Kernel:
    """A started, connected, prepared kernel (what the pool hands out)."""
    return Kernel(kernel_name).start(cwd=cwd, timeout=timeout)


class KernelPool:
    """Kernels started ahead of need; each is taken by one sub-agent and killed after it.

    Args:
        size: how many ready kernels to keep (0: start each on demand).
        kernel_name: an installed kernel spec; default the host's own Python.
        cwd: the directory kernels start in (the runtime moves each to its workspace).
    """

    def __init__(self, size: int = DEFAULT_SIZE, kernel_name: str | None = None, cwd: str | None = None,
                 startup_timeout: float = STARTUP_TIMEOUT):
        if size < 0:
            raise ValueError(f"pool size must be >= 0, got {size}")
        self.size = size
        self.kernel_name = kernel_name
        self.cwd = cwd
        self.startup_timeout = startup_timeout
        self.closed = False
        self.last_error: str | None = None
        self.started = 0  # kernels this pool has started, for stats
        self._ready: deque[Kernel] = deque()
        self._in_use: set[Kernel] = set()
        self._starting: set[Kernel] = set()  # cold starts in take()
        self._warming: set[Kernel] = set()  # started by the filler
        self._claims = 0  # takers waiting for a warming kernel
        self._cond = threading.Condition()
        self._filler: threading.Thread | None = None
        _pools.add(self)

    # ------------------------------------------------------------ using
    def warm(self) -> "KernelPool":
        """Start filling the pool in the background (returns at once)."""
        with self._cond:
            if self.closed or self.size == 0:
                return self
            if self._filler is None or not self._filler.is_alive():
                self._filler = threading.Thread(target=self._fill, name="deepagent-kernel-pool", daemon=True)
                self._filler.start()
            self._cond.notify_all()
        return self

    def take(self) -> Kernel:
        """A ready kernel, or a cold-started one when none is ready; the pool then refills."""
        with self._cond:
            if self.closed:
                raise KernelStartError("the kernel pool is stopped")
            if not self._ready and len(self._warming) > self._claims:
                # A kernel the filler is starting will be ready sooner than a cold start here.
                self._claims += 1
                try:
                    while not self._ready and not self.closed and self._warming:
                        self._cond.wait(0.5)
                finally:
                    self._claims -= 1
            kernel = self._ready.popleft() if self._ready else None
            if kernel is not None:
                self._in_use.add(kernel)
        self.warm()
        if kernel is not None:
            if kernel.alive():
                return kernel
            self.release(kernel)  # died while waiting: start another
        kernel = Kernel(self.kernel_name)
        with self._cond:
            self._starting.add(kernel)
        try:
            kernel.start(self.cwd, self.startup_timeout)
        finally:
            with self._cond:
                self._starting.discard(kernel)
                if not kernel.closed:
                    self.started += 1
                    self._in_use.add(kernel)
                stopped = self.closed
        if stopped:
            kernel.close()
            raise KernelStartError("the kernel pool is stopped")
        return kernel

    def release(self, kernel: Kernel) -> None:
        """Kill a kernel taken from the pool (it is used once)."""
        kernel.close()
        with self._cond:
            self._in_use.discard(kernel)

    def resize(self, size: int) -> None:
        if size < 0:
            raise ValueError(f"pool size must be >= 0, got {size}")
        with self._cond:
            self.size = size
            extra = [self._ready.pop() for _ in range(max(0, len(self._ready) - size))]
            self._cond.notify_all()
        for kernel in extra:
            kernel.close()
        if size:
            self.warm()

    def wait_ready(self, count: int | None = None, timeout: float = STARTUP_TIMEOUT) -> bool:
        """Block until ``count`` (default: size) kernels are ready; False on timeout."""
        count = self.size if count is None else count
        self.warm()
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self._ready) < count and not self.closed:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, 0.5))
        return len(self._ready) >= count

    @property
    def ready(self) -> int:
        return len(self._ready)

    def pids(self) -> list[int]:
        """Process ids of every kernel of this pool still alive (ready, starting or in use)."""
        with self._cond:
            kernels = list(self._ready) + list(self._in_use) + list(self._starting) + list(self._warming)
        return [k.pid for k in kernels if k.pid is not None and k.alive()]

    # ------------------------------------------------------------ stopping
    def stop(self) -> None:
        """Kill every kernel of this pool; the pool cannot be used afterwards."""
        with self._cond:
            self.closed = True
            ready, self._ready = list(self._ready), deque()
            busy = list(self._in_use) + list(self._starting) + list(self._warming)
            self._cond.notify_all()
        for kernel in busy:
            kernel.kill()  # their users close them; the process is gone now
        for kernel in ready:
            kernel.close()
        filler = self._filler
        if filler is not None and filler is not threading.current_thread():
            filler.join(timeout=10)

    def __enter__(self) -> "KernelPool":
        return self.warm()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def __deepcopy__(self, memo: dict) -> "KernelPool":
        return self  # a shared resource: copies of an agent share its pool

    def __repr__(self) -> str:
        state = "stopped" if self.closed else f"{len(self._ready)}/{self.size} ready, {len(self._in_use)} in use"
        return f"<KernelPool {self.kernel_name or HOST_KERNEL}: {state}>"

    # ------------------------------------------------------------ filling
    def _fill(self) -> None:
        failures = 0
        while True:
            with self._cond:
                while not self.closed and len(self._ready) + len(self._warming) >= self.size:
                    self._cond.wait()
                if self.closed:
                    return
                kernel = Kernel(self.kernel_name)
                self._warming.add(kernel)
            try:
                kernel.start(self.cwd, self.startup_timeout)
            except Exception as exc:
                with self._cond:
                    self._warming.discard(kernel)
                    self._cond.notify_all()
                    if self.closed:
                        return
                    self.last_error = str(exc)
                    failures += 1
                    log.warning("deepagent kernel pool: %s", exc)
                    self._cond.wait(min(30.0, 2.0 ** failures))  # back off; stop() wakes us
                continue
            failures = 0
            with self._cond:
                self._warming.discard(kernel)
                self.started += 1
                self._cond.notify_all()
                if not self.closed and len(self._ready) < self.size:
                    self._ready.append(kernel)
                    self._cond.notify_all()
                    kernel = None
            if kernel is not None:
                kernel.close()


# ---------------------------------------------------------------- the default pool
_pools: "weakref.WeakSet[KernelPool]" = weakref.WeakSet()
_default: KernelPool | None = None
_default_lock = threading.Lock()
_UNSET: Any = object()


def default_pool(size: int | None = None, kernel_name: str | None = _UNSET) -> KernelPool:
    """The process-wide pool sub-agents use unless given one; resized or replaced to match the settings."""
    global _default
    with _default_lock:
        pool = _default
        if pool is not None and not pool.closed and kernel_name is not _UNSET and kernel_name != pool.kernel_name:
            pool.stop()
            pool = None
        if pool is None or pool.closed:
            pool = _default = KernelPool(
                DEFAULT_SIZE if size is None else size,
                kernel_name=None if kernel_name is _UNSET else kernel_name,
            )
        elif size is not None and size != pool.size:
            pool.resize(size)
        return pool


def stop_default_pool() -> None:
    global _default
    with _default_lock:
        pool, _default = _default, None
    if pool is not None:
        pool.stop()


# ---------------------------------------------------------------- process exit
def _killpg(pgid: int | None, pid: int | None) -> None:
    try:
        if pgid and pgid != os.getpgid(0):
            os.killpg(pgid, signal.SIGKILL)
        elif pid:
            os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _register(kernel: Kernel) -> None:
    with _live_lock:
        exiting = _exiting
        if not exiting:
            _live.add(kernel)
    if exiting:
        kernel.kill()
        raise KernelStartError("the process is exiting")


def live_kernel_pids() -> list[int]:
    """Process ids of every kernel started in this process and not yet closed."""
    with _live_lock:
        return [k.pid for k in _live if k.pid is not None and not k.killed]


HOST_DIR_PREFIX = "deepagent-kernels-"
_host_dirs: dict[int, str] = {}


def _host_dir() -> str:
    """This process's directory for its kernels' files. A host killed outright cannot remove it,
    so the first one made in a process also removes those of processes that no longer exist."""
    pid = os.getpid()
    with _live_lock:
        if pid not in _host_dirs:
            _sweep_dead_hosts()
            _host_dirs[pid] = tempfile.mkdtemp(prefix=f"{HOST_DIR_PREFIX}{pid}-")
        return _host_dirs[pid]


def _sweep_dead_hosts() -> None:
    root = tempfile.gettempdir()
    for name in os.listdir(root):
        if not name.startswith(HOST_DIR_PREFIX):
            continue
        try:
            pid = int(name[len(HOST_DIR_PREFIX):].split("-")[0])
            os.kill(pid, 0)
        except ProcessLookupError:
            shutil.rmtree(os.path.join(root, name), ignore_errors=True)
        except (ValueError, PermissionError):
            continue


def live_kernel_dirs() -> list[str]:
    """The private directories (connection file, sockets, log) of those kernels."""
    with _live_lock:
        return [k.dir for k in _live if not k.killed]


def _at_exit() -> None:
    """Kill every kernel's process group; no jupyter_client calls (the interpreter is going away)."""
    global _exiting
    with _live_lock:
        _exiting = True
        kernels = list(_live)
    for pool in list(_pools):
        with pool._cond:
            pool.closed = True
            pool._cond.notify_all()
    for kernel in kernels:
        kernel.killed = True
        _killpg(kernel.pgid, kernel.pid)
    for kernel in kernels:
        process = getattr(kernel.manager.provisioner, "process", None)
        try:
            if process is not None:
                process.wait(timeout=2)
        except Exception:
            pass
        shutil.rmtree(kernel.dir, ignore_errors=True)
    if _host_dirs.get(os.getpid()):
        shutil.rmtree(_host_dirs[os.getpid()], ignore_errors=True)


atexit.register(_at_exit)


def _source() -> str:
    global _SOURCE
    if _SOURCE is None:
        with open(kernel_side.__file__, encoding="utf-8") as handle:
            _SOURCE = handle.read()
    return _SOURCE


_SOURCE: str | None = None
