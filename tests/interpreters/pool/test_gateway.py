"""Sub-agent kernels on a real Jupyter Kernel Gateway started here on 127.0.0.1 with token auth.

Delegation (single, batched, nested), the tool bridge, the per-sub-agent timeout (interrupt, then shut
down through the API), the pool warming ahead of need, the configuration (magic, CLI, environment), a
wrong URL or token as one clear line, and no kernel left on the gateway afterwards: every test lists
``/api/kernels`` at its end.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from IPython.core.error import UsageError

from deepagent_magics import DeepAgent
from deepagent_magics.interpreters.kernel import KernelInterpreter
from deepagent_magics.interpreters.pool import KernelPool
from deepagent_magics.interpreters.pool.gateway import Gateway, GatewayError, GatewayKernel
from deepagent_magics.interpreters.kernel import LimitExceeded
from deepagent_magics.interpreters.pool.limits import ResourceLimits
from deepagent_magics.interpreters.pool.sandbox import SandboxPolicy
from deepagent_magics.testing import ScriptedLM
from tests.servers import free_port, serving

pytestmark = pytest.mark.kernel
ROOT = Path(__file__).resolve().parents[3]
TOKEN = "gw-test-token-7f3a"


@pytest.fixture(scope="module")
def gateway_server(tmp_path_factory):
    """A real `jupyter kernelgateway` with token auth and kernel listing on, in a temp runtime dir."""
    home = tmp_path_factory.mktemp("gateway")
    port = free_port()
    env = dict(os.environ, PYTHONPATH=str(ROOT), JUPYTER_RUNTIME_DIR=str(home / "runtime"),
               JUPYTER_DATA_DIR=str(home / "data"), JUPYTER_CONFIG_DIR=str(home / "config"))
    env.pop("JUPYTER_GATEWAY_URL", None)
    url = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        try:
            Gateway(url, TOKEN).check()
            return True
        except GatewayError:
            return False

    with serving([sys.executable, "-m", "jupyter", "kernelgateway", "--KernelGatewayApp.ip=127.0.0.1",
                  f"--KernelGatewayApp.port={port}", f"--KernelGatewayApp.auth_token={TOKEN}",
                  "--JupyterWebsocketPersonality.list_kernels=True"],
                 cwd=home, env=env, log=home / "gateway.log", ready=ready, timeout=60) as process:
        yield {"url": url, "process": process, "home": home}


@pytest.fixture
def gateway(gateway_server):
    gateway = Gateway(gateway_server["url"], TOKEN)
    yield gateway
    deadline = time.monotonic() + 10
    while gateway.list_kernels() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert gateway.list_kernels() == [], "a kernel was left on the gateway"


def gateway_children(server) -> set[int]:
    return {child.pid for child in psutil.Process(server["process"].pid).children(recursive=True)}


# --------------------------------------------------------------------------- the kernel itself
def test_code_and_host_tools_run_in_a_gateway_kernel_started_through_the_api(gateway, gateway_server):
    pool = KernelPool(0, gateway=gateway)
    interpreter = KernelInterpreter(pool=pool, tools={"double": lambda x: 2 * x}, timeout=30)
    try:
        output = interpreter.execute("import os\nx = double(21)\nprint('x is', x)\nos.getpid()")
        assert "x is 42" in output
        pid = int(output.splitlines()[-1])
        assert pid in gateway_children(gateway_server)  # the gateway started it, not this process
        assert isinstance(interpreter.kernel, GatewayKernel)
        assert [k["id"] for k in gateway.list_kernels()] == [interpreter.kernel.kernel_id]
        assert interpreter.execute("print(x + 1)") == "43"  # state persists between steps
    finally:
        interpreter.shutdown()
        pool.stop()


def test_a_code_block_past_its_time_is_interrupted_through_the_api_and_the_kernel_survives(gateway):
    pool = KernelPool(0, gateway=gateway)
    interpreter = KernelInterpreter(pool=pool, timeout=2)
    try:
        interpreter.execute("kept = 'before'")
        started = time.monotonic()
        with pytest.raises(Exception, match="TimeoutError"):
            interpreter.execute("import time\nwhile True: time.sleep(0.1)")
        assert time.monotonic() - started < 20
        assert interpreter.execute("print(kept)") == "before"
    finally:
        interpreter.shutdown()
        pool.stop()


def test_the_pool_warms_gateway_kernels_ahead_of_need_and_stop_shuts_them_all_down(gateway):
    pool = KernelPool(2, gateway=gateway).warm()
    try:
        assert pool.wait_ready(2, timeout=60)
        assert len(gateway.list_kernels()) == 2
        kernel = pool.take()
        assert kernel.alive()
        pool.release(kernel)
    finally:
        pool.stop()


# --------------------------------------------------------------------------- delegation
def test_delegation_batched_and_nested_runs_through_the_gateway_with_tools_on_the_host(gateway, gateway_server,
                                                                                     tmp_path):
    lm = ScriptedLM(scripts={
        "GW-ROOT": [("Fan out.", "rs = delegate_batched(['GW-A: first', 'GW-B: second'])\n"
                                 "deep = delegate('GW-NEST: go down')\nSUBMIT(result=' | '.join(rs + [deep]))")],
        "GW-A": [("Write.", "write_file('a.txt', 'written by A')\nSUBMIT(result='A done')")],
        "GW-B": [("Read.", "SUBMIT(result='B saw ' + str(len(ls('.'))))")],
        "GW-NEST": [("Down.", "r = delegate('GW-LEAF: leaf')\nSUBMIT(result='nest<' + r + '>')")],
        "GW-LEAF": [("Leaf.", "import os\nSUBMIT(result='leaf parent ' + str(os.getppid()))")],
    })
    pool = KernelPool(1, gateway=gateway).warm()
    try:
        run = DeepAgent(lm=lm, workspace=tmp_path, pool=pool, max_depth=2, timeout=60).run("GW-ROOT: go")
    finally:
        pool.stop()
    assert run.status == "finished", run.error
    parts = run.result.split(" | ")
    assert parts[0] == "A done" and parts[1].startswith("B saw ")
    assert parts[2] == f"nest<leaf parent {gateway_server['process'].pid}>"  # the leaf's kernel: the gateway's
    assert (tmp_path / "a.txt").read_text() == "written by A"  # the file tool ran on the host
    assert len(run.children) == 3 and all(child.status == "finished" for child in run.children)


def test_a_traced_sub_agent_on_the_gateway_is_told_its_steps_place_in_the_trace(gateway, tmp_path):
    from tests.tracing.captured import Captured

    captured = Captured()
    lm = ScriptedLM(scripts={"GW-TRACED": [("Ask.", "r = delegate('GW-TOLD: where')\nSUBMIT(result=r)")],
                             "GW-TOLD": [("Where.", "import os\nSUBMIT(result=os.environ.get('TRACEPARENT'))")]})
    pool = KernelPool(1, gateway=gateway).warm()
    try:
        run = DeepAgent(lm=lm, workspace=tmp_path, pool=pool, timeout=60, extensions=[captured.tracing]).run(
            "GW-TRACED: go")
    finally:
        pool.stop()
    assert run.status == "finished", run.error
    child = next(s for s in captured.named("invoke_agent deepagent") if s.attributes["deepagent.run.depth"] == 1)
    assert captured.parent(child).name == "execute_tool delegate"
    step = next(s.context for s in captured.children(child) if s.name == "step")
    assert run.result == f"00-{step.trace_id:032x}-{step.span_id:016x}-{step.trace_flags:02x}"  # across the gateway


def test_a_gateway_kernel_sets_the_limits_it_can_on_itself_and_a_hit_is_one_line(gateway):
    """The rlimits a process may set on itself hold in a gateway's kernel too; processes, the tree's memory
    and the disk are the gateway's to limit, and the record says so."""
    limits = ResourceLimits(open_files=128, file_size=8, cpu_time=900, memory=1024)
    pool = KernelPool(0, gateway=gateway, sandbox=SandboxPolicy(limits=limits))
    interpreter = KernelInterpreter(pool=pool, timeout=30)
    try:
        held = json.loads(interpreter.execute(
            "import json, resource as r\nprint(json.dumps([r.getrlimit(getattr(r, 'RLIMIT_' + n))[0] for n in "
            "('NOFILE', 'FSIZE', 'CPU', 'DATA', 'CORE')]))"))
        assert held == [128, 8 << 20, 900, 1024 << 20, 0]
        assert interpreter.kernel.limits.record["processes"]["by"] == "not held"
        assert interpreter.kernel.limits.record["disk"]["by"] == "not held"
        with pytest.raises(LimitExceeded) as raised:
            interpreter.execute("import os\nkept = [open(os.devnull) for _ in range(1000)]")
        assert str(raised.value) == ("the sub-agent was stopped: it tried to have more than 128 files open at once "
                                     "(limit --subagent-open-files, held by rlimit)")
    finally:
        interpreter.shutdown()
        pool.stop()


