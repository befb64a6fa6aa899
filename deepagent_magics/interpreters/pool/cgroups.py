"""The control group that holds a sub-agent's kernel, where this machine lets this process make one.

A cgroup holds a whole process tree (whatever the kernel's code starts, however it detaches) to one
number of processes and one amount of memory, and its counters say afterwards which limit refused
something. `mechanism` finds, once per process, the first of these that works here; each is tried for
real (a probe group is made and a process joins it):

1. **cgroup v2**: this process's own cgroup delegates ``memory`` and ``pids`` to its children (a delegated
   or writable cgroup: a systemd service with ``Delegate=yes``, the root cgroup as root).
2. **cgroup v2 through systemd** (``systemd-run --scope``; ``--user`` when not root) where systemd runs:
   systemd makes a scope per kernel with its ``TasksMax`` and ``MemoryMax``, and removes it when its last
   process ends.
3. **cgroup v1**: writable ``pids`` and ``memory`` hierarchies (root on a machine or in a container that
   mounts cgroup v1); either one alone holds what it can.

Where none works, `mechanism` is None and `limits` holds what it can with rlimits.

One host's groups live in ``<its own cgroup>/deepagent-<pid>-<tag>/``, one per kernel, named after the
kernel's private folder. A kernel is born inside its group: its command starts with a shell that writes
its own pid into each group's ``cgroup.procs`` and then ``exec``s the rest (bubblewrap). The ``cpu``
controller, where there is one, is joined too: not a limit, but the kernel's whole tree then shares one
process's worth of the CPU with the user's own processes. A group is removed when its kernel is closed
(`KernelGroup.remove`; one still busy then, when this host next makes or removes one: `retry_removals`), by
the keeper when the host dies (`keeper.watch_cgroups`), and otherwise by the next host that makes one (`_sweep`).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field

from . import keeper

V1, V2, SYSTEMD = "cgroup v1", "cgroup v2", "cgroup v2 (systemd-run)"
LIMITING = ("pids", "memory")  # the controllers that hold a limit; "cpu" only shares the CPU fairly
HOST_PREFIX = "deepagent-"
# Joins each group given before "--", makes the tree the first the OOM killer picks, then becomes the command.
JOIN = ('echo 500 2>/dev/null >/proc/self/oom_score_adj; '
        'while [ "$1" != -- ]; do echo $$ >"$1" || exit 125; shift; done; shift; exec "$@"')
PROBE_TIMEOUT = 10.0
KILL_WAIT = 5.0  # seconds a killed group's processes are waited for to exit
REMOVE_FOR = 2.0  # seconds a closed kernel's group is waited for to empty before it is left to the sweep

_lock = threading.Lock()
_probed: dict[int, "Mechanism | None"] = {}  # per process (a fork probes again)
_unremoved: set[str] = set()  # folders of closed kernels' groups still busy when their kernel closed
_unremoved_lock = threading.Lock()


@dataclass(frozen=True)
class Mechanism:
    """How this process makes its kernels' groups: ``kind`` (`V1`, `V2`, `SYSTEMD`) and, but for systemd,
    the host folder of each controller it has (``{"pids": ".../deepagent-123-ab12", ...}``)."""

    kind: str
    folders: dict[str, str] = field(default_factory=dict)
    controllers: frozenset[str] = frozenset()

    def group(self, name: str, processes: int, memory: int) -> "KernelGroup":
        """A new group ``name`` holding ``processes`` tasks and ``memory`` bytes (0: not limited)."""
        if self.kind == SYSTEMD:
            return KernelGroup(self, {}, _systemd_prefix(name, processes, memory))
        retry_removals()
        made: dict[str, str] = {}
        try:
            for controller, parent in self.folders.items():
                path = made[controller] = os.path.join(parent, name)
                os.mkdir(path)
            group = KernelGroup(self, made, [])
            group.set_limits(processes, memory)
            return group
        except OSError:
            KernelGroup(self, made, []).remove(wait=0)
            raise


@dataclass
class KernelGroup:
    """One kernel's group: how its command joins it, its counters, and how it is ended and removed."""

    mechanism: Mechanism
    folders: dict[str, str]  # controller -> this group's folder (systemd: found once the kernel runs)
    prefix: list[str]  # systemd-run's command, or nothing (the shell of `command` joins the folders)

    @property
    def kind(self) -> str:
        return self.mechanism.kind

    def holds(self, controller: str) -> bool:
        return controller in self.mechanism.controllers

    def command(self, argv: list[str]) -> list[str]:
        """``argv`` started inside this group."""
        return [*self.prefix, *joined(argv, [os.path.join(folder, "cgroup.procs") for folder in self.folders.values()])]

    def set_limits(self, processes: int, memory: int) -> None:
        pids, mem = self.folders.get("pids"), self.folders.get("memory")
        if pids and processes:
            _write(pids, "pids.max", processes)
        if mem and memory:
            if self.kind == V1:
                _write(mem, "memory.limit_in_bytes", memory)
                _write(mem, "memory.memsw.limit_in_bytes", memory, missing_ok=True)  # no swapping past it
            else:
                _write(mem, "memory.max", memory)
                _write(mem, "memory.swap.max", 0, missing_ok=True)
                _write(mem, "memory.oom.group", 1, missing_ok=True)  # an OOM kill ends the whole kernel

    def found(self, pid: int | None) -> None:
        """The kernel runs as ``pid``: where systemd put it (its scope's folder), for the counters."""
        if self.kind != SYSTEMD or self.folders or not pid:
            return
        with contextlib.suppress(OSError, ValueError):
            with open(f"/proc/{pid}/cgroup", encoding="utf-8") as handle:
                path = next(line[3:].strip() for line in handle if line.startswith("0::"))
            folder = _v2_mount() + path
            self.folders = {controller: folder for controller in ("pids", "memory", "cpu")}

    def hit(self) -> str | None:
        """``memory`` when the OOM killer killed a process of the group, ``processes`` when a fork or thread
        was refused at the group's limit, else None."""
        memory, pids = self.folders.get("memory"), self.folders.get("pids")
        if memory and _count(memory, "memory.oom_control" if self.kind == V1 else "memory.events", "oom_kill"):
            return "memory"
        if pids and _count(pids, "pids.events", "max"):
            return "processes"
        return None

    def kill(self, wait: float = KILL_WAIT) -> None:
        """SIGKILL every process in the group (v2: ``cgroup.kill``, one write for the whole tree), and wait
        until none is left: a killed process is listed until it has exited (freeing much memory takes a
        moment), so once this returns nothing of the kernel runs."""
        deadline = time.monotonic() + wait
        for folder in self.folders.values():
            killer = os.path.join(folder, "cgroup.kill")
            if self.kind != V1 and os.path.exists(killer):
                with contextlib.suppress(OSError):
                    _write(folder, "cgroup.kill", 1)
            while (pids := _pids(folder)) and time.monotonic() < deadline:
                for pid in pids:  # a process forking meanwhile is killed in the next round
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)
                time.sleep(0.01)

    def remove(self, wait: float = REMOVE_FOR) -> bool:
        """Remove the group once its processes are gone (killed ones take a moment); False if it is still there."""
        if self.kind == SYSTEMD:
            return True  # systemd removes the scope (--collect) when its last process ends
        retry_removals()
        deadline = time.monotonic() + wait
        left = dict(self.folders)
        while left:
            for controller, folder in list(left.items()):
                if _rmdir(folder):
                    del left[controller]
            if not left or time.monotonic() >= deadline:
                break
            time.sleep(0.02)
        with _unremoved_lock:
            _unremoved.update(left.values())  # tried again by the next group made or removed
        return not left


