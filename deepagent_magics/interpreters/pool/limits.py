"""What one sub-agent's kernel may consume, what holds each limit, and the one line that says which was hit.

Six limits (`ResourceLimits`), each a setting (``settings.py``: ``--subagent-processes`` and the others;
0 switches one off), each held by what this machine provides (docs/safety.md#limits):

- **processes** (tasks: processes and threads at once) and **memory** (the kernel and everything it
  started, together): by the kernel's cgroup (`cgroups`: v2, v2 through systemd, or v1) where this host
  can make one. Otherwise memory is an rlimit per process (``RLIMIT_DATA``), and processes an rlimit
  (``RLIMIT_NPROC``) only in the sandbox's user namespace of a user other than root (`counts_processes`):
  there the kernel counts them per namespace; outside one it counts all of the user's processes, and for
  root never (even in a user namespace), so it is not held.
- **CPU time** (per process, ``RLIMIT_CPU``), **largest file** (``RLIMIT_FSIZE``) and **open files**
  (``RLIMIT_NOFILE``): rlimits, which hold for root too. Core dumps are off (``RLIMIT_CORE`` 0): a killed
  process would write one into the workspace.
- **disk**: what the sub-agent adds to its workspace and private folder, checked while its code runs
  (`kernel_limits`), and the size of each in-memory folder of its sandbox (``/tmp``: bwrap's ``--size``).

The rlimits are set inside the sandbox, by ``prlimit`` (util-linux; a few lines of Python where it is
missing) between bubblewrap and the kernel: a user namespace's process count starts there. A limit that is
hit ends the sub-agent: its parent reads one line, `LimitHit.line`, which names the limit, its setting and
what held it, and the sub-agent's record says the same (``config.limits``).
"""

from __future__ import annotations

import errno
import json
import os
import re
import resource
import shutil
import stat
import sys
from dataclasses import dataclass, fields
from typing import Any, Mapping

from ...errors import DeepAgentError
from ...settings import SETTINGS

MiB = 1 << 20
RLIMIT, WORKSPACE_CHECK, TMPFS_SIZE, OFF = "rlimit", "workspace check", "the size of the sandbox's /tmp", "off"
NOT_HELD = "not held"


@dataclass(frozen=True)
class Limit:
    """One limit: its setting and how the line that says it was hit reads (``{}``: the value)."""

    setting: str
    reason: str
    unit: str = ""

    @property
    def flag(self) -> str:
        return SETTINGS[self.setting].flag


LIMITS = {
    "processes": Limit("subagent_processes", "it tried to run more than {} processes and threads at once"),
    "memory": Limit("subagent_memory", "it used more than {} MiB of memory", "MiB"),
    "cpu_time": Limit("subagent_cpu_time", "a process of it used more than {} s of CPU time", "s"),
    "file_size": Limit("subagent_file_size", "it tried to write a file larger than {} MiB", "MiB"),
    "disk": Limit("subagent_disk", "it wrote more than {} MiB to the workspace or its /tmp", "MiB"),
    "open_files": Limit("subagent_open_files", "it tried to have more than {} files open at once"),
}


def _default(name: str) -> int:
    return SETTINGS[LIMITS[name].setting].default


@dataclass(frozen=True)
class ResourceLimits:
    """What one sub-agent's kernel may consume (0: not limited). Memory, file size and disk in MiB."""

    processes: int = _default("processes")
    memory: int = _default("memory")
    cpu_time: int = _default("cpu_time")
    file_size: int = _default("file_size")
    disk: int = _default("disk")
    open_files: int = _default("open_files")

    @classmethod
    def from_settings(cls, values: Mapping[str, Any]) -> "ResourceLimits":
        """From a door's settings by name (``subagent_memory``...); those not given keep their defaults."""
        return cls(**{name: int(values[limit.setting]) for name, limit in LIMITS.items()
                      if values.get(limit.setting) is not None})

    @classmethod
    def none(cls) -> "ResourceLimits":
        return cls(**{item.name: 0 for item in fields(cls)})


@dataclass(frozen=True)
class LimitHit:
    """A limit that was hit: which, its value, and what held it (``cgroup v1``, ``rlimit``...)."""

    limit: str
    value: int
    mechanism: str

    @property
    def line(self) -> str:
        limit = LIMITS[self.limit]
        return f"{limit.reason.format(self.value)} (limit {limit.flag}, held by {self.mechanism})"


