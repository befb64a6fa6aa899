"""The kernel survives the agent (issue 10, items 1, 2 and 4).

Model-written code that asks the kernel to exit, exits the interpreter, or signals its
own process must get an error it can read in its step output; the kernel, the user's
variables, the run and its record carry on. Every run ends in a final status whatever
is raised. Names the agent created that shadow builtins are taken away at the end.

The variants that would kill a process run in a real Jupyter kernel driven over
jupyter_client (if the guard failed, only that kernel dies); the rest run in the real
InteractiveShell of the test session.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest
from tests.kernels import execute, start_kernel, stop_kernel

from deepagent_magics import DeepAgent
from deepagent_magics.core.run.run import Run
from deepagent_magics.testing import ScriptedLM

EXIT_MESSAGE = "ends the user's kernel; agent code may not call it"


def hostile_run(code, namespace, workspace, **kwargs):
    """One hostile step, then a step proving the agent carries on, then SUBMIT."""
    lm = ScriptedLM([
        ("Misbehave.", code),
        ("Still here?", "after = 'alive'\nprint(after)"),
        ("Done.", "SUBMIT(result='done')"),
    ])
    return DeepAgent(lm=lm, workspace=workspace, timeout=30, **kwargs).run("misbehave", namespace)


# --------------------------------------------------------------------------- in the test's own shell
IN_PROCESS = {
    "exit()": "exit()",
    "quit()": "quit()",
    "exit(0) from builtins": "import builtins\nbuiltins.exit(0)",
    "quit from builtins": "import builtins\nbuiltins.quit()",
    "get_ipython().ask_exit()": "get_ipython().ask_exit()",
    "the shell's exiter": "get_ipython().exiter()",
    "sys.exit(3)": "import sys\nsys.exit(3)",
    "sys.exit('message')": "import sys\nsys.exit('bye')",
    "raise SystemExit": "raise SystemExit",
    "raise SystemExit(0) in a function": "def leave():\n    raise SystemExit(0)\nleave()",
    "GeneratorExit at top level": "raise GeneratorExit",
    "exit inside a try/finally": "try:\n    exit()\nfinally:\n    print('cleanup')",
}


@pytest.mark.parametrize("case", list(IN_PROCESS))
def test_exits_in_root_agent_code_are_errors_the_agent_reads(ip, tmp_path, case):
    ip.user_ns["precious"] = {"hours": 7}
    keep = ip.user_ns["precious"]
    run = hostile_run(IN_PROCESS[case], ip.user_ns, tmp_path)

    assert run.status == "finished", run.error
    assert run.result == "done"
    first = run.steps[0].output
    assert first.startswith("[Error]"), first
    assert "Traceback" in first
    assert EXIT_MESSAGE in first or "SystemExit" in first or "GeneratorExit" in first
    assert run.steps[1].output == "alive"  # the next step ran
    assert ip.user_ns["precious"] is keep
    assert getattr(ip, "exit_now", False) is False
    assert getattr(ip, "keep_running", True) is not False


def test_the_record_of_a_run_that_called_sys_exit_says_finished(ip, tmp_path):
    run = hostile_run("import sys\nsys.exit(1)", ip.user_ns, tmp_path)
    record = json.loads((tmp_path / ".deepagent" / "runs" / f"{run.id}.json").read_text())
    assert record["status"] == "finished"
    assert run.ended_at is not None


def test_exit_through_the_magic_keeps_the_users_variables_and_reports_ok(ip, tmp_path):
    ip.user_ns["lm"] = ScriptedLM([("Exit.", "quit()"), ("Done.", "SUBMIT(result='ok')")])
    ip.user_ns["data"] = [1, 2, 3]
    ip.run_cell_magic("deepagent", "--lm lm --out answer", "leave")
    assert ip.user_ns["answer"] == "ok"
    assert ip.user_ns["data"] == [1, 2, 3]
    run = ip.user_ns["_deepagent_run"]
    assert EXIT_MESSAGE in run.steps[0].output


@pytest.mark.subprocess
def test_signals_and_kills_aimed_elsewhere_still_work(ip, tmp_path):
    """Host code (and the agent) may still signal other processes: a sub-agent's kernel group is killed that way."""
    code = (
        "import os, signal, subprocess, sys\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'], start_new_session=True)\n"
        "os.killpg(child.pid, signal.SIGKILL)\n"
        "child.wait(10)\n"
        "other = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "os.kill(other.pid, signal.SIGTERM)\n"
        "other.wait(10)\n"
        "os.kill(os.getpid(), 0)  # an existence check is no signal\n"
        "print(child.returncode, other.returncode)"
    )
    run = hostile_run(code, {}, tmp_path)
    assert run.steps[0].output == f"{-signal.SIGKILL} {-signal.SIGTERM}"