def retry_removals() -> None:
    """Remove the groups of closed kernels that were still busy when their kernel closed, if empty now."""
    with _unremoved_lock:
        busy = list(_unremoved)
    for folder in busy:
        if _rmdir(folder):
            with _unremoved_lock:
                _unremoved.discard(folder)


def _rmdir(folder: str) -> bool:
    """Whether ``folder`` is gone now (removed, or already gone); False while a process or group is in it."""
    try:
        os.rmdir(folder)
    except FileNotFoundError:
        pass
    except OSError:
        return False
    return True


def joined(argv: list[str], procs: list[str] = ()) -> list[str]:
    """``argv`` run by the joining shell: in the groups of ``procs`` (their ``cgroup.procs``; none: no group),
    first in line for the OOM killer."""
    return [shutil.which("sh") or "/bin/sh", "-c", JOIN, "deepagent-join", *procs, "--", *argv]


def mechanism() -> Mechanism | None:
    """The first way to make kernel groups that works in this process (probed once), else None."""
    with _lock:
        pid = os.getpid()
        if pid not in _probed:
            _probed.clear()
            _probed[pid] = _find()
        return _probed[pid]


def forget() -> None:
    """Probe again next time (tests that play another machine)."""
    with _lock:
        _probed.clear()


def _find() -> Mechanism | None:
    if not os.path.isfile("/proc/self/cgroup"):
        return None
    v1, v2 = _mounts()
    own = _own_paths()
    candidates = []
    if v2 and "" in own:
        candidates.append(lambda: _v2_direct(v2 + own[""].rstrip("/")))
        if _systemd_runs():
            candidates.append(_systemd)
    candidates.append(lambda: _v1(v1, own))
    for candidate in candidates:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            found = candidate()
            if found is not None and _works(found):
                keeper.watch_cgroups(list(found.folders.values()))
                return found
            if found is not None:
                _drop(found)
    return None


