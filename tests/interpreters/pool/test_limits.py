"""The sub-agent limits are settings of every door, reach the kernel pool, and become the right rlimits.

No kernel starts here: the magic's settings, the command line's flags and the run API's fields are
checked to arrive as the pool's `ResourceLimits`; the rlimits are checked by running a real process under
them (with ``prlimit`` and without it); a step's error is read for what an rlimit refused.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys

import pytest
from IPython.core.error import UsageError

from deepagent_magics.cli.commands import _pool
from deepagent_magics.cli.parser import build_parser
from deepagent_magics.interpreters.pool import default_pool, limits, stop_default_pool
from deepagent_magics.interpreters.pool.limits import (
    LIMITS,
    RLIMIT,
    TMPFS_SIZE,
    LimitHit,
    ResourceLimits,
    from_error,
    counts_processes,
    rlimit_command,
    rlimits,
)
from deepagent_magics.server.launch import RequestError, cell_code, check_body
from deepagent_magics.settings import CELL, CLI, CONFIG, SERVER, SETTINGS

LOW = "--subagent-processes 64 --subagent-memory 512 --subagent-cpu-time 30 --subagent-file-size 16 " \
      "--subagent-disk 100 --subagent-open-files 200"
LOW_LIMITS = ResourceLimits(processes=64, memory=512, cpu_time=30, file_size=16, disk=100, open_files=200)


def test_each_limit_is_one_setting_at_every_door_of_local_kernels_with_its_default():
    for name, limit in LIMITS.items():
        setting = SETTINGS[limit.setting]
        assert {CELL, CONFIG, CLI, SERVER} <= setting.doors, name
        assert getattr(ResourceLimits(), name) == setting.default > 0
        assert setting.check(0) == 0  # 0: no limit
    assert ResourceLimits.from_settings({"subagent_memory": 100, "subagent_disk": None}) == ResourceLimits(memory=100)


def test_the_magics_settings_make_the_pools_limits_and_a_change_makes_a_new_pool(ip, tmp_path):
    magics = ip.magics_manager.registry["DeepAgentMagics"]
    try:
        settings = {name: getattr(magics, name) for name in magics.SETTINGS}
        settings.update(max_depth=0, workspace=str(tmp_path))
        before = magics._subagent_pool(settings)
        assert before.sandbox.limits == ResourceLimits()
        ip.run_line_magic("deepagent_config", LOW)
        settings = {name: getattr(magics, name) for name in magics.SETTINGS}
        settings.update(max_depth=0, workspace=str(tmp_path))
        after = magics._subagent_pool(settings)
        assert after.sandbox.limits == LOW_LIMITS and after is not before and before.closed
        assert default_pool() is after
    finally:
        stop_default_pool()
        ip.run_line_magic("deepagent_config", "--reset")
    for bad in ("--subagent-memory -1", "--subagent-processes many", "--subagent-disk 1e30"):
        with pytest.raises(UsageError) as raised:
            ip.run_line_magic("deepagent_config", bad)
        assert "\n" not in str(raised.value) and bad.split()[0] in str(raised.value)
    assert magics.subagent_memory == SETTINGS["subagent_memory"].default


@pytest.mark.subprocess  # probes the sandbox: bwrap, prlimit, ldconfig (pyseccomp's find_library)
def test_the_command_line_and_the_run_api_take_them_too(tmp_path):
    args = build_parser().parse_args(["run", "task", "--workspace", str(tmp_path), *LOW.split()])
    pool = _pool(args)
    try:
        assert pool.sandbox.limits == LOW_LIMITS
    finally:
        pool.stop()
    code = cell_code("r1", "task", "/w", {"subagent_memory": 512, "subagent_open_files": 200})
    assert "--subagent-memory 512" in code and "--subagent-open-files 200" in code
    with pytest.raises(RequestError):
        check_body({"task": "t", "subagent_memory": "lots"})


@pytest.mark.subprocess  # probes the sandbox: bwrap, prlimit, ldconfig (pyseccomp's find_library)
@pytest.mark.parametrize("prlimit", ["prlimit", "no-such-prlimit"])
def test_the_rlimits_hold_in_the_process_they_start_with_prlimit_or_without(prlimit, monkeypatch):
    monkeypatch.setattr(limits, "PRLIMIT", prlimit)
    pairs = rlimits(LOW_LIMITS, processes=True, memory=True)
    assert dict((name, (soft, hard)) for name, soft, hard in pairs) == {
        "CORE": (0, 0), "CPU": (30, 31), "FSIZE": (16 << 20, 16 << 20), "NOFILE": (200, 200),
        "DATA": (512 << 20, 512 << 20), "NPROC": (64, 64)}
    code = "import resource as r; print(*(r.getrlimit(getattr(r, 'RLIMIT_' + n)) for n in ('NOFILE', 'CPU', 'CORE', " \
           "'NPROC', 'DATA', 'FSIZE')))"
    shown = subprocess.run([*rlimit_command(pairs), sys.executable, "-c", code], capture_output=True, text=True,
                           check=True).stdout.strip()
    assert shown == f"(200, 200) (30, 31) (0, 0) (64, 64) ({512 << 20}, {512 << 20}) ({16 << 20}, {16 << 20})"
    assert "NPROC" not in dict((name, 0) for name, *_ in rlimits(LOW_LIMITS, processes=False, memory=False))
    assert rlimits(ResourceLimits.none(), processes=True, memory=True) == [("CORE", 0, 0)]


@pytest.mark.subprocess  # probes the sandbox: bwrap, prlimit, ldconfig (pyseccomp's find_library)
def test_the_rlimits_never_ask_for_more_than_this_process_may_have():
    """Under a hard limit lower than the setting, the kernel gets that limit, not a refusal to start."""
    code = ("from deepagent_magics.interpreters.pool.limits import ResourceLimits, rlimits\n"
            "print(dict((n, h) for n, s, h in rlimits(ResourceLimits(open_files=4096), processes=False, "
            "memory=False))['NOFILE'])")
    done = subprocess.run(["prlimit", "--nofile=300:300", "--", sys.executable, "-c", code], capture_output=True,
                          text=True, check=True)
    assert done.stdout.strip() == "300"


def test_a_steps_error_says_which_limit_an_rlimit_refused_and_only_that():
    held = {"processes": RLIMIT, "memory": RLIMIT, "file_size": RLIMIT, "open_files": RLIMIT, "disk": TMPFS_SIZE}
    traceback = "Traceback (most recent call last):\n  File \"<agent step 1>\", line 3, in <module>\n    {}\n{}"
    cases = {
        ("hoard.append(bytearray(1 << 30))", "MemoryError"): "memory",
        ("f.write(data)", f"OSError: [Errno {errno.EFBIG}] File too large"): "file_size",
        ("open(name)", f"OSError: [Errno {errno.EMFILE}] Too many open files: 'x'"): "open_files",
        ("pid = os.fork()", f"BlockingIOError: [Errno {errno.EAGAIN}] Resource temporarily unavailable"): "processes",
        ("t.start()", "RuntimeError: can't start new thread"): "processes",
        ("f.write(data)", f"OSError: [Errno {errno.ENOSPC}] No space left on device"): "disk",
        ("sock.recv(10)", f"BlockingIOError: [Errno {errno.EAGAIN}] Resource temporarily unavailable"): None,
        ("1 / 0", "ZeroDivisionError: division by zero"): None,
    }
    for (line, last), found in cases.items():
        assert from_error(traceback.format(line, last), held) == found, last
    # What a cgroup holds, its counters say: a MemoryError there is not the limit's.
    assert from_error(traceback.format("x", "MemoryError"), {**held, "memory": "cgroup v1"}) is None
    assert from_error("", held) is None


def test_the_line_names_the_limit_its_flag_and_what_held_it():
    assert LimitHit("memory", 512, "cgroup v2").line == \
        "it used more than 512 MiB of memory (limit --subagent-memory, held by cgroup v2)"
    assert LimitHit("processes", 64, RLIMIT).line == \
        "it tried to run more than 64 processes and threads at once (limit --subagent-processes, held by rlimit)"


def test_the_process_rlimit_is_set_only_where_it_counts_one_sandbox_and_never_for_root():
    unprivileged = os.geteuid() != 0
    assert counts_processes(["/usr/bin/bwrap", "--unshare-user", "--"]) == unprivileged
    assert not counts_processes([])  # no sandbox: it would count every process of the user
    setuid = os.stat("/usr/bin/bwrap").st_mode & 0o4000
    assert counts_processes(["/usr/bin/bwrap", "--"]) == (unprivileged and not setuid)