@pytest.mark.subprocess
def test_a_forked_child_of_agent_code_can_still_exit(tmp_path):
    """The refusals hold in the kernel's own process only: a forked child's os._exit still ends the child."""
    code = (
        "import os\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    os._exit(7)\n"
        "_, status = os.waitpid(pid, 0)\n"
        "print(os.waitstatus_to_exitcode(status))"
    )
    run = hostile_run(code, {}, tmp_path)
    assert run.steps[0].output == "7"


@pytest.mark.subprocess
def test_the_refusals_are_lifted_after_the_run(tmp_path):
    """Outside agent code nothing is patched: the process's exits are the real ones again."""
    import os
    import site  # noqa: F401  (the Quitter class behind builtins.exit)
    originals = (os._exit, os.abort, os.kill, os.killpg, signal.raise_signal, signal.pthread_kill,
                 type(__builtins__["exit"] if isinstance(__builtins__, dict) else __builtins__.exit).__call__)
    hostile_run("exit()", {}, tmp_path)
    after = (os._exit, os.abort, os.kill, os.killpg, signal.raise_signal, signal.pthread_kill,
             type(__builtins__["exit"] if isinstance(__builtins__, dict) else __builtins__.exit).__call__)
    assert after == originals
    # And a real sys.exit outside a run still exits (here: a child interpreter).
    done = subprocess.run([sys.executable, "-c", "import sys; sys.exit(5)"])
    assert done.returncode == 5


# --------------------------------------------------------------------------- item 2: a final status, always
def raising(exc):
    """An LM whose first request raises ``exc`` (a provider or a library misbehaving)."""

    def policy(request):
        raise exc

    return ScriptedLM(policy)


@pytest.mark.parametrize("exc, status", [
    (KeyboardInterrupt(), "interrupted"),
    (SystemExit(2), "failed"),
    (GeneratorExit(), "failed"),
    (type("Custom", (BaseException,), {})("odd"), "failed"),
    (RuntimeError("provider down"), "failed"),
])
def test_every_run_ends_in_a_final_status_whatever_is_raised(tmp_path, exc, status):
    run = Run("t")
    agent = DeepAgent(lm=raising(exc), workspace=tmp_path)
    if isinstance(exc, Exception):
        agent.run("t", {}, run=run)
    else:
        with pytest.raises(type(exc)):
            agent.run("t", {}, run=run)
    assert run.status == status
    assert run.ended_at is not None
    assert type(exc).__name__ in (run.error or "") or str(exc) in (run.error or "")
    record = json.loads((tmp_path / ".deepagent" / "runs" / f"{run.id}.json").read_text())
    assert record["status"] == status


def test_a_run_whose_set_up_fails_still_ends(tmp_path):
    """A failure before the loop (a run hook raising BaseException) leaves no run `running` or `pending`."""
    from deepagent_magics import Capability

    def broken_hook(agent, run, lms):
        raise SystemExit("hook broke")

    run = Run("t")
    with pytest.raises(SystemExit):
        DeepAgent(lm=ScriptedLM([("x", "SUBMIT(result='x')")]), workspace=tmp_path,
                  extensions=[Capability("broken", on_run=broken_hook)]).run("t", {}, run=run)
    assert run.status == "failed" and run.ended_at is not None