def _v2_direct(own: str) -> Mechanism | None:
    available = set(_read(own, "cgroup.controllers").split())
    if not set(LIMITING) <= available:
        return None
    enabled = set(_read(own, "cgroup.subtree_control").split())
    wanted = [name for name in ("pids", "memory", "cpu") if name in available]
    for name in wanted:
        if name not in enabled:
            try:  # refused (EBUSY) in a cgroup that holds processes itself, but the root
                _write(own, "cgroup.subtree_control", f"+{name}")
            except OSError:
                if name in LIMITING:
                    return None
                wanted.remove(name)
    folder = _host_folder(own)
    _write(folder, "cgroup.subtree_control", " ".join(f"+{name}" for name in wanted))
    return Mechanism(V2, {name: folder for name in wanted}, frozenset(wanted))


def _systemd() -> Mechanism | None:
    return Mechanism(SYSTEMD, {}, frozenset(LIMITING))


def _v1(mounts: dict[str, str], own: dict[str, str]) -> Mechanism | None:
    folders = {}
    for name in ("pids", "memory", "cpu"):
        if name in mounts and name in own and os.access(mounts[name] + own[name], os.W_OK):
            with contextlib.suppress(OSError):
                folders[name] = _host_folder(mounts[name] + own[name].rstrip("/"))
    if not set(folders) & set(LIMITING):
        _drop(Mechanism(V1, folders))
        return None
    return Mechanism(V1, folders, frozenset(folders))


def _works(found: Mechanism) -> bool:
    """A probe group, a process that joins it and exits: what every kernel will do."""
    group = found.group(f"probe-{secrets.token_hex(4)}", processes=64, memory=256 << 20)
    try:
        done = subprocess.run(group.command([shutil.which("true") or "/bin/true"]), capture_output=True,
                              timeout=PROBE_TIMEOUT, stdin=subprocess.DEVNULL)
        return done.returncode == 0
    finally:
        group.remove(wait=1.0)


def _drop(found: Mechanism) -> None:
    for folder in found.folders.values():
        with contextlib.suppress(OSError):
            os.rmdir(folder)


def _host_folder(own: str) -> str:
    """This process's folder for its kernels' groups, under ``own``; leftovers of gone hosts swept first."""
    _sweep(own)
    folder = os.path.join(own, f"{HOST_PREFIX}{os.getpid()}-{secrets.token_hex(3)}")
    os.mkdir(folder)
    return folder


