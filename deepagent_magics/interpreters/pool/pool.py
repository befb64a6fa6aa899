"""Kernels for sub-agents, started ahead of need.

A sub-agent's REPL is a kernel of its own (a separate process), used by exactly
one sub-agent and killed after it. Starting a kernel takes about a second, so a
`KernelPool` keeps a few started, connected and prepared, and refills in the
background as they are taken::

    pool = KernelPool(size=2).warm()
    kernel = pool.take()        # a ready Kernel; cold-started if none is ready
    ...
    pool.release(kernel)        # kills it
    pool.stop()                 # kills every kernel the pool started

`default_pool` is the process-wide pool sub-agents use unless given one.

A local kernel starts in a sandbox (`sandbox`) in which only its workspace is writable, so
a ready kernel serves one workspace: ``take(workspace)`` of another one closes the ready
kernels and refills for it.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from typing import Any

from ...settings import MAX_POOL, SETTINGS
from . import lifecycle
from .pooled_kernel import HOST_KERNEL, STARTUP_TIMEOUT, Kernel, KernelStartError
from .sandbox import SandboxPolicy

log = logging.getLogger(__name__)

DEFAULT_SIZE = SETTINGS["pool_size"].default
MAX_SIZE = MAX_POOL  # (settings.py) each ready kernel is a started process (~100 MB); more kept idle is a typo, not a plan


def check_size(size: int) -> None:
    if not 0 <= size <= MAX_SIZE:
        raise ValueError(f"pool size must be between 0 and {MAX_SIZE}, got {size}")



class KernelPool:
    """Kernels started ahead of need; each is taken by one sub-agent and killed after it.

    Args:
        size: how many ready kernels to keep (0: start each on demand).
        kernel_name: an installed kernel spec; default the host's own Python.
        cwd: the workspace kernels are started for until `take` or `warm` names another (default:
            the current directory).
        gateway: a `gateway.Gateway` (or its URL) to start the kernels on instead of this machine.
        sandbox: how local kernels are confined (`sandbox.SandboxPolicy`); None: not at all.
    """

    def __init__(self, size: int = DEFAULT_SIZE, kernel_name: str | None = None, cwd: str | None = None,
                 startup_timeout: float = STARTUP_TIMEOUT, gateway: Any = None,
                 sandbox: SandboxPolicy | None = SandboxPolicy()):
        check_size(size)
        self.size = size
        self.kernel_name = kernel_name
        self.cwd = cwd
        self.sandbox = sandbox
        self.workspace = os.path.realpath(cwd) if cwd else None
        self.startup_timeout = startup_timeout
        self.gateway = _as_gateway(gateway)
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
        lifecycle.register_pool(self)

    # ------------------------------------------------------------ using
    def warm(self, workspace: str | None = None) -> "KernelPool":
        """Start filling the pool in the background (returns at once), with kernels for ``workspace``."""
        if workspace:
            self.retarget(workspace)
        with self._cond:
            if self.closed or self.size == 0:
                return self
            if self._filler is None or not self._filler.is_alive():
                self._filler = threading.Thread(target=self._fill, name="deepagent-kernel-pool", daemon=True)
                self._filler.start()
            self._cond.notify_all()
        return self

    def take(self, workspace: str | None = None) -> Kernel:
        """A ready kernel for ``workspace``, or a cold-started one when none is ready; the pool then refills."""
        if workspace:
            self.retarget(workspace)
        workspace = os.path.realpath(workspace) if workspace else self.workspace
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
            if kernel.alive() and _fits(kernel, workspace):
                return kernel
            self.release(kernel)  # died while waiting, or made for another workspace: start another
        kernel = self._new_kernel(workspace)
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

    def retarget(self, workspace: str) -> None:
        """Kernels from now on are for ``workspace``; ready ones made for another are closed."""
        workspace = os.path.realpath(workspace)
        with self._cond:
            if workspace == self.workspace:
                return
            self.workspace = workspace
            stale = [kernel for kernel in self._ready if not _fits(kernel, workspace)]
            for kernel in stale:
                self._ready.remove(kernel)
            self._cond.notify_all()
        for kernel in stale:
            kernel.close()

    @property
    def isolation(self) -> dict[str, Any]:
        """What confines this pool's kernels, as a sub-agent's record says it."""
        if self.gateway is not None:
            return {"sandbox": "gateway"}  # the gateway's containers, not this machine
        if self.sandbox is None:
            return {"sandbox": "none", "reason": "the sandbox is switched off for this pool"}
        return self.sandbox.isolation()

    def resize(self, size: int) -> None:
        check_size(size)
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

    def close_for_exit(self) -> None:
        """At process exit: refuse further use and wake waiters (the kernels are killed by lifecycle)."""
        with self._cond:
            self.closed = True
            self._cond.notify_all()

    def __enter__(self) -> "KernelPool":
        return self.warm()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def __deepcopy__(self, memo: dict) -> "KernelPool":
        return self  # a shared resource: copies of an agent share its pool

    def __repr__(self) -> str:
        state = "stopped" if self.closed else f"{len(self._ready)}/{self.size} ready, {len(self._in_use)} in use"
        return f"<KernelPool {self.kernel_name or HOST_KERNEL}: {state}>"

    def _new_kernel(self, workspace: str | None = None) -> Kernel:
        if self.gateway is not None:  # the limits that a kernel sets on itself hold there too
            return self.gateway.kernel(self.kernel_name, self.sandbox.limits if self.sandbox is not None else None)
        return Kernel(self.kernel_name, sandbox=self.sandbox, workspace=workspace or self.workspace)

    # ------------------------------------------------------------ filling
    def _fill(self) -> None:
        failures = 0
        while True:
            with self._cond:
                while not self.closed and len(self._ready) + len(self._warming) >= self.size:
                    self._cond.wait()
                if self.closed:
                    return
                kernel = self._new_kernel()
                self._warming.add(kernel)
            try:
                kernel.start(self.cwd, self.startup_timeout)
            except Exception as exc:  # any failure to start a kernel: logged, kept in last_error, tried again later
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
                if not self.closed and len(self._ready) < self.size and _fits(kernel, self.workspace):
                    self._ready.append(kernel)
                    self._cond.notify_all()
                    kernel = None
            if kernel is not None:
                kernel.close()


def _fits(kernel: Kernel, workspace: str | None) -> bool:
    """Whether ``kernel`` can work in ``workspace``: a sandboxed one only in the workspace it was started for."""
    return kernel.isolation.get("sandbox") != "bubblewrap" or workspace is None or kernel.workspace == workspace


def _as_gateway(gateway: Any) -> Any:
    if gateway is None:
        return None
    from .gateway import as_gateway

    return as_gateway(gateway)


def _gateway_key(gateway: Any) -> Any:
    return None if gateway is None else (gateway.url, gateway.client.auth_token)


# ---------------------------------------------------------------- the default pool
_default: KernelPool | None = None
_default_lock = threading.Lock()
_UNSET: Any = object()


def default_pool(size: int | None = None, kernel_name: str | None = _UNSET, gateway: Any = _UNSET,
                 sandbox: SandboxPolicy | None = _UNSET) -> KernelPool:
    """The process-wide pool sub-agents use unless given one; resized or replaced to match the settings
    (``gateway``: a `gateway.Gateway`, its URL, or None for this machine; ``sandbox``: a `SandboxPolicy`)."""
    global _default
    gateway = _as_gateway(gateway) if gateway is not _UNSET else _UNSET
    with _default_lock:
        pool = _default
        if pool is not None and not pool.closed and (
                (kernel_name is not _UNSET and kernel_name != pool.kernel_name)
                or (gateway is not _UNSET and _gateway_key(gateway) != _gateway_key(pool.gateway))
                or (sandbox is not _UNSET and sandbox != pool.sandbox)):
            pool.stop()
            pool = None
        if pool is None or pool.closed:
            pool = _default = KernelPool(
                DEFAULT_SIZE if size is None else size,
                kernel_name=None if kernel_name is _UNSET else kernel_name,
                gateway=None if gateway is _UNSET else gateway,
                sandbox=SandboxPolicy() if sandbox is _UNSET else sandbox,
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
