"""No sub-agent kernel outlives its host, even one that was stopped (SIGSTOP).

Seen once: a sub-agent kernel left in state ``T`` two hours after its host test process had died.
A stopped process runs nothing, so a watcher that lives inside the kernel (a thread) cannot end it,
and jupyter_client starts each kernel in a session of its own, so the operating system never
continues it when its host dies. Here a real host process (a subprocess) starts a real kernel, the
agent's code in that kernel stops things, and the host is killed with SIGKILL:

- the kernel stops itself (from a helper process, as ``os.kill`` on itself is refused);
- the kernel's whole process group is stopped, with a child in it;
- the kernel, and every other child of the host it can find (the watchers), are stopped;
- a child the kernel started is stopped (the kernel itself runs on);
- the other children of the host (the watchers) are killed, or sent SIGTERM, SIGHUP and SIGINT,
  then the kernel stops itself;
- the watchers' stdin is opened through ``/proc``, told to forget the kernel, and flooded;
- the kernel is stopped the moment its own clean-up starts (files in its private directory disappear);
- the host dies half-way through its own kill of the kernel (after the SIGSTOP, before the SIGKILL).

These attacks run in a kernel without a sandbox (where bubblewrap cannot run): in a sandbox the
kernel is the init of its own PID namespace, which its code can neither stop nor see past, and its
code sees no process of the host. There, the attacks are tried again and must change nothing, and a
kernel the host stopped (code cannot) is killed by the keeper when the host is killed.

After a bounded wait no process of the host's tree (every process below the host when it was killed,
and every process carrying the test's mark, which the agent's code started) is alive. A zombie left to
init is not ours to reap and does not count. The kernel's private directory is gone too.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import psutil
import pytest

pytestmark = pytest.mark.kernel

HOST = """
import os, signal, sys
from deepagent_magics.interpreters.kernel import KernelInterpreter
from deepagent_magics.interpreters.pool import KernelPool
from deepagent_magics.interpreters.pool.sandbox import SandboxPolicy

pool = KernelPool(size=0, sandbox=SandboxPolicy() if sys.argv[2] == "sandboxed" else None)
interpreter = KernelInterpreter(pool=pool, cwd=sys.argv[1])
interpreter.execute({code!r})
print("started", interpreter.pid, interpreter.kernel.signal_group or 0, flush=True)
command = sys.stdin.readline().strip()
if command == "die-mid-kill":  # the first step of a tree kill (SIGSTOP the root), then the host is killed
    os.kill(interpreter.pid, signal.SIGSTOP)
    os.kill(os.getpid(), signal.SIGKILL)
if command == "stop-the-sandboxed-kernel-and-die":  # its own code cannot; the host can, then dies
    os.killpg(interpreter.kernel.signal_group, signal.SIGSTOP)
    os.kill(os.getpid(), signal.SIGKILL)
sys.stdin.readline()
"""

# A helper the agent's code starts in a session of its own (so it is not stopped with the kernel's group):
# it stops what it is told to, then lingers, carrying the mark.
STOPPER = textwrap.dedent("""
    import os, signal, sys, time
    what, kernel, mark = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    def stop(pid):
        try:
            os.kill(pid, signal.SIGSTOP)
        except OSError:
            pass
    if what == "self":
        time.sleep(0.3)
        stop(kernel)
    elif what == "group":
        time.sleep(0.3)
        os.killpg(os.getpgid(kernel), signal.SIGSTOP)
    elif what == "watchers":  # the kernel and every other child of its host: whatever watches it
        time.sleep(0.3)
        host = int(open(f"/proc/{kernel}/stat").read().rsplit(")", 1)[1].split()[1])
        for name in os.listdir("/proc"):
            if name.isdigit() and int(name) != os.getpid():
                try:
                    stat = open(f"/proc/{name}/stat").read().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                if int(stat[1]) == host:
                    stop(int(name))
    elif what in ("kill-watchers", "signal-watchers"):  # end the other children of the host, then stop the kernel
        time.sleep(0.3)
        host = int(open(f"/proc/{kernel}/stat").read().rsplit(")", 1)[1].split()[1])
        signals = [signal.SIGKILL] if what == "kill-watchers" else [signal.SIGTERM, signal.SIGHUP, signal.SIGINT]
        for name in os.listdir("/proc"):
            if name.isdigit() and int(name) not in (os.getpid(), kernel):
                try:
                    stat = open(f"/proc/{name}/stat").read().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                if int(stat[1]) == host:
                    for number in signals:
                        os.kill(int(name), number)
        time.sleep(0.5)
        stop(kernel)
    elif what == "pipe":  # write to the watchers' stdin through /proc: unregister the kernel, then flood
        time.sleep(0.3)
        host = int(open(f"/proc/{kernel}/stat").read().rsplit(")", 1)[1].split()[1])
        pipes = []
        for name in os.listdir("/proc"):
            if name.isdigit() and int(name) not in (os.getpid(), kernel):
                try:
                    if int(open(f"/proc/{name}/stat").read().rsplit(")", 1)[1].split()[1]) == host:
                        pipes.append(os.open(f"/proc/{name}/fd/0", os.O_WRONLY | os.O_NONBLOCK))
                except OSError:
                    continue
        for fd in pipes:
            os.write(fd, f"-{kernel}\\n".encode())
        stop(kernel)
        deadline = time.monotonic() + float(mark)
        while time.monotonic() < deadline:
            for fd in pipes:
                try:
                    os.write(fd, b"\\n" * 4096)
                except OSError:
                    pass
            time.sleep(0.001)
    elif what == "cleanup":  # stop the kernel the moment its clean-up starts (its directory goes first)
        junk = os.path.join(sys.argv[4], "junk")
        full = len(os.listdir(junk))
        while True:
            try:
                if len(os.listdir(junk)) < full:
                    break
            except OSError:
                break
            time.sleep(0.0005)
        stop(kernel)
    time.sleep(float(mark))