def _sweep(own: str) -> None:
    """Remove the empty groups left by hosts that are gone (never a process: another pid namespace's
    host may look gone from here)."""
    with contextlib.suppress(OSError):
        for name in os.listdir(own):
            if not name.startswith(HOST_PREFIX) or _alive(name[len(HOST_PREFIX):].split("-")[0]):
                continue
            folder = os.path.join(own, name)
            for child in os.listdir(folder):
                if os.path.isdir(os.path.join(folder, child)):
                    with contextlib.suppress(OSError):
                        os.rmdir(os.path.join(folder, child))
            with contextlib.suppress(OSError):
                os.rmdir(folder)


def _alive(pid: str) -> bool:
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (ValueError, PermissionError):
        return True
    return True


def _systemd_runs() -> bool:
    return os.path.isdir("/run/systemd/system") and shutil.which("systemd-run") is not None


def _systemd_prefix(name: str, processes: int, memory: int) -> list[str]:
    properties = [*(["-p", f"TasksMax={processes}"] if processes else []),
                  *(["-p", f"MemoryMax={memory}", "-p", "MemorySwapMax=0"] if memory else [])]
    return [shutil.which("systemd-run") or "systemd-run", *([] if os.geteuid() == 0 else ["--user"]), "--scope",
            "--quiet", "--collect", f"--unit={HOST_PREFIX}{os.getpid()}-{name}", *properties, "--"]


def _mounts() -> tuple[dict[str, str], str | None]:
    """The cgroup v1 mount of each controller we use, and the cgroup v2 mount (mount root `/` only)."""
    v1: dict[str, str] = {}
    v2 = None
    with contextlib.suppress(OSError):
        with open("/proc/self/mountinfo", encoding="utf-8") as handle:
            for line in handle:
                left, _, right = line.partition(" - ")
                fields, more = left.split(), right.split()
                if len(fields) < 5 or len(more) < 3 or fields[3] != "/":
                    continue
                point = fields[4].replace("\\040", " ")
                if more[0] == "cgroup2" and v2 is None:
                    v2 = point
                elif more[0] == "cgroup":
                    for option in more[2].split(","):
                        if option in ("pids", "memory", "cpu"):
                            v1.setdefault(option, point)
    return v1, v2


def _v2_mount() -> str:
    return _mounts()[1] or "/sys/fs/cgroup"


def _own_paths() -> dict[str, str]:
    """This process's cgroup in each v1 hierarchy we use (by controller), and in v2 (key "")."""
    paths: dict[str, str] = {}
    with open("/proc/self/cgroup", encoding="utf-8") as handle:
        for line in handle:
            number, controllers, path = (line.rstrip("\n").split(":", 2) + ["", ""])[:3]
            if number == "0" and not controllers:
                paths[""] = path
            for name in controllers.split(","):
                if name in ("pids", "memory", "cpu"):
                    paths[name] = path
    return paths


def _read(folder: str, name: str) -> str:
    with open(os.path.join(folder, name), encoding="ascii") as handle:
        return handle.read()


def _write(folder: str, name: str, value: object, missing_ok: bool = False) -> None:
    try:
        with open(os.path.join(folder, name), "w", encoding="ascii") as handle:
            handle.write(str(value))
    except FileNotFoundError:
        if not missing_ok:
            raise


def _count(folder: str, name: str, key: str) -> int:
    """The number after ``key`` in a ``key value`` counters file (0 when it cannot be read)."""
    with contextlib.suppress(OSError, ValueError):
        for line in _read(folder, name).splitlines():
            words = line.split()
            if len(words) == 2 and words[0] == key:
                return int(words[1])
    return 0


def _pids(folder: str) -> list[int]:
    with contextlib.suppress(OSError, ValueError):
        return [int(word) for word in _read(folder, "cgroup.procs").split()]
    return []
