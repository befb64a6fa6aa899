"""No kernel outlives the process that started it.

- Every started kernel is registered here until it is closed; at exit each live
  one is killed with every process below it and its process group (`at_exit`,
  `kill_kernel`), and pools are marked closed.
- Each kernel gets the read end of a *lifeline* pipe whose write end only this
  process holds: it reads EOF in the kernel the moment this process is gone,
  however it died (SIGKILL included), and the kernel-side runtime then kills every
  process below it and its own process group.
- Each process keeps its kernels' files (connection file, sockets, logs) in one
  host directory, removed at exit; the first one made in a process also removes
  those left by processes that no longer exist.
- A stopped kernel runs nothing, not even its watch thread: each kernel is also told
  to this process's `keeper`, a process outside every kernel that SIGKILLs the kernel's
  tree when this process is gone, whether the kernel was stopped or not.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import tempfile
import threading
import weakref
from typing import Any, Protocol

from .. import processes
from . import keeper


class Kernel(Protocol):
    """What this module needs of a `pooled_kernel.Kernel` (which imports this module)."""

    pid: int
    pgid: int
    dir: str
    killed: bool
    manager: Any
    limits: Any  # a kernel_limits.KernelLimits (its cgroup), or None


HOST_DIR_PREFIX = keeper.KERNEL_DIRS_PREFIX

_live: set[Kernel] = set()  # started here and not yet closed: what the exit handler kills
_lock = threading.Lock()
_exiting = False
_pools: "weakref.WeakSet[Any]" = weakref.WeakSet()  # KernelPools, closed at exit
_host_dirs: dict[int, str] = {}
_lifeline_pipe: tuple[int, int, int] | None = None


def register(kernel: Kernel) -> bool:
    """Track a started kernel; False when the process is already exiting (the caller kills it)."""
    with _lock:
        if not _exiting:
            _live.add(kernel)
        exiting = _exiting
    if not exiting:
        keeper.watch(kernel.pid, kernel.pgid, kernel.dir)
    return not exiting


def unregister(kernel: Kernel) -> None:
    with _lock:
        _live.discard(kernel)
    keeper.forget(kernel.pid)


def register_pool(pool: Any) -> None:
    _pools.add(pool)


def live_kernel_pids() -> list[int]:
    """Process ids of every kernel started in this process and not yet closed."""
    with _lock:
        return [k.pid for k in _live if k.pid is not None and not k.killed]


def live_kernel_dirs() -> list[str]:
    """The private directories (connection file, sockets, log) of those kernels."""
    with _lock:
        return [k.dir for k in _live if not k.killed]


def kill_kernel(pgid: int | None, pid: int | None) -> None:
    """SIGKILL a kernel, every process below it (even those that left its group: the kernel is
    their subreaper; see `processes.kill_tree`), and its process group (or the process, when it
    shares ours)."""
    if pid:
        processes.kill_tree(pid)
    try:
        if pgid and pgid != os.getpgid(0):
            os.killpg(pgid, signal.SIGKILL)
        elif pid:
            os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def lifeline() -> int:
    """The read end of a pipe whose write end only this process holds (both are non-inheritable;
    each kernel is passed the read end explicitly)."""
    global _lifeline_pipe
    with _lock:
        if _lifeline_pipe is None or _lifeline_pipe[2:] != (os.getpid(),):
            read, write = os.pipe()
            _lifeline_pipe = (read, write, os.getpid())
        return _lifeline_pipe[0]


def host_dir() -> str:
    """This process's directory for its kernels' files."""
    pid = os.getpid()
    with _lock:
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


def at_exit() -> None:
    """Kill every kernel's process group; no jupyter_client calls (the interpreter is going away)."""
    global _exiting
    with _lock:
        _exiting = True
        kernels = list(_live)
    for pool in list(_pools):
        pool.close_for_exit()
    for kernel in kernels:
        kernel.killed = True
        kill_kernel(kernel.pgid, kernel.pid)
    for kernel in kernels:
        process = getattr(kernel.manager.provisioner, "process", None)
        try:
            if process is not None:
                process.wait(timeout=2)
        except Exception:  # a kernel not reaped in 2 s, or already reaped: the keeper reaps what is left
            pass
        shutil.rmtree(kernel.dir, ignore_errors=True)
        if getattr(kernel, "limits", None) is not None:
            kernel.limits.close()
    if _host_dirs.get(os.getpid()):
        shutil.rmtree(_host_dirs[os.getpid()], ignore_errors=True)


atexit.register(at_exit)