""")


def hostile(mark: str, what: str) -> str:
    """Agent code: escapees that leave the kernel's group, then the stopper ``what``."""
    return textwrap.dedent(f"""
        import os, subprocess, sys
        subprocess.Popen(['sleep', {mark!r}], start_new_session=True)
        subprocess.Popen(['sleep', {mark!r}])  # in the kernel's own process group
        if {what!r} == "child":
            child = subprocess.Popen(['sleep', {mark!r}], start_new_session=True)
            os.kill(child.pid, __import__('signal').SIGSTOP)
        elif {what!r} != "none":
            from ipykernel.connect import get_connection_file
            folder = os.path.dirname(get_connection_file())
            if {what!r} == "cleanup":  # files that make the clean-up take long enough to be caught in it
                os.mkdir(os.path.join(folder, "junk"))
                for n in range(4000):
                    open(os.path.join(folder, "junk", str(n)), "w").close()
            subprocess.Popen([sys.executable, '-c', {STOPPER!r}, {what!r}, str(os.getpid()), {mark!r}, folder],
                             start_new_session=True)
    """)


def new_mark() -> str:
    return f"{random.randint(100, 199)}.{random.randint(10**8, 10**9)}"  # seconds a sleep runs at most


def marked(mark: str) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(["cmdline"]):
        try:
            if mark in (process.info["cmdline"] or []):
                found.append(process)
        except psutil.Error:
            continue
    return found


def left(processes: list[psutil.Process]) -> list[str]:
    """Those still alive: not gone, not a zombie (a zombie left to init is not ours to reap)."""
    alive = []
    for process in processes:
        try:
            if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                alive.append(f"{process.pid} {process.status()} {' '.join(process.cmdline())[:80]}")
        except psutil.Error:
            continue
    return alive


def status(pid: int) -> str:
    try:
        return psutil.Process(pid).status()
    except psutil.Error:
        return "gone"


