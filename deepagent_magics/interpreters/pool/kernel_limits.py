"""One kernel's limits at work: how its command holds them, and which one it hit (`limits` says what they are).

A `KernelLimits` is made with its kernel. `command` turns the kernel's command line (already inside its
sandbox, or not) into one that holds the limits: the cgroup's joining shell first (`cgroups`), then
bubblewrap, then ``prlimit`` (so a user namespace counts its own processes), then the kernel. While a
sub-agent's code runs, the interpreter's wait loop asks `check` (cheap: a few counters, one ``statvfs``);
when the kernel died, `after_death` reads why (the cgroup's counters, the signal that ended it); when a
step failed, `after_error` reads the traceback for what an rlimit refused.

The disk check: the used space of the workspace's file system (and the kernel folder's) against what it
was when the sub-agent took the kernel; only when that grew past the limit are the workspace's files
changed since then added up (stopping at the limit), so writes elsewhere on the disk are never blamed on
the sub-agent. Such a walk waits `WALK_COST` times as long as the last one took (at least `CHECK_EVERY`):
a small workspace is looked at again at the next check, a huge one costs at most a tenth of a core. A
step's first check and its last (`after_step`) look whatever the last walk took, so a process the sub-agent
leaves running between its steps is caught at its next step, and a step that ends past the limit is seen.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import threading
import time
from typing import Any, Callable

from . import cgroups
from .limits import MiB, NOT_HELD, OFF, RLIMIT, TMPFS_SIZE, WORKSPACE_CHECK, LimitHit, ResourceLimits, from_error
from .limits import counts_processes, rlimit_command, rlimits

CHECK_EVERY = 0.1  # seconds between two checks of the counters while code runs
WALK_COST = 10  # the next walk of the workspace waits this many times as long as the last one took
TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


class KernelLimits:
    """The limits of one kernel: made before it starts, closed after it (which removes its cgroup)."""

    def __init__(self, limits: ResourceLimits, name: str, remote: bool = False):
        self.limits, self.remote = limits, remote
        self.group: cgroups.KernelGroup | None = None
        found = cgroups.mechanism() if (limits.processes or limits.memory) and not remote else None
        if found is not None:
            with contextlib.suppress(OSError):
                self.group = found.group(name, limits.processes, limits.memory * MiB)
        self.sandboxed = False
        self.held = self._held(counted=False)
        self.record = self._record()  # what the sub-agent's record says: each limit's value and what holds it
        self.inner: int | None = None  # the kernel's own process (below bubblewrap), for its CPU time
        self.cpu_seen = 0.0
        self.hit: LimitHit | None = None
        self._disk: _DiskWatch | None = None
        self._checked = 0.0
        self._lock = threading.Lock()

    # ------------------------------------------------------------ starting
    def command(self, argv: list[str], sandbox: Callable[[list[str]], list[str]] | None = None) -> list[str]:
        """``argv`` (the kernel's command) in ``sandbox`` (which wraps a command line), holding the limits."""
        wrapped = sandbox(list(argv)) if sandbox is not None else list(argv)
        head = wrapped[:len(wrapped) - len(argv)]  # bubblewrap and its arguments, up to its "--"
        self.sandboxed = bool(head)
        self.held = self._held(counted=counts_processes(head))
        self.record = self._record()
        pairs = rlimits(self.limits, processes=self.held["processes"] == RLIMIT, memory=self.held["memory"] == RLIMIT)
        inside = [*head, *rlimit_command(pairs), *argv]
        return self.group.command(inside) if self.group is not None else cgroups.joined(inside)

    def tmpfs_size(self) -> int | None:
        """Bytes each in-memory folder of the sandbox may hold (its /tmp): the disk limit, where bwrap can."""
        return self.limits.disk * MiB if self.limits.disk and _bwrap_sizes() else None

    def started(self, pid: int | None, inner: int | None) -> None:
        """The kernel runs: ``pid`` is what was started (bubblewrap), ``inner`` the kernel itself."""
        self.inner = inner or pid
        if self.group is not None:
            self.group.found(pid)

    def remote_setup(self) -> str:
        """Code a kernel on a gateway runs once, as its first: the rlimits it can set on itself (never above
        its own hard limits). Its processes, its tree's memory and its disk are the gateway's to limit."""
        pairs = rlimits(self.limits, processes=False, memory=True, ceiling=False)
        return ("import resource as _r\n"
                f"for _n, _s, _h in {pairs!r}:\n"
                "    _k = getattr(_r, 'RLIMIT_' + _n); _c = _r.getrlimit(_k)[1]\n"
                "    _r.setrlimit(_k, (_s, _h) if _c == _r.RLIM_INFINITY else (min(_s, _c), min(_h, _c)))\n"
                "del _r, _n, _s, _h, _k, _c\n")

    def begin(self, folders: list[str]) -> None:
        """A sub-agent takes the kernel: what it adds to ``folders`` (its workspace, the kernel's folder) counts."""
        if self.limits.disk and not self.remote:
            self._disk = _DiskWatch(self.limits.disk * MiB, [folder for folder in folders if folder])

    # ------------------------------------------------------------ while it runs
    def check(self, force: bool = False) -> LimitHit | None:
        """The limit this kernel hit, if any (at most every `CHECK_EVERY` seconds unless ``force``)."""
        now = time.monotonic()
        if not force and now - self._checked < CHECK_EVERY:
            return self.hit
        self._checked = now
        self._sample_cpu()
        if self.hit is None and self.group is not None:
            found = self.group.hit()
            if found is not None:
                self._found(found, self.group.kind)
        if self.hit is None and self._disk is not None and self._disk.over(force):
            self._found("disk", WORKSPACE_CHECK)
        return self.hit

    def after_death(self, exit_code: int | None) -> LimitHit | None:
        """Why the kernel died, when a limit killed it: the cgroup's counters, else the signal that ended it
        (bubblewrap exits with 128 + the signal of the kernel it held)."""
        if self.check(force=True) is not None:
            return self.hit
        if exit_code is None:
            return None
        number = -exit_code if exit_code < 0 else (exit_code - 128 if self.sandboxed and exit_code > 128 else 0)
        cpu = self.limits.cpu_time
        if cpu and (number == signal.SIGXCPU or (number == signal.SIGKILL and self.cpu_seen >= cpu - 1)):
            self._found("cpu_time", RLIMIT)
        elif self.limits.file_size and number == signal.SIGXFSZ:
            self._found("file_size", RLIMIT)
        return self.hit

    def after_step(self, traceback: str | None) -> LimitHit | None:
        """The limit a step hit: the counters, else (``traceback``: it failed) what an rlimit refused."""
        if self.check(force=True) is not None or not traceback:
            return self.hit
        held = {**self.held, "disk": TMPFS_SIZE if self.sandboxed and self.tmpfs_size() else OFF}
        found = from_error(traceback, held)
        if found is not None and getattr(self.limits, found):
            self._found(found, held[found])
        return self.hit

    # ------------------------------------------------------------ ending
    def kill(self) -> None:
        if self.group is not None:
            self.group.kill()

    def close(self) -> None:
        """After the kernel is killed: its cgroup is removed (a group still busy is left to the sweep)."""
        group, self.group = self.group, None
        if group is not None:
            group.kill()
            group.remove()

    # ------------------------------------------------------------ inside
    def _held(self, counted: bool) -> dict[str, str]:
        if self.remote:  # a gateway's kernel: what it sets on itself (remote_setup)
            held = {"processes": NOT_HELD, "memory": RLIMIT, "cpu_time": RLIMIT, "file_size": RLIMIT,
                    "open_files": RLIMIT, "disk": NOT_HELD}
            return {name: by if getattr(self.limits, name) else OFF for name, by in held.items()}
        group = self.group
        held = {
            "processes": group.kind if group is not None and group.holds("pids") else (
                RLIMIT if counted else NOT_HELD),
            "memory": group.kind if group is not None and group.holds("memory") else RLIMIT,
            "cpu_time": RLIMIT, "file_size": RLIMIT, "open_files": RLIMIT,
            "disk": f"{WORKSPACE_CHECK} and {TMPFS_SIZE}" if self.sandboxed and self.tmpfs_size() else WORKSPACE_CHECK,
        }
        return {name: by if getattr(self.limits, name) else OFF for name, by in held.items()}

    def _record(self) -> dict[str, Any]:
        return {name: {"max": getattr(self.limits, name), "by": by} for name, by in self.held.items()}

    def _found(self, limit: str, mechanism: str) -> None:
        with self._lock:
            if self.hit is None:
                self.hit = LimitHit(limit, getattr(self.limits, limit), mechanism)
                self.record["hit"] = {"limit": limit, "by": mechanism}

    def _sample_cpu(self) -> None:
        """The kernel's CPU time so far: a kernel killed by SIGKILL near its limit was killed by it (a
        sandbox's kernel is its namespace's init, which ignores SIGXCPU; the hard limit a second later kills)."""
        if not self.inner or not self.limits.cpu_time:
            return
        with contextlib.suppress(OSError, ValueError, IndexError):
            with open(f"/proc/{self.inner}/stat", "rb") as handle:
                stat = handle.read()
            fields = stat[stat.rindex(b")") + 2:].split()
            self.cpu_seen = (int(fields[11]) + int(fields[12])) / TICKS


class _DiskWatch:
    """What was added to ``folders`` since it was made, checked cheaply first (see the module's docstring).
    ``clock`` is a monotonic clock in seconds (a test's own, to say when the next walk may come)."""

    def __init__(self, limit: int, folders: list[str], clock: Callable[[], float] = time.monotonic):
        self.limit, self.folders, self.clock = limit, folders, clock
        self.since = time.time()
        self.base = self._used()
        self.next_walk = 0.0  # the clock's time from which a walk may come again (``force`` walks anyway)

    def over(self, force: bool = False) -> bool:
        grown = self._used() - self.base
        if grown <= self.limit or (not force and self.clock() < self.next_walk):
            return False
        started = self.clock()
        added = self._added()
        ended = self.clock()
        self.next_walk = ended + max(CHECK_EVERY, WALK_COST * (ended - started))
        if added > self.limit:
            return True
        self.base += grown - added  # what others wrote meanwhile: the next walk waits for more growth
        return False

    def _used(self) -> int:
        used, seen = 0, set()
        for folder in self.folders:
            with contextlib.suppress(OSError):
                device = os.stat(folder).st_dev
                if device not in seen:
                    seen.add(device)
                    info = os.statvfs(folder)
                    used += (info.f_blocks - info.f_bfree) * info.f_frsize
        return used

    def _added(self) -> int:
        """Bytes on disk of the files in ``folders`` changed since the sub-agent began (up to just past the limit)."""
        total, stack = 0, list(self.folders)
        while stack and total <= self.limit:
            with contextlib.suppress(OSError), os.scandir(stack.pop()) as entries:
                for entry in entries:
                    with contextlib.suppress(OSError):
                        if entry.is_dir(follow_symlinks=False):
                            stack.append(entry.path)
                        elif entry.is_file(follow_symlinks=False):
                            info = entry.stat(follow_symlinks=False)
                            if max(info.st_mtime, info.st_ctime) >= self.since - 1:
                                total += info.st_blocks * 512
        return total


_sizes: bool | None = None


def _bwrap_sizes() -> bool:
    """Whether this bubblewrap takes ``--size`` (0.5 and later)."""
    global _sizes
    if _sizes is None:
        from . import sandbox

        program = shutil.which(sandbox.BWRAP)
        try:
            done = subprocess.run([program or sandbox.BWRAP, "--help"], capture_output=True, timeout=10,
                                  stdin=subprocess.DEVNULL)
            _sizes = b"--size" in done.stdout + done.stderr
        except (OSError, subprocess.SubprocessError):
            _sizes = False
    return _sizes
