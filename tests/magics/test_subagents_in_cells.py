"""%%deepagent with sub-agents, end to end in a real InteractiveShell, kernels from the default pool."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time

import psutil
import pytest
from tests.kernels import execute, started_kernel

from deepagent_magics.interpreters.pool import default_pool, stop_default_pool
from deepagent_magics.testing import ScriptedLM

pytestmark = pytest.mark.kernel


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


@pytest.fixture
def shell(ip):
    ip.run_line_magic("deepagent_config", "--pool-size 1")
    yield ip
    stop_default_pool()


def test_a_cell_whose_agent_delegates_gets_the_childrens_results_nested_in_its_run(shell, workspace):
    shell.user_ns["lm"] = ScriptedLM(scripts={
        "MAGIC-ROOT": [
            ("One child.", "one = delegate('MAGIC-ONE: count', context='three words here')\nprint(one)"),
            ("Three more.", "rest = delegate_batched(['MAGIC-TWO: a', 'MAGIC-THREE: b', 'MAGIC-FOUR: c'])\nprint(rest)"),
            ("Done.", "import json\nSUBMIT(result=json.dumps([one] + rest))"),
        ],
        "MAGIC-ONE": [("Count.", "SUBMIT(result=str(len(context.split())))")],
        "MAGIC-TWO": [("Answer.", "import os\nSUBMIT(result=f'two from {os.getpid()}')")],
        "MAGIC-THREE": [("Answer.", "SUBMIT(result='three')")],
        "MAGIC-FOUR": [("Answer.", "SUBMIT(result='four')")],
    })
    result = shell.run_cell("%%deepagent --lm lm --out answers --max-subagents 3\nMAGIC-ROOT: count, then fan out")
    result.raise_error()

    answers = json.loads(shell.user_ns["answers"])
    assert answers[0] == "3"
    assert answers[1].startswith("two from ") and answers[2] == "three"
    assert answers[3].startswith("Error: the sub-agent budget of this run is used up (3 started)")  # --max-subagents
    run = shell.user_ns["_deepagent_run"]
    assert [len(step.children) for step in run.steps] == [1, 2, 0]
    assert [c.task for c in run.children] == ["MAGIC-ONE: count", "MAGIC-TWO: a", "MAGIC-THREE: b"]
    assert all(c.status == "finished" and c.depth == 1 and c.steps for c in run.children)
    assert run.config["max_subagents"] == 3 and run.children[0].config["max_iters"] == 10
    assert "one" in shell.user_ns and "rest" in shell.user_ns  # the root's REPL is the notebook
    assert default_pool().size == 1


def test_max_depth_zero_turns_delegation_off(shell):
    shell.user_ns["lm"] = ScriptedLM([("Try.", "SUBMIT(result=delegate('NOPE: anything'))")])
    shell.run_line_magic("deepagent_config", "--max-depth 0")
    shell.run_cell("%%deepagent --lm lm --out refused\ntry to delegate").raise_error()
    assert shell.user_ns["refused"].startswith("Error: delegation depth limit reached")
    assert shell.user_ns["_deepagent_run"].children == []


@pytest.mark.parametrize("line", [
    "%%deepagent --max-depth -1",
    "%%deepagent --max-subagents 0",
    "%%deepagent --subagent-timeout 0",
    "%%deepagent --max-parallel -2",
    "%%deepagent --subagent-max-iters 0",
])
def test_bad_limits_on_the_cell_are_one_line_usage_errors(shell, line):
    shell.user_ns["lm"] = ScriptedLM([("Done.", "SUBMIT(result='no')")])
    result = shell.run_cell(f"{line} --lm lm\ntask")
    assert type(result.error_in_exec).__name__ == "UsageError"
    assert "\n" not in str(result.error_in_exec)


@pytest.mark.parametrize("line", ["--pool-size -1", "--kernel-name no-such-kernel", "--max-parallel 0"])
def test_bad_limits_in_the_config_are_usage_errors(shell, line):
    result = shell.run_cell(f"%deepagent_config {line}")
    assert type(result.error_in_exec).__name__ == "UsageError"


UNLOAD_HOST = """
import json, os
from IPython.core.interactiveshell import InteractiveShell
from deepagent_magics.interpreters.pool import default_pool
from deepagent_magics.testing import ScriptedLM

