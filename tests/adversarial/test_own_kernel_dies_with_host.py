"""A session's own kernel does not outlive its host (acp/own_kernel.py): not even one whose code fights.

The code run in the kernel ignores SIGINT and SIGTERM and starts a child that ignores them too; then the
host (a separate Python process holding an `OwnKernel`, as ``deepagent acp`` does) is killed with SIGKILL,
so none of its clean-up runs. Every process of the kernel's tree, and the host's helpers, must end.
Real kernel (``jupyter_client``), real signals, psutil to look.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time

import psutil
import pytest

pytest.importorskip("acp")

pytestmark = [pytest.mark.kernel, pytest.mark.subprocess, pytest.mark.timeout(120)]

FIGHTER = ("import signal, time\n"
           "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
           "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
           "time.sleep(600)\n")

HOST = textwrap.dedent("""
    import asyncio, sys
    from pathlib import Path
    from deepagent_magics.acp.own_kernel import OwnKernel

    folder = Path(sys.argv[1])
    CODE = r'''
    import os, signal, subprocess, sys
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    child = subprocess.Popen([sys.executable, '-c', %r])
    open('pids', 'w').write(f'{os.getpid()} {child.pid}')
    '''

    async def main():
        place = OwnKernel(folder, folder)
        await place._ready()
        reply = await place.client.execute_interactive(CODE, timeout=120, output_hook=lambda message: None)
        assert reply['content']['status'] == 'ok', reply['content']
        print('ready', flush=True)
        await asyncio.sleep(600)

    asyncio.run(main())
""") % FIGHTER


def alive(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _pids(folder) -> list[str]:
    path = folder / "pids"
    return path.read_text().split() if path.exists() else []


def test_a_kernel_that_ignores_signals_ends_with_its_host_killed_with_sigkill(tmp_path):
    host = subprocess.Popen([sys.executable, "-c", HOST, str(tmp_path)], stdout=subprocess.PIPE, cwd=tmp_path)
    tree: list[psutil.Process] = []
    try:
        assert host.stdout.readline().strip() == b"ready"  # (bounded by the test's timeout)
        kernel_pid, child_pid = (int(word) for word in (tmp_path / "pids").read_text().split())
        tree = psutil.Process(host.pid).children(recursive=True)  # the kernel, its child, the host's helpers
        assert {kernel_pid, child_pid} <= {process.pid for process in tree}
        host.send_signal(signal.SIGKILL)
        host.wait()
        while any(alive(process) for process in tree):  # a generous poll: the test's timeout bounds it
            time.sleep(0.1)
    finally:
        if host.poll() is None:
            host.kill()
            host.wait()
        left = tree + [psutil.Process(int(pid)) for pid in _pids(tmp_path) if psutil.pid_exists(int(pid))]
        for process in left:  # what a failing run left behind
            try:
                process.kill()
            except psutil.Error:
                pass
    assert not any(alive(process) for process in tree)