def test_a_remote_sub_agent_is_told_its_disk_is_not_the_workspace_and_uses_the_file_tools(gateway, tmp_path):
    (tmp_path / "data.txt").write_text("host data")

    def child(request):
        told = "its current directory and disk are not the workspace" in request.system
        local_claim = "The current directory is the shared workspace" in request.system
        return ("Read through the tool.", f"SUBMIT(result=str(({told}, {local_claim}, read_file('data.txt'))))")

    lm = ScriptedLM(scripts={"TOLD-ROOT": [("Go.", "r = delegate('TOLD-CHILD: read data.txt')\nSUBMIT(result=r)")],
                             "TOLD-CHILD": child})
    pool = KernelPool(0, gateway=gateway)
    try:
        run = DeepAgent(lm=lm, workspace=tmp_path, pool=pool, timeout=60).run("TOLD-ROOT: go")
    finally:
        pool.stop()
    assert run.status == "finished", run.error
    assert run.result.startswith("(True, False, ") and "host data" in run.result


def test_a_workspace_path_missing_on_the_kernels_disk_does_not_break_its_steps(gateway):
    pool = KernelPool(0, gateway=gateway)
    interpreter = KernelInterpreter(pool=pool, cwd="/no/such/host/workspace", timeout=30)
    try:
        assert interpreter.execute("print('still runs')") == "still runs"
    finally:
        interpreter.shutdown()
        pool.stop()