def wait_for(condition, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


@pytest.fixture
def mark():
    mark = new_mark()
    tracked: list[psutil.Process] = []
    yield mark, tracked
    for process in tracked + marked(mark):  # never leave a test's processes behind, whatever happened
        try:
            process.kill()
        except psutil.Error:
            pass


def run_host(tmp_path, mark: str, tracked: list, what: str, command: str = "", stopped: bool = True,
             sandboxed: bool = False):
    """Start the host, let the agent's code do ``what``, kill the host; return what is left after 20 s."""
    script = tmp_path / "host.py"
    script.write_text(HOST.format(code=hostile(mark, what)))
    host = subprocess.Popen([sys.executable, str(script), str(tmp_path), "sandboxed" if sandboxed else "bare"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    kernel_dir = str(tmp_path / "none")
    try:
        line = host.stdout.readline()
        assert line.startswith("started"), "the host did not start its kernel"
        kernel, inner = int(line.split()[1]), int(line.split()[2])
        tracked.append(psutil.Process(kernel))
        kernel_dir = os.path.dirname(psutil.Process(kernel).cmdline()[-1])  # ... -f DIR/kernel.json
        if stopped:
            assert wait_for(lambda: status(kernel) == psutil.STATUS_STOPPED, 10), status(kernel)
        else:
            started = 3 if what in ("child", "cleanup") else 2  # the two sleeps, and the third or the stopper
            assert wait_for(lambda: len(marked(mark)) >= started, 10)
            time.sleep(0.5)  # the stopper is watching
            if sandboxed:  # what its code tried stopped neither the kernel nor the bwrap holding it
                assert {status(kernel), status(inner)} <= {psutil.STATUS_SLEEPING, psutil.STATUS_RUNNING}
        tree = psutil.Process(host.pid).children(recursive=True)
        tracked.extend(tree)
        assert len(tree) >= 3, tree
        if what == "watchers" and not sandboxed:  # every child of the host (the kernel, any watcher) is stopped
            assert wait_for(lambda: {status(p.pid) for p in psutil.Process(host.pid).children()}
                            == {psutil.STATUS_STOPPED}, 10)
        if command:
            host.stdin.write(command + "\n")
            host.stdin.flush()
        else:
            host.send_signal(signal.SIGKILL)
        assert host.wait(timeout=30) == -signal.SIGKILL
    finally:
        if host.poll() is None:
            host.kill()
    everything = tree + [p for p in marked(mark) if p.pid not in {t.pid for t in tree}]
    wait_for(lambda: not left(everything), 20)
    remaining = left(everything)
    if what != "cleanup":  # the kernel's private directory (connection file, sockets) goes with it
        wait_for(lambda: not os.path.exists(kernel_dir), 5)
        remaining += [f"directory {kernel_dir}"] if os.path.exists(kernel_dir) else []
    shutil.rmtree(kernel_dir, ignore_errors=True)  # what a clean-up caught half-way left
    return remaining


def test_a_kernel_that_stopped_itself_dies_with_its_host(tmp_path, mark):
    assert run_host(tmp_path, *mark, what="self") == []


def test_a_kernel_whose_process_group_was_stopped_dies_with_its_host(tmp_path, mark):
    assert run_host(tmp_path, *mark, what="group") == []


def test_a_kernel_that_stopped_its_watchers_dies_with_its_host(tmp_path, mark):
    assert run_host(tmp_path, *mark, what="watchers") == []


def test_a_stopped_child_of_a_kernel_dies_with_its_host(tmp_path, mark):
    assert run_host(tmp_path, *mark, what="child", stopped=False) == []


def test_a_kernel_stopped_while_its_clean_up_runs_dies_with_its_host(tmp_path, mark):
    assert run_host(tmp_path, *mark, what="cleanup", stopped=False) == []


def test_a_kernel_left_stopped_by_a_host_killed_mid_kill_dies(tmp_path, mark):
    assert run_host(tmp_path, *mark, what="none", command="die-mid-kill", stopped=False) == []


def test_a_kernel_that_killed_its_watchers_then_stopped_itself_dies_with_its_host(tmp_path, mark):
    assert run_host(tmp_path, *mark, what="kill-watchers") == []


def test_a_kernel_that_signalled_its_watchers_then_stopped_itself_dies_with_its_host(tmp_path, mark):
    assert run_host(tmp_path, *mark, what="signal-watchers") == []


def test_a_kernel_that_wrote_to_its_watchers_pipe_dies_with_its_host(tmp_path, mark):
    assert run_host(tmp_path, *mark, what="pipe") == []


@pytest.mark.parametrize("what", ["self", "group", "watchers", "kill-watchers", "signal-watchers", "pipe"])
def test_in_a_sandbox_the_kernels_code_stops_nothing_of_the_host_and_dies_with_it(tmp_path, mark, what):
    from deepagent_magics.interpreters.pool.sandbox import unavailable

    if unavailable():
        pytest.skip(f"no sandbox here: {unavailable()}")
    assert run_host(tmp_path, *mark, what=what, stopped=False, sandboxed=True) == []


def test_a_sandboxed_kernel_stopped_by_its_host_is_killed_by_the_keeper(tmp_path, mark):
    from deepagent_magics.interpreters.pool.sandbox import unavailable

    if unavailable():
        pytest.skip(f"no sandbox here: {unavailable()}")
    assert run_host(tmp_path, *mark, what="none", command="stop-the-sandboxed-kernel-and-die", stopped=False,
                    sandboxed=True) == []


def test_the_keeper_kills_only_the_process_it_was_told_about(tmp_path):
    """A pid whose start time is not the registered one (a reused pid) is left alone; the same pid with
    its own start time is killed when the host's pipe closes."""
    from deepagent_magics.interpreters.pool import keeper

    victims = [subprocess.Popen(["sleep", "60"], start_new_session=True) for _ in range(2)]
    try:
        reused, registered = victims
        serving = subprocess.Popen([sys.executable, "-I", keeper.__file__, str(os.getpid())],
                                   stdin=subprocess.PIPE, process_group=0)
        serving.stdin.write(f"+{reused.pid} {reused.pid} {keeper.start_time(reused.pid) + 1}\n".encode())
        serving.stdin.write(f"+{registered.pid} {registered.pid} {keeper.start_time(registered.pid)}\n".encode())
        serving.stdin.write(f"-{registered.pid}\n".encode())  # still alive: not forgotten
        serving.stdin.close()  # the host is gone
        assert serving.wait(timeout=30) == 0
        assert registered.wait(timeout=10) == -signal.SIGKILL
        assert reused.poll() is None
    finally:
        for victim in victims:
            victim.kill()
            victim.wait()