shell = InteractiveShell.instance()
shell.run_line_magic("load_ext", "deepagent_magics")
shell.run_line_magic("deepagent_config", "--pool-size 2 --quiet on --workspace ws")
shell.user_ns["lm"] = ScriptedLM([("Done.", "SUBMIT(result='ok')")])
shell.run_cell("%%deepagent --lm lm\\nanything").raise_error()   # the cell warms the pool
pool = default_pool()
assert pool.wait_ready(2, timeout=120)
pids = pool.pids()
shell.run_line_magic("unload_ext", "deepagent_magics")
alive = []
for pid in pids:
    try:
        os.kill(pid, 0)
        alive.append(pid)
    except ProcessLookupError:
        pass
print(json.dumps({"pids": pids, "closed": pool.closed, "alive": alive}), flush=True)
os._exit(0)  # no exit handlers: only the unload can have stopped the kernels
"""


def test_the_pool_warms_with_the_first_cell_and_stops_when_the_extension_unloads(tmp_path):
    script = tmp_path / "host.py"
    script.write_text(textwrap.dedent(UNLOAD_HOST))
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=180)
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(report["pids"]) == 2, done.stderr
    assert report["closed"] and report["alive"] == []


KERNEL_SETUP = """
%load_ext deepagent_magics
from deepagent_magics.testing import ScriptedLM
from deepagent_magics.interpreters.pool import KernelPool
_take = KernelPool.take
def _recording_take(self, *args):  # each kernel's host pids (in a sandbox, os.getpid() in the kernel is 1)
    kernel = _take(self, *args)
    open(f"host-{kernel.pid}-{kernel.signal_group or 0}.pids", "w").close()
    return kernel
KernelPool.take = _recording_take
hang = [("Hang.", "import os, time, uuid\\nopen(f'kernel-{uuid.uuid4().hex}.pid', 'w').close()\\nwhile True:\\n    time.sleep(0.05)")]
lm = ScriptedLM(scripts={
    "STOP-ROOT": [("Fan out.", "rs = delegate_batched(['HANG-A: wait', 'HANG-B: wait'])")],
    "HANG-A": hang, "HANG-B": hang,
})
%deepagent_config --workspace ws --quiet on --pool-size 2
"""


def _execute(client, code, timeout=120):
    """Run code in the kernel; (reply status, ename, stdout)."""
    cell = execute(client, code, timeout)
    return cell.status, cell.reply.get("ename"), cell.streams


def test_the_stop_button_during_delegate_batched_stops_every_sub_agent_kernel(tmp_path):
    """In a real notebook kernel: interrupting it while sub-agents run kills their kernels,
    keeps the run and its trajectory, and the cell ends with KeyboardInterrupt."""
    with started_kernel(tmp_path) as (manager, client):
        assert _execute(client, KERNEL_SETUP)[0] == "ok"
        client.execute("%%deepagent --lm lm\nSTOP-ROOT: fan out and wait")
        deadline = time.monotonic() + 120
        while len(list((tmp_path / "ws").glob("kernel-*.pid"))) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(list((tmp_path / "ws").glob("kernel-*.pid"))) == 2
        kernels = [int(pid) for p in tmp_path.glob("host-*.pids") for pid in p.stem.split("-")[1:] if pid != "0"]
        assert len(kernels) in (2, 4)  # bwrap and the kernel in it, or the kernel only
        manager.interrupt_kernel()  # the notebook's stop button
        reply = client.get_shell_msg(timeout=120)["content"]
        assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt"
        assert all(gone(pid) for pid in kernels)
        status, _, out = _execute(client, "run = _deepagent_run\n"
                                          "print(run.status, [c.status for c in run.children], run.steps[0].code)")
        assert status == "ok"
        assert out.startswith("interrupted ['interrupted', 'interrupted'] rs = delegate_batched(")