# --------------------------------------------------------------------------- item 4: builtins shadowed
SHADOWS = {
    "print": "print = lambda *a, **k: None",
    "len": "def len(x):\n    return 0",
    "str": "str = int",
    "list": "list = tuple",
    "open and input": "open = None\ninput = lambda *a: 'agent'",  # IPython binds its own `open`: restored
    "sum and max": "sum = max = min",
    "range by import": "from itertools import count as range",
    "isinstance via globals()": "globals()['isinstance'] = lambda *a: True",
}


@pytest.mark.parametrize("case", list(SHADOWS))
def test_names_shadowing_builtins_are_removed_and_kept_on_the_run(ip, tmp_path, case):
    before = dict(ip.user_ns)  # IPython binds its own `open` there: the user's, restored
    run = hostile_run(SHADOWS[case] + "\nkept_name = 1", ip.user_ns, tmp_path)
    assert run.status == "finished", run.error
    shadowed = [name for name in ("print", "len", "str", "list", "open", "input", "sum", "max", "min", "range",
                                  "isinstance")
                if name in run.reverted]
    assert shadowed, run.reverted
    assert [name for name in shadowed if name not in before], "no builtin shadowed by a new name"
    for name in shadowed:
        if name in before:
            assert ip.user_ns[name] is before[name]
        else:
            assert name not in ip.user_ns
    assert ip.user_ns["kept_name"] == 1  # the agent's ordinary names stay
    ip.run_cell("printed = []\nprint('user print works', len([1, 2]), str(3), list('ab'), sum([1, 2]))")
    assert ip.user_ns["printed"] == []
    assert callable(ip.user_ns.get("open", open))


def test_a_users_own_shadow_is_not_taken_away(ip, tmp_path):
    """The user's own `print` (bound before the run) is the user's business: it stays theirs."""
    def my_print(*args, **kwargs):
        return None

    ip.user_ns["print"] = my_print
    run = hostile_run("print = 'agent'", ip.user_ns, tmp_path)
    assert ip.user_ns["print"] is my_print
    assert run.reverted["print"] == "agent"


# --------------------------------------------------------------------------- in real kernels
@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    box = {}
    cwd = tmp_path_factory.mktemp("kernel")

    def start():
        box["manager"], box["client"] = start_kernel(cwd)
        assert execute(box["client"], KERNEL_SETUP).status == "ok"

    def get():
        if "manager" not in box or not box["manager"].is_alive():
            stop()
            start()
        return box["manager"], box["client"]

    def stop():
        if "manager" in box:
            stop_kernel(box["manager"], box["client"])
            box.clear()

    yield get
    stop()


KERNEL_SETUP = """
%load_ext deepagent_magics
import dspy
from deepagent_magics.testing import ScriptedLM
%deepagent_config --workspace ws --quiet on --timeout 30
"""


IN_KERNEL = {
    "exit()": "exit()",
    "quit()": "quit()",
    "exit(keep_kernel=False)": "exit(keep_kernel=False)",
    "get_ipython().ask_exit()": "get_ipython().ask_exit()",
    "sys.exit(3)": "import sys\nsys.exit(3)",
    "raise SystemExit": "raise SystemExit",
    "os._exit(0)": "import os\nos._exit(0)",
    "os.abort()": "import os\nos.abort()",
    "os.kill(getpid, SIGKILL)": "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)",
    "os.kill(getpid, SIGTERM)": "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)",
    "os.kill(0, SIGTERM)": "import os, signal\nos.kill(0, signal.SIGTERM)",
    "os.kill(-pgid, SIGKILL)": "import os, signal\nos.kill(-os.getpgid(0), signal.SIGKILL)",
    # -1 reaches every process of the user: refused; played with a signal every process ignores.
    "os.kill(-1, SIGWINCH)": "import os, signal\nos.kill(-1, signal.SIGWINCH)",
    "os.killpg(own group, SIGKILL)": "import os, signal\nos.killpg(os.getpgid(0), signal.SIGKILL)",
    "os.killpg(0, SIGKILL)": "import os, signal\nos.killpg(0, signal.SIGKILL)",
    "signal.raise_signal(SIGTERM)": "import signal\nsignal.raise_signal(signal.SIGTERM)",
    "signal.raise_signal(SIGSEGV)": "import signal\nsignal.raise_signal(signal.SIGSEGV)",
    "pthread_kill(main, SIGKILL)": "import signal, threading\nsignal.pthread_kill(threading.main_thread().ident, signal.SIGKILL)",
    "os.kill from another thread": (
        "import os, signal, threading\nerrors = []\n"
        "def shoot():\n    try:\n        os.kill(os.getpid(), signal.SIGKILL)\n    except Exception as exc:\n"
        "        errors.append(exc)\n        raise\n"
        "t = threading.Thread(target=shoot)\nt.start()\nt.join()\nraise errors[0]"),
    "os._exit caught and retried": "import os\nfor _ in range(3):\n    try:\n        os._exit(1)\n    except Exception as exc:\n        last = exc\nraise last",
}


