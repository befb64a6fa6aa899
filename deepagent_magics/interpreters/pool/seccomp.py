"""The seccomp filter a sandboxed kernel runs under: the system calls a Python kernel never needs, refused.

The sandbox drops every capability, so most of these fail already; the filter is what still holds when
a capability is regained by a kernel bug, or where a call needs none: a new user or mount namespace
(``unshare``, ``clone`` with namespace flags), ``ptrace`` of a process of the same user, the keyring,
``bpf``, ``io_uring`` (whose operations bypass a filter), ``userfaultfd`` and the like. Each is
refused with ``EPERM`` (``clone3``, whose flags a filter cannot read, with ``ENOSYS``: the C library
then falls back to ``clone``, which is checked). Only the machine's own architecture is let through:
a system call of another ABI (x32, or 32-bit ``int 0x80`` on x86-64) kills the process, so a
foreign calling convention cannot reach a call by another number.

The program is compiled by the system's libseccomp through ``pyseccomp`` (a ctypes binding, pure
Python), once per process, and handed to ``bwrap --seccomp FD``, which loads it after its own set-up,
just before it starts the kernel, with ``PR_SET_NO_NEW_PRIVS`` set. Where libseccomp is missing,
`program` says why and the sandbox runs without the filter (the record and the run line say so).
"""

from __future__ import annotations

import errno
import functools
import os
import platform
import tempfile

# Refused outright: namespaces and mounts, other processes' memory, the keyring, the kernel's own
# machinery (modules, kexec, swap, reboot, BPF, perf), file handles that bypass paths, io_uring.
DENIED = (
    "mount", "umount2", "pivot_root", "chroot", "fsopen", "fsconfig", "fsmount", "fspick", "move_mount",
    "open_tree", "mount_setattr", "unshare", "setns",
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp",
    "keyctl", "add_key", "request_key",
    "bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "swapon", "swapoff",
    "reboot", "acct", "quotactl", "syslog", "open_by_handle_at", "name_to_handle_at", "lookup_dcookie",
    "iopl", "ioperm", "settimeofday", "clock_settime", "uselib", "nfsservctl",
)
# clone with any of these flags: a new mount, cgroup, UTS, IPC, user, PID or network namespace.
NAMESPACE_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000)
# personality(): switching ASLR off, executable data, a mapped page zero (bit 31 clear: not a query).
PERSONALITY_FLAGS = (0x0040000, 0x0100000, 0x0400000)
QUERY_BIT = 0x80000000
# ioctl() pushing characters into a terminal's input (TIOCSTI) or console tricks (TIOCLINUX).
TERMINAL_IOCTLS = (0x5412, 0x541C)


@functools.lru_cache(maxsize=None)
def program() -> bytes | str:
    """The compiled BPF program (bytes), or why there is none here (a str, a few words)."""
    try:
        import pyseccomp
    except ImportError:
        return "pyseccomp is not installed"
    except (RuntimeError, OSError) as exc:  # it loads libseccomp when imported
        return f"libseccomp cannot be loaded ({exc}): install it (apt-get install libseccomp2)"
    try:
        return _compile(pyseccomp)
    except (OSError, ValueError, AttributeError) as exc:
        return f"libseccomp could not build the filter ({exc})"


def _compile(seccomp) -> bytes:
    refuse = seccomp.ERRNO(errno.EPERM)
    rules = seccomp.SyscallFilter(seccomp.ALLOW)
    try:  # the whole process, not the one thread, when a foreign ABI is tried (needs Linux 4.14)
        rules.set_attr(seccomp.Attr.ACT_BADARCH, seccomp.KILL_PROCESS)
    except OSError:
        rules.set_attr(seccomp.Attr.ACT_BADARCH, seccomp.KILL)
    for name in DENIED:
        if seccomp.resolve_syscall(seccomp.Arch.NATIVE, name) >= 0:  # older libseccomp: a newer call unknown
            rules.add_rule(refuse, name)
    for flag in NAMESPACE_FLAGS:
        rules.add_rule(refuse, "clone", seccomp.Arg(_clone_flags_argument(), seccomp.MASKED_EQ, flag, flag))
    rules.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    for flag in PERSONALITY_FLAGS:
        rules.add_rule(refuse, "personality", seccomp.Arg(0, seccomp.MASKED_EQ, flag | QUERY_BIT, flag))
    for request in TERMINAL_IOCTLS:
        rules.add_rule(refuse, "ioctl", seccomp.Arg(1, seccomp.MASKED_EQ, 0xFFFFFFFF, request))
    with tempfile.TemporaryFile() as compiled:
        rules.export_bpf(compiled)
        compiled.seek(0)
        return compiled.read()


def _clone_flags_argument() -> int:
    """clone()'s flags are its first argument, except on s390, where the stack comes first."""
    return 1 if platform.machine().startswith("s390") else 0


def open_program() -> int | None:
    """A readable descriptor holding the program, for ``bwrap --seccomp FD`` (None: no filter here).
    The caller passes it to bwrap and closes it once bwrap has started."""
    compiled = program()
    if isinstance(compiled, str):
        return None
    descriptor = os.memfd_create("deepagent-seccomp", os.MFD_CLOEXEC)
    os.write(descriptor, compiled)
    os.lseek(descriptor, 0, os.SEEK_SET)
    return descriptor


def unavailable() -> str | None:
    """Why the filter cannot be applied here (None: it can)."""
    compiled = program()
    return compiled if isinstance(compiled, str) else None
