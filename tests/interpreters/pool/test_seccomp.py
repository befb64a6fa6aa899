"""interpreters/pool/seccomp.py: the compiled filter refuses what it lists, lets the rest through, says why it is missing.

The filter is loaded here into a child process as bwrap loads it (``PR_SET_NO_NEW_PRIVS``, then
``PR_SET_SECCOMP``); with bwrap and a real kernel see ``tests/adversarial/test_sandbox_privileges.py``.
"""

from __future__ import annotations

import builtins
import os
import subprocess
import sys

import pytest

from deepagent_magics.interpreters.pool import seccomp

pytestmark = pytest.mark.subprocess  # compiling the filter runs a child (and the tests load it into one)

CHILD = r"""
import ctypes, errno, os, sys
program = sys.stdin.buffer.read()
libc = ctypes.CDLL(None, use_errno=True)
if program:
    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
    buffer = ctypes.create_string_buffer(program, len(program))
    loaded = Program(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    assert libc.prctl(38, 1, 0, 0, 0) == 0  # PR_SET_NO_NEW_PRIVS
    assert libc.prctl(22, 2, ctypes.byref(loaded), 0, 0) == 0  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER

def said(result):
    return "ok" if result != -1 else errno.errorcode[ctypes.get_errno()]

print("personality", said(libc.personality(0x0040000)))  # ADDR_NO_RANDOMIZE
print("query", said(libc.personality(0xffffffff)))
print("tiocsti", said(libc.ioctl(0, 0x5412, ctypes.c_char_p(b"x"))))
print("keyctl", said(libc.syscall(250 if os.uname().machine == "x86_64" else -1, 0, 0, 0, 0)))
print("getpid", "ok" if os.getpid() > 0 else "no")
with open(os.devnull) as null:
    print("open", "ok")
"""


def run_child(program: bytes) -> dict[str, str]:
    done = subprocess.run([sys.executable, "-c", CHILD], input=program, capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    return dict(line.split(" ", 1) for line in done.stdout.decode().splitlines())


@pytest.fixture(scope="module")
def compiled() -> bytes:
    program = seccomp.program()
    if isinstance(program, str):
        pytest.skip(f"no filter here: {program}")
    return program


def test_the_program_is_a_bpf_program_and_is_compiled_once(compiled):
    assert isinstance(compiled, bytes) and len(compiled) % 8 == 0 and len(compiled) > 8 * len(seccomp.DENIED)
    assert seccomp.program() is compiled and seccomp.unavailable() is None


@pytest.mark.skipif(sys.platform != "linux" or os.uname().machine != "x86_64", reason="x86-64 system call numbers")
def test_the_filter_refuses_what_it_lists_and_lets_the_rest_through(compiled):
    control = run_child(b"")
    changed = ("personality", "tiocsti", "keyctl")
    assert all(control[call] != "EPERM" for call in changed)  # refused by the filter, not by this machine
    filtered = run_child(compiled)
    assert filtered["personality"] == "EPERM"  # ASLR cannot be switched off
    assert filtered["query"] == "ok"  # asking the personality is not changing it
    assert filtered["tiocsti"] == "EPERM"  # no typing into a terminal's input
    assert filtered["keyctl"] == "EPERM"
    assert (filtered["getpid"], filtered["open"]) == ("ok", "ok")


def test_the_descriptor_bwrap_reads_holds_the_program(compiled):
    descriptor = seccomp.open_program()
    try:
        assert os.read(descriptor, len(compiled) + 1) == compiled
        assert os.get_inheritable(descriptor) is False  # passed to bwrap by pass_fds only
    finally:
        os.close(descriptor)


def test_without_pyseccomp_the_reason_is_said_and_no_descriptor_opened(monkeypatch):
    real_import = builtins.__import__

    def no_pyseccomp(name, *args, **kwargs):
        if name == "pyseccomp":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    seccomp.program.cache_clear()
    monkeypatch.setattr(builtins, "__import__", no_pyseccomp)
    try:
        assert seccomp.program() == "pyseccomp is not installed"
        assert seccomp.unavailable() == "pyseccomp is not installed" and seccomp.open_program() is None
    finally:
        monkeypatch.undo()
        seccomp.program.cache_clear()


def test_a_libseccomp_that_cannot_build_the_filter_is_said(compiled, monkeypatch):
    def broken(module):
        raise OSError("unknown syscall")

    seccomp.program.cache_clear()
    monkeypatch.setattr(seccomp, "_compile", broken)
    try:
        assert seccomp.program() == "libseccomp could not build the filter (unknown syscall)"
        assert seccomp.open_program() is None
    finally:
        monkeypatch.undo()
        seccomp.program.cache_clear()


def test_clones_flags_are_its_first_argument_except_on_s390(monkeypatch):
    assert seccomp._clone_flags_argument() == 0 or os.uname().machine.startswith("s390")
    monkeypatch.setattr(seccomp.platform, "machine", lambda: "s390x")
    assert seccomp._clone_flags_argument() == 1
