"""The keeper: a small process outside every kernel that kills them all when their host dies.

Each kernel watches its host from inside (a thread reading the lifeline, `kernel_side`), but a
stopped process runs nothing: a kernel that the agent's code stopped with SIGSTOP (itself, its
process group, a helper doing it the moment the clean-up starts), or that the host had stopped as
the first step of killing it when the host was killed, would live on in state ``T`` for ever.
jupyter_client starts each kernel in a session of its own, so the operating system never continues
it either. So each host process also starts one keeper (lazily, with its first kernel):

- the keeper reads, on its stdin, a pipe whose write end only the host holds: ``+pid pgid start``
  when a kernel starts, ``-pid`` when it is closed (heeded only once that process is gone, so code
  that writes to the pipe through ``/proc`` cannot unregister a live kernel); EOF or a new parent
  (checked after every read, so a flooded pipe does not hide it) means the host is gone;
- then it kills each kernel still registered, if it is the same process (its start time in
  ``/proc`` matches: a reused pid is left alone), with every process below it (`processes.kill_tree`:
  SIGKILL ends a stopped process; nothing waits for the stopped one to act) and its process group,
  and removes its private directory (which the kernel's own watcher, killed first, may not have);
- it runs in a process group of its own in the host's session: if the agent's code stops it too,
  the host's death orphans its group and the operating system sends it SIGHUP and SIGCONT (what
  POSIX does for a stopped, newly orphaned process group); it then does its work;
- it ignores SIGTERM, SIGINT and SIGHUP; if it is killed while kernels are registered, the host
  starts another at once (a thread waits on it) and tells it every kernel;
- the host's cgroup folders (``c<folder>``: `cgroups` makes one per controller, each kernel's group in
  it) are removed last, once the killed kernels have left them.

Standard library only; run as a script (``python -I keeper.py HOST_PID``), it loads `processes` from
its file and imports nothing of this package, so it starts in milliseconds.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

_lock = threading.Lock()
_keeper: "subprocess.Popen[bytes] | None" = None
_owner: int | None = None  # the pid of the process that started _keeper (a forked child starts its own)
_watched: dict[int, tuple[int, int, str]] = {}  # kernel pid -> (pgid, start time, private directory)
_cgroups: list[str] = []  # the host's cgroup folders (cgroups.py), removed when it dies
CGROUPS_PREFIX = "deepagent-"  # cgroups.HOST_PREFIX: the keeper removes only those
CGROUPS_WAIT = 3.0  # seconds the keeper waits for killed kernels to leave their groups
KERNEL_DIRS_PREFIX = "deepagent-kernels-"  # lifecycle.HOST_DIR_PREFIX: the keeper removes only those


def _forget_all_in_child() -> None:
    """A forked child has no kernels of its own yet and must not write to its parent's keeper."""
    global _keeper, _owner, _lock
    _lock = threading.Lock()
    _keeper, _owner = None, None
    _watched.clear()
    _cgroups.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_all_in_child)


def start_time(pid: int) -> int | None:
    """The process's start time (clock ticks after boot, /proc/PID/stat field 22), or None if gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
        return int(stat[stat.rindex(b")") + 2:].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def watch(pid: int | None, pgid: int | None, folder: str = "") -> None:
    """Tell the keeper about a started kernel and its private directory (no-op without /proc)."""
    started = start_time(pid) if pid else None
    if started is None or "\n" in folder:
        return
    with _lock:
        _watched[pid] = (pgid or 0, started, folder)
        _send(_registration(pid, *_watched[pid]))


def _registration(pid: int, pgid: int, started: int, folder: str) -> str:
    return f"+{pid} {pgid} {started} {folder}".rstrip() + "\n"


def watch_cgroups(folders: list[str]) -> None:
    """Tell the keeper the host's cgroup folders: removed (once empty) when the host dies."""
    with _lock:
        for folder in folders:
            if folder not in _cgroups and "\n" not in folder:
                _cgroups.append(folder)
                _send(f"c{folder}\n")


def forget(pid: int | None) -> None:
    """The kernel was closed: the keeper no longer kills it."""
    with _lock:
        if _watched.pop(pid, None) is not None:
            _send(f"-{pid}\n")


def keeper_pid() -> int | None:
    """This process's keeper, if it has one running."""
    with _lock:
        alive = _keeper is not None and _owner == os.getpid() and _keeper.poll() is None
        return _keeper.pid if alive else None


def _send(line: str) -> None:
    """Write to the keeper (under _lock), starting one, and telling it every kernel, if it is gone."""
    global _keeper, _owner
    for _ in range(2):
        if _keeper is None or _owner != os.getpid() or _keeper.poll() is not None:
            if _owner == os.getpid() and _keeper is not None:
                _keeper.stdin.close()
            _keeper, _owner = _start(), os.getpid()
            line = "".join(_registration(pid, *entry) for pid, entry in _watched.items())
            line += "".join(f"c{folder}\n" for folder in _cgroups)
        try:
            _keeper.stdin.write(line.encode())
            _keeper.stdin.flush()
            return
        except (BrokenPipeError, OSError, ValueError):
            _keeper.poll()


