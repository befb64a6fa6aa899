"""Ending a kernel and every process it started, even those that left its process group.

Killing a kernel's process group misses what the agent's code started with ``setsid``
or ``start_new_session=True``, and a double fork orphans its grandchild to init. So
each kernel makes itself a child subreaper (`become_subreaper`: orphans below it are
re-parented to it, not to init) and a kernel is ended with `kill_tree`: every
descendant, found by walking ``/proc``, is stopped with SIGSTOP until no new one
appears (a stopped process cannot fork away), then all are killed with SIGKILL.

The walk reads only the tree's own ``/proc/<pid>/task/<tid>/children`` files where the kernel
has them (most Linux kernels), not every process's ``stat``: a kill must be quick even while a
host tool spins in Python, when each file read waits a GIL switch interval (5 ms) to resume.

Standard library only: the kernel side runs this file too, from its host-watch thread
when the host dies.
"""

import os
import signal

PR_SET_CHILD_SUBREAPER = 36
MAX_ROUNDS = 50


def become_subreaper():
    """Make this process a child subreaper (Linux); True if it is one."""
    if not os.path.isdir("/proc"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _parents():
    """{pid: parent pid} of every process visible in /proc."""
    parents = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return parents
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        try:  # "pid (comm) state ppid ...": comm may contain spaces and parentheses
            parents[int(name)] = int(stat[stat.rindex(b")") + 2:].split()[1])
        except (ValueError, IndexError):
            continue
    return parents


def _has_children_files():
    """Whether this kernel lists a thread's children in ``/proc/<pid>/task/<tid>/children``."""
    return os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children")


CHILDREN_FILES = _has_children_files()


def _read(path):
    """A small /proc file's bytes (b"" if it is gone): three system calls, so few GIL hand-offs."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return b""
    try:
        return os.read(fd, 65536)
    except OSError:
        return b""
    finally:
        os.close(fd)


def _children_of(pid):
    """``pid``'s children, from the children file of each of its threads."""
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    children = []
    for thread in threads:
        children.extend(int(child) for child in _read(f"/proc/{pid}/task/{thread}/children").split())
    return children


def _children_map():
    """{parent pid: [child pids]} of every process visible in /proc."""
    children = {}
    for child, parent in _parents().items():
        children.setdefault(parent, []).append(child)
    return children


def descendants(pid):
    """Every process below ``pid`` (children, their children, ...), by walking /proc."""
    if CHILDREN_FILES:
        children_of = _children_of
    else:
        children_of = _children_map().get
    found, todo = [], list(children_of(pid) or ())
    while todo:
        child = todo.pop()
        if child in found or child == pid:
            continue
        found.append(child)
        todo.extend(children_of(child) or ())
    return found


def _signal(pid, signum):
    try:
        os.kill(pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def kill_tree(pid, include_root=True):
    """SIGKILL ``pid``'s descendants (and ``pid`` itself with ``include_root``), leaving none to fork away.

    The root is stopped first, then each round stops the descendants found so far, until a
    round finds no new one; then all are killed. Returns the pids signalled."""
    if pid is None or pid <= 0 or pid == os.getpid() and include_root:
        return []
    stopped = []
    if include_root:
        _signal(pid, signal.SIGSTOP)
        stopped.append(pid)
    for _ in range(MAX_ROUNDS):
        new = [child for child in descendants(pid) if child not in stopped and child != os.getpid()]
        if not new:
            break
        for child in new:
            _signal(child, signal.SIGSTOP)
        stopped.extend(new)
    for target in stopped:
        _signal(target, signal.SIGKILL)
    return stopped