# ---------------------------------------------------------------- rlimits
def rlimits(limits: ResourceLimits, *, processes: bool, memory: bool,
            ceiling: bool = True) -> list[tuple[str, int, int]]:
    """(resource, soft, hard) for the rlimits that hold ``limits`` (``processes``, ``memory``: by rlimit,
    where no cgroup does), never above this process's own hard limits (``ceiling``: another machine's
    kernel clamps them itself)."""
    wanted = [("CORE", 0, 0)]
    if limits.cpu_time:  # the soft limit sends SIGXCPU (a process may catch it), a second later SIGKILL
        wanted.append(("CPU", limits.cpu_time, limits.cpu_time + 1))
    if limits.file_size:
        wanted.append(("FSIZE", limits.file_size * MiB, limits.file_size * MiB))
    if limits.open_files:
        wanted.append(("NOFILE", limits.open_files, limits.open_files))
    if memory and limits.memory:
        wanted.append(("DATA", limits.memory * MiB, limits.memory * MiB))
    if processes and limits.processes:
        wanted.append(("NPROC", limits.processes, limits.processes))
    if not ceiling:
        return wanted
    clamped = []
    for name, soft, hard in wanted:
        ceiling = resource.getrlimit(getattr(resource, f"RLIMIT_{name}"))[1]
        if ceiling != resource.RLIM_INFINITY:
            soft, hard = min(soft, ceiling), min(hard, ceiling)
        clamped.append((name, soft, hard))
    return clamped


# Where prlimit is missing: set the limits and become the command (standard library only).
SET_LIMITS = ("import json, os, resource, sys\n"
              "for name, soft, hard in json.loads(sys.argv[1]):\n"
              "    resource.setrlimit(getattr(resource, 'RLIMIT_' + name), (soft, hard))\n"
              "os.execvp(sys.argv[2], sys.argv[2:])\n")
PRLIMIT = "prlimit"  # the program; tests point it elsewhere to play a machine without it


def rlimit_command(pairs: list[tuple[str, int, int]]) -> list[str]:
    """The command that sets ``pairs`` and then runs the arguments after it."""
    program = shutil.which(PRLIMIT)
    if program:
        return [program, *(f"--{name.lower()}={soft}:{hard}" for name, soft, hard in pairs), "--"]
    return [sys.executable, "-I", "-S", "-c", SET_LIMITS, json.dumps(pairs)]


def counts_processes(sandbox: list[str]) -> bool:
    """Whether ``RLIMIT_NPROC`` holds the processes of the kernel bubblewrap starts with the arguments
    ``sandbox``: only in a user namespace of its own (there the kernel counts per namespace; outside one,
    every process of the user), and only for a user other than root (for uid 0 the kernel never enforces
    it, in a user namespace or not: root's sandbox maps to uid 0)."""
    if not sandbox or os.geteuid() == 0:
        return False
    if "--unshare-user" in sandbox or "--userns" in sandbox:
        return True
    try:
        setuid = bool(os.stat(sandbox[0]).st_mode & stat.S_ISUID)
    except OSError:
        return False
    return not setuid  # an unprivileged bwrap that is not setuid makes a user namespace


# ---------------------------------------------------------------- how a step ended
_ERRNO = re.compile(r"^[A-Za-z_][\w.]*: \[Errno (\d+)\]")


def from_error(traceback: str, held: Mapping[str, str]) -> str | None:
    """The limit an rlimit (or a full /tmp of the sandbox) refused, judged from a step's traceback (its last
    line), or None. Only for limits an rlimit holds: a cgroup's own counters say when it refused something."""
    lines = [line for line in (traceback or "").strip().splitlines() if line.strip()]
    if not lines:
        return None
    last = lines[-1].strip()
    match = _ERRNO.match(last)
    number = int(match.group(1)) if match else None
    if number == errno.EFBIG:
        found = "file_size"
    elif number == errno.EMFILE:
        found = "open_files"
    elif number == errno.ENOSPC:
        found = "disk"
    elif last == "MemoryError" or last.startswith("MemoryError:"):
        found = "memory"
    elif last.startswith("RuntimeError: can't start new thread") or (
            number == errno.EAGAIN and re.search(r"\bfork\b|_execute_child|_fork_exec|spawn", traceback)):
        found = "processes"
    else:
        return None
    return found if held.get(found) == (TMPFS_SIZE if found == "disk" else RLIMIT) else None