def test_a_sub_agent_over_its_time_is_stopped_and_its_gateway_kernel_shut_down(gateway, tmp_path):
    lm = ScriptedLM(scripts={
        "SLOW-ROOT": [("Delegate.", "r = delegate('SLOW-CHILD: loop')\nSUBMIT(result=r)")],
        "SLOW-CHILD": [("Loop.", "import time\nwhile True: time.sleep(0.1)")],
    })
    pool = KernelPool(0, gateway=gateway)
    started = time.monotonic()
    try:
        run = DeepAgent(lm=lm, workspace=tmp_path, pool=pool, subagent_timeout=3, timeout=60).run("SLOW-ROOT: go")
    finally:
        pool.stop()
    assert run.status == "finished", run.error
    assert run.result.startswith("Error") and "3" in run.result
    assert time.monotonic() - started < 45


def test_kernels_on_the_gateway_are_shut_down_when_the_host_exits(gateway):
    code = (f"from deepagent_magics.interpreters.pool import KernelPool\n"
            f"from deepagent_magics.interpreters.pool.gateway import Gateway\n"
            f"pool = KernelPool(2, gateway=Gateway({gateway.url!r}, {TOKEN!r})).warm()\n"
            f"assert pool.wait_ready(2, timeout=60)\nkernel = pool.take()\nprint(len(Gateway({gateway.url!r}, {TOKEN!r}).list_kernels()))\n")
    done = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=str(ROOT)),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "2"  # two were running when the host exited without stopping its pool


def test_kernels_a_killed_host_left_are_shut_down_by_the_next_host(gateway):
    code = (f"import os, signal\n"
            f"from deepagent_magics.interpreters.pool import KernelPool\n"
            f"from deepagent_magics.interpreters.pool.gateway import Gateway\n"
            f"pool = KernelPool(1, gateway=Gateway({gateway.url!r}, {TOKEN!r})).warm()\n"
            f"assert pool.wait_ready(1, timeout=60)\nos.kill(os.getpid(), signal.SIGKILL)\n")
    done = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=str(ROOT)),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == -9
    left = [kernel["id"] for kernel in gateway.list_kernels()]
    assert len(left) == 1  # no exit handler ran
    from deepagent_magics.interpreters.pool import gateway_leftovers

    gateway_leftovers._swept.discard(gateway.url)  # this test process swept once already
    assert gateway.cleanup() == left


# --------------------------------------------------------------------------- wrong settings
def test_a_wrong_token_or_url_is_one_clear_line(gateway_server):
    with pytest.raises(GatewayError, match="refused the token") as wrong:
        Gateway(gateway_server["url"], "not-the-token").check()
    assert len(str(wrong.value).splitlines()) == 1
    with pytest.raises(GatewayError, match="cannot reach the gateway") as unreachable:
        Gateway(f"http://127.0.0.1:{free_port()}", TOKEN).check()
    assert len(str(unreachable.value).splitlines()) == 1
    with pytest.raises(GatewayError, match="not an http"):
        Gateway("ftp://example", TOKEN)
    with pytest.raises(GatewayError, match="kernel 'no-such-spec'|HTTP"):
        KernelPool(0, gateway=Gateway(gateway_server["url"], TOKEN), kernel_name="no-such-spec").take()