def _start() -> "subprocess.Popen[bytes]":
    process = subprocess.Popen(
        [sys.executable, "-I", os.path.abspath(__file__), str(os.getpid())],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        process_group=0, close_fds=True, cwd="/",
    )
    threading.Thread(target=_respawn, args=(process,), name="deepagent-keeper-respawn", daemon=True).start()
    return process


def _respawn(process: "subprocess.Popen[bytes]") -> None:
    """When the keeper dies while kernels are registered (the agent's code killed it), start another
    at once and tell it every kernel; one that keeps dying is restarted less and less often."""
    started = time.monotonic()
    process.wait()
    lived = time.monotonic() - started
    global _delay
    _delay = RESPAWN_FIRST if lived > RESPAWN_RESET else min(_delay * 2, RESPAWN_MOST)
    time.sleep(_delay)
    with _lock:
        if _keeper is process and _owner == os.getpid() and _watched:
            _send("")


RESPAWN_FIRST, RESPAWN_MOST, RESPAWN_RESET = 0.01, 5.0, 10.0
_delay = RESPAWN_FIRST


# ------------------------------------------------------------------ the keeper process itself
def serve(host_pid: int, processes, fd: int = 0, interval: float = 0.5) -> None:
    """Read registrations until the host is gone, then kill every kernel still registered."""
    import select

    for name in ("SIGHUP", "SIGINT", "SIGTERM", "SIGTSTP", "SIGTTIN", "SIGTTOU", "SIGPIPE"):
        signal.signal(getattr(signal, name), signal.SIG_IGN)
    kernels: dict[int, tuple[int, int, str]] = {}
    cgroups: set[str] = set()
    pending = b""
    while True:
        try:
            readable, _, _ = select.select([fd], [], [], interval)
        except InterruptedError:
            continue
        if readable:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            *lines, pending = (pending + chunk).split(b"\n")
            pending = pending[-4096:]
            for line in lines:
                _apply(kernels, cgroups, line.decode(errors="replace"))
        if os.getppid() != host_pid:  # another process holding or flooding the pipe does not hide it
            break
    for pid, (pgid, started, folder) in kernels.items():
        if start_time(pid) == started:
            _remove(folder)  # first, as the kernel's own watcher does: once it is gone, so is its folder
            processes.kill_tree(pid)
            try:
                if pgid and pgid != os.getpgid(0):
                    os.killpg(pgid, signal.SIGKILL)
            except OSError:
                pass
            _remove(folder)  # and again, for what was written there while it died
    _remove_cgroups(cgroups)


def _remove_cgroups(folders: set[str], wait: float = CGROUPS_WAIT) -> None:
    """Each host cgroup folder with the kernels' groups in it, once the killed kernels have left them."""
    folders = {folder for folder in folders if os.path.basename(folder).startswith(CGROUPS_PREFIX)}
    deadline = time.monotonic() + wait
    while folders:
        for folder in list(folders):
            try:
                for name in os.listdir(folder):
                    if os.path.isdir(os.path.join(folder, name)):
                        os.rmdir(os.path.join(folder, name))
                os.rmdir(folder)
            except FileNotFoundError:
                pass
            except OSError:
                continue
            folders.discard(folder)
        if not folders or time.monotonic() >= deadline:
            return
        time.sleep(0.05)


def _remove(folder: str) -> None:
    """The kernel's private directory (connection file, sockets), as its own watch thread would have;
    only a kernel directory in a host's kernel folder, whatever was written to the pipe."""
    import shutil

    if folder and os.path.basename(os.path.dirname(os.path.realpath(folder))).startswith(KERNEL_DIRS_PREFIX):
        shutil.rmtree(folder, ignore_errors=True)


def _apply(kernels: dict[int, tuple[int, int, str]], cgroups: set[str], line: str) -> None:
    if line.startswith("c/"):
        cgroups.add(line[1:])
        return
    words = line.split(" ", 3)
    try:
        if len(words) >= 3 and words[0].startswith("+"):
            kernels[int(words[0][1:])] = (int(words[1]), int(words[2]), words[3] if len(words) == 4 else "")
        elif len(words) == 1 and words[0].startswith("-"):
            pid = int(words[0][1:])
            if pid in kernels and start_time(pid) != kernels[pid][1]:  # the host sends it once it is dead
                del kernels[pid]
    except ValueError:
        pass


def _load_processes():
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "processes.py")
    spec = importlib.util.spec_from_file_location("_deepagent_processes", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


if __name__ == "__main__":
    serve(int(sys.argv[1]), _load_processes())