@pytest.mark.kernel
@pytest.mark.parametrize("case", list(IN_KERNEL))
def test_the_users_kernel_survives_exits_and_self_signals_in_agent_code(kernel, case):
    manager, client = kernel()
    assert execute(client, "precious = {'hours': 7}\nbefore_pid = __import__('os').getpid()").status == "ok"
    code = IN_KERNEL[case]
    setup = ("lm = ScriptedLM([('Misbehave.', " + repr(code) + "), "
             "('Carry on.', 'after = 1'), ('Done.', \"SUBMIT(result='done')\")])")
    assert execute(client, setup).status == "ok"
    cell = execute(client, "%%deepagent --lm lm --out answer\nmisbehave")
    time.sleep(0.3)  # an asked exit stops the kernel's loop 0.1 s after the cell
    assert manager.is_alive(), f"{case} killed the user's kernel"
    assert cell.status == "ok", cell.error
    assert not [p for p in cell.payload if p.get("source") == "ask_exit"]
    cell = execute(
        client,
        "import os\nrun = _deepagent_run\n"
        "print(run.status, answer, precious, os.getpid() == before_pid)\n"
        "print(run.steps[0].output.splitlines()[-1])",
    )
    assert cell.status == "ok", cell.error
    first, last_line = cell.stdout.splitlines()
    assert first == "finished done {'hours': 7} True"
    assert "may not" in last_line or "SystemExit" in last_line, last_line
    assert execute(client, "print(1 + 1)").stdout == "2\n"


# --------------------------------------------------------------------------- in a sub-agent's kernel
SUB_AGENT_EXITS = {
    "exit()": "exit()",
    "quit()": "quit()",
    "exit(keep_kernel=False)": "exit(keep_kernel=False)",
    "get_ipython().ask_exit()": "get_ipython().ask_exit()",
    "sys.exit(0)": "import sys\nsys.exit(0)",
}


@pytest.fixture(scope="module")
def pool():
    from deepagent_magics.interpreters.pool import KernelPool

    pool = KernelPool(size=1).warm()
    yield pool
    pool.stop()


@pytest.mark.kernel
def test_a_sub_agent_that_asks_its_kernel_to_exit_keeps_its_kernel_and_carries_on(pool, tmp_path):
    steps = [(f"Exit with {case}.", "import os\npids = globals().setdefault('pids', [])\npids.append(os.getpid())\n"
              + code) for case, code in SUB_AGENT_EXITS.items()]
    steps.append(("Report.", "import json\nSUBMIT(result=json.dumps(sorted(set(pids))))"))
    lm = ScriptedLM(scripts={
        "EXIT-ROOT": [("Delegate.", "r = delegate('EXIT-CHILD: try to leave')\nprint(r)"),
                      ("Done.", "SUBMIT(result=r)")],
        "EXIT-CHILD": steps,
    })
    run = DeepAgent(lm=lm, workspace=tmp_path, pool=pool, timeout=60).run("EXIT-ROOT: survive")
    assert run.status == "finished", run.error
    [child] = run.children
    assert child.status == "finished", child.error
    assert len(json.loads(run.result)) == 1  # one kernel served every step
    for step, case in zip(child.steps, SUB_AGENT_EXITS):
        assert step.output.startswith("[Error]"), (case, step.output)
        assert "may not" in step.output, (case, step.output)