def test_the_magic_checks_the_gateway_when_it_is_set_and_never_prints_the_token(ip, gateway_server, gateway):
    with pytest.raises(UsageError, match="refused the token"):
        ip.run_line_magic("deepagent_config", f"--gateway-url {gateway_server['url']} --gateway-token wrong")
    with pytest.raises(UsageError, match="cannot reach"):
        ip.run_line_magic("deepagent_config", f"--gateway-url http://127.0.0.1:{free_port()} --gateway-token x")
    magics = ip.magics_manager.registry["DeepAgentMagics"]
    assert magics.gateway_url is None  # nothing was set by the failures
    ip.run_line_magic("deepagent_config", f"--gateway-url {gateway_server['url']} --gateway-token {TOKEN}")
    try:
        assert magics.gateway_url == gateway_server["url"]
        assert TOKEN not in magics.describe_config()
        lm = ScriptedLM(scripts={"MAGIC-ROOT": [("Go.", "r = delegate('MAGIC-CHILD: pid')\nSUBMIT(result=r)")],
                                 "MAGIC-CHILD": [("Pid.", "import os\nSUBMIT(result=str(os.getppid()))")]})
        ip.user_ns["gw_lm"] = lm
        ip.run_line_magic("deepagent_config", "--pool-size 0")
        ip.run_cell_magic("deepagent", "--lm gw_lm --out child_parent", "MAGIC-ROOT: go")
        assert int(ip.user_ns["child_parent"]) == gateway_server["process"].pid  # the gateway started it
    finally:
        ip.run_line_magic("deepagent_config", "--gateway-url off")
        from deepagent_magics.interpreters.pool import stop_default_pool

        stop_default_pool()


def test_the_command_line_runs_sub_agents_on_the_gateway_from_the_environment(gateway_server, gateway, tmp_path):
    steps = {"scripts": {"": [["Go", "r = delegate('CLI-GW-CHILD: pid')\nSUBMIT(result=r)"]],
                         "CLI-GW-CHILD": [["Pid", "import os\nSUBMIT(result=str(os.getppid()))"]]}}
    (tmp_path / "s.json").write_text(json.dumps(steps))
    env = dict(os.environ, PYTHONPATH=str(ROOT), JUPYTER_GATEWAY_URL=gateway_server["url"],
               JUPYTER_GATEWAY_AUTH_TOKEN=TOKEN, DSPY_CACHEDIR=str(tmp_path / "cache"))
    done = subprocess.run([sys.executable, "-m", "deepagent_magics", "run", "go", "--lm", "scripted:s.json",
                           "--quiet"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) == gateway_server["process"].pid  # the sub-agent's kernel is the gateway's child
    wrong = subprocess.run([sys.executable, "-m", "deepagent_magics", "run", "go", "--lm", "scripted:s.json",
                            "--gateway-token", "wrong"], cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=120)
    assert wrong.returncode == 2 and wrong.stdout == ""
    assert wrong.stderr.strip().splitlines() == [wrong.stderr.strip()] and "refused the token" in wrong.stderr


# --------------------------------------------------------------------------- the stop button
INTERRUPT_HOST = """
import json, sys
from deepagent_magics import DeepAgent
from deepagent_magics.core.run.run import Run
from deepagent_magics.interpreters.pool import KernelPool
from deepagent_magics.interpreters.pool.gateway import Gateway
from deepagent_magics.testing import ScriptedLM

gateway = Gateway(sys.argv[2], sys.argv[3])
pool = KernelPool(0, gateway=gateway)
hang = [("Hang.", "import os, time\\nopen(f'kernel-{os.getpid()}.pid', 'w').close()\\nwhile True:\\n    time.sleep(0.05)")]
lm = ScriptedLM(scripts={"STOP-ROOT": [("Fan out.", "rs = delegate_batched(['STOP-A: wait', 'STOP-B: wait'])")],
                         "STOP-A": hang, "STOP-B": hang})
run = Run("STOP-ROOT: fan out and wait")
try:
    DeepAgent(lm=lm, workspace=sys.argv[1], pool=pool, max_parallel=2, timeout=600).run(run.task, run=run)
    outcome = "returned"
except KeyboardInterrupt:
    outcome = "KeyboardInterrupt"
print(json.dumps({"outcome": outcome, "status": run.status, "on_gateway": len(gateway.list_kernels()),
                  "children": [c.status for c in run.children]}), flush=True)
"""


def test_the_stop_button_shuts_down_every_sub_agent_kernel_on_the_gateway(gateway, tmp_path):
    import signal

    script = tmp_path / "host.py"
    script.write_text(INTERRUPT_HOST)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    host = subprocess.Popen([sys.executable, str(script), str(workspace), gateway.url, TOKEN],
                            env=dict(os.environ, PYTHONPATH=str(ROOT)), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while len(list(workspace.glob("kernel-*.pid"))) < 2 and time.monotonic() < deadline:
            assert host.poll() is None, host.stderr.read()
            time.sleep(0.1)
        assert len(gateway.list_kernels()) == 2
        host.send_signal(signal.SIGINT)
        out, err = host.communicate(timeout=60)
    finally:
        if host.poll() is None:
            host.kill()
    report = json.loads(out.strip().splitlines()[-1])
    assert report["outcome"] == "KeyboardInterrupt" and report["status"] == "interrupted", err
    assert report["children"] == ["interrupted", "interrupted"]
    assert report["on_gateway"] == 0  # shut down by the interrupt, before the host's exit handler
