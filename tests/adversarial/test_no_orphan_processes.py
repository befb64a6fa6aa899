"""No process outlives its sub-agent (issue 10, item 9).

A sub-agent's code starts processes that try to get away from its kernel: a new session
(``start_new_session=True``), ``setsid`` in an orphaned shell job, ``nohup``, a double fork with
``setsid`` (the grandchild is orphaned), and a respawner in a session of its own that keeps
starting new such processes. Whether the sub-agent ends normally, is stopped at its time limit,
or its host process is killed with SIGKILL, none of them remains.

Each escapee carries a unique mark on its command line, so the test finds every one of them,
including those started after the test last looked. Real kernels, a real pool, psutil.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import textwrap
import time

import psutil
import pytest

from deepagent_magics import DeepAgent
from deepagent_magics.interpreters.pool import KernelPool
from deepagent_magics.testing import ScriptedLM

pytestmark = pytest.mark.kernel

RESPAWNER = (
    "import subprocess, sys, time\n"
    "for _ in range(40):\n"
    "    subprocess.Popen(['sleep', sys.argv[1]], start_new_session=True)\n"
    "    time.sleep(0.1)\n"
    "time.sleep(float(sys.argv[1]))\n"
)


def escapes(mark: str) -> str:
    """Code (run in a sub-agent's kernel) starting processes that leave the kernel's process group."""
    return textwrap.dedent(f"""
        import os, subprocess, sys
        subprocess.Popen(['sleep', {mark!r}], start_new_session=True)
        subprocess.run(['sh', '-c', 'setsid sleep {mark} >/dev/null 2>&1 &'])
        subprocess.run(['sh', '-c', 'nohup sleep {mark} >/dev/null 2>&1 &'])
        child = os.fork()
        if child == 0:
            os.setsid()
            if os.fork() == 0:
                os.execvp('sleep', ['sleep', {mark!r}])
            os._exit(0)
        os.waitpid(child, 0)
        subprocess.Popen([sys.executable, '-c', {RESPAWNER!r}, {mark!r}], start_new_session=True)
    """)


def new_mark() -> str:
    return f"{random.randint(100, 199)}.{random.randint(10**8, 10**9)}"  # seconds sleep runs at most


def marked(mark: str) -> list[psutil.Process]:
    """Live (not zombie) processes with ``mark`` on their command line."""
    found = []
    for process in psutil.process_iter(["cmdline", "status"]):
        try:
            if mark in (process.info["cmdline"] or []) and process.info["status"] != psutil.STATUS_ZOMBIE:
                found.append(process)
        except psutil.Error:
            continue
    return found


def wait_none_marked(mark: str, timeout: float) -> list[psutil.Process]:
    deadline = time.monotonic() + timeout
    while marked(mark) and time.monotonic() < deadline:
        time.sleep(0.1)
    return marked(mark)


@pytest.fixture
def mark():
    mark = new_mark()
    yield mark
    for process in marked(mark):  # never leave a test's escapees behind, whatever happened
        try:
            process.kill()
        except psutil.Error:
            pass


@pytest.fixture(scope="module")
def pool():
    pool = KernelPool(size=1).warm()
    yield pool
    pool.stop()


def witness_for(mark: str, seen: list[int]):
    def witness() -> int:
        """How many of the escapees are alive now."""
        time.sleep(1.0)  # let the respawner start a few
        seen.append(len(marked(mark)))
        return seen[-1]

    return witness


def test_no_process_outlives_a_sub_agent_that_ends(pool, tmp_path, mark):
    seen: list[int] = []
    lm = ScriptedLM(scripts={
        "ORPHAN-ROOT": [("Delegate.", "r = delegate('ORPHAN-CHILD: start things')\nSUBMIT(result=r)")],
        "ORPHAN-CHILD": [("Escape.", escapes(mark)), ("Look.", "n = witness()"), ("Done.", "SUBMIT(result=str(n))")],
    })
    agent = DeepAgent(lm=lm, workspace=tmp_path, pool=pool, tools=[witness_for(mark, seen)])
    run = agent.run("ORPHAN-ROOT: go", namespace={})

    assert run.status == "finished", run.error
    assert seen and seen[0] >= 6, seen  # they were running while the sub-agent ran
    assert wait_none_marked(mark, timeout=5) == []


def test_no_process_outlives_a_sub_agent_stopped_at_its_time_limit(pool, tmp_path, mark):
    seen: list[int] = []
    lm = ScriptedLM(scripts={
        "ORPHAN-ROOT": [("Delegate.", "r = delegate('ORPHAN-CHILD: start things and hang')\nSUBMIT(result=r)")],
        "ORPHAN-CHILD": [("Escape and hang.", escapes(mark) + "n = witness()\nimport time\nwhile True:\n"
                                                             "    time.sleep(0.1)")],
    })
    agent = DeepAgent(lm=lm, workspace=tmp_path, pool=pool, tools=[witness_for(mark, seen)], subagent_timeout=4)
    run = agent.run("ORPHAN-ROOT: go", namespace={})

    assert run.status == "finished", run.error
    assert run.result.startswith("Error: the sub-agent ran past its time limit"), run.result
    assert seen and seen[0] >= 6, seen
    assert wait_none_marked(mark, timeout=5) == []


HOST = """
import sys
from deepagent_magics.interpreters.kernel import KernelInterpreter
from deepagent_magics.interpreters.pool import KernelPool

pool = KernelPool(size=1).warm()
assert pool.wait_ready(timeout=120)
interpreter = KernelInterpreter(pool=pool, cwd=sys.argv[1])
interpreter.execute({code!r})
print("started", interpreter.pid, flush=True)
sys.stdin.readline()
"""


def test_no_process_outlives_a_sigkilled_host(tmp_path, mark):
    script = tmp_path / "host.py"
    script.write_text(HOST.format(code=escapes(mark)))
    host = subprocess.Popen([sys.executable, str(script), str(tmp_path)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        line = host.stdout.readline()
        assert line.startswith("started"), "the host did not start its kernel"
        kernel = int(line.split()[1])
        time.sleep(1.0)  # the respawner starts a few more
        assert len(marked(mark)) >= 6
        host.send_signal(signal.SIGKILL)
        assert host.wait(timeout=30) == -signal.SIGKILL
    finally:
        if host.poll() is None:
            host.kill()
    assert wait_none_marked(mark, timeout=20) == []
    assert not psutil.pid_exists(kernel) or psutil.Process(kernel).status() == psutil.STATUS_ZOMBIE


def test_a_kernel_is_the_subreaper_of_what_its_code_starts(pool, tmp_path, mark):
    from deepagent_magics.interpreters.kernel import KernelInterpreter

    interpreter = KernelInterpreter(pool=pool, cwd=str(tmp_path))
    try:
        kernel = interpreter.pid or int(interpreter.execute("import os\nos.getpid()"))
        interpreter.execute(escapes(mark))
        time.sleep(0.5)
        parents = {process.ppid() for process in marked(mark) if process.cmdline()[0] == "sleep"}
        # Orphans are re-parented to the kernel, not to init: the kernel can still find and end them.
        assert parents and parents <= {kernel} | {p.pid for p in psutil.Process(kernel).children(recursive=True)}
    finally:
        interpreter.shutdown()
    assert wait_none_marked(mark, timeout=5) == []
