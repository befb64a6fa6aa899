"""A sub-agent runs in a sandbox (issue 21): it writes its workspace and nothing else.

Each attack runs as a sub-agent's code, in a real kernel from a real pool (through ``delegate``
where the run matters): it tries to write outside the workspace, to read the user's home (a fake
HOME in the test's folder, with a key, notes and an IPython startup file), to change the host's
state in ``.deepagent`` (and ``.git``, and a Python environment inside the workspace), to leave a
process behind by exiting on its own, and to connect to a listener on the host's 127.0.0.1.
Where bubblewrap cannot run (played by pointing the sandbox at a program that does not exist),
the run says so, the record and the displays mark the sub-agents, and the setting that requires
the sandbox refuses. Every test here fails with an unsandboxed kernel (``KernelPool(sandbox=None)``).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import socket
import tempfile
import textwrap
import time

import psutil
import pytest
from IPython.core.error import UsageError

from deepagent_magics import DeepAgent
from deepagent_magics.display.markup import not_sandboxed_line
from deepagent_magics.display.text import TextProgress
from deepagent_magics.interpreters.kernel import KernelInterpreter
from deepagent_magics.interpreters.pool import KernelPool, sandbox
from deepagent_magics.interpreters.pool.sandbox import SandboxPolicy
from deepagent_magics.testing import ScriptedLM

pytestmark = pytest.mark.kernel
# What the record says of every sandbox here besides its mounts (test_sandbox_privileges.py proves each).
HARDENED = {"capabilities": "none", "no_new_privileges": True, "user_namespace": True, "seccomp": True}


@pytest.fixture(autouse=True)
def _bubblewrap_runs_here():
    """Fail, saying how to fix it, where bubblewrap cannot run (DEEPAGENT_SKIP_SANDBOX=1: a named skip)."""
    reason = sandbox.unavailable()
    if reason is not None:
        if os.environ.get("DEEPAGENT_SKIP_SANDBOX") == "1":
            pytest.skip(f"no sandbox here: {reason}")
        pytest.fail(f"bubblewrap cannot sandbox kernels here ({reason}): install it (apt-get install bubblewrap; "
                    "make test does as root), or DEEPAGENT_SKIP_SANDBOX=1 to skip these tests")


@pytest.fixture(scope="module")
def pool():
    pool = KernelPool(size=0)  # each test's workspace is another one: a kernel is started for it
    yield pool
    pool.stop()


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A fake user home: a key, notes, an IPython startup file and a Jupyter folder."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE-KEY-d41d8cd9")
    (home / "notes.txt").write_text("my notes")
    startup = home / ".ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-host.py").write_text("HOST_STARTUP_RAN = True\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("IPYTHONDIR", raising=False)
    return home


def run_in_kernel(pool, workspace, code: str, prelude: str = "") -> dict:
    """Run ``code`` (which binds ``report``) as a sub-agent's REPL does; the report as JSON."""
    interpreter = KernelInterpreter(pool=pool, cwd=str(workspace))
    try:
        code = prelude + textwrap.dedent(code) + "\nimport json\nprint(json.dumps(report))"
        return json.loads(interpreter.execute(code))
    finally:
        interpreter.shutdown()


TRY_WRITE = """
def try_write(path):
    try:
        with open(path, 'w') as handle:
            handle.write('planted by a sub-agent')
        return 'written'
    except OSError as exc:
        return type(exc).__name__
"""


# --------------------------------------------------------------------------- files
def test_a_sub_agent_writes_its_workspace_and_nothing_else(pool, tmp_path, home):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    outside = tempfile.mkdtemp(prefix="deepagent-outside-", dir="/var/tmp")  # on the host's disk, not a tmpfs
    targets = {"beside": str(tmp_path / "beside.txt"), "elsewhere": os.path.join(outside, "planted.txt"),
               "home": str(home / "planted.txt")}
    lm = ScriptedLM(scripts={
        "ROOT": [("Delegate.", "print(delegate('CHILD: write everywhere'))"), ("Done.", "SUBMIT(result='ok')")],
        "CHILD": [("Write.", TRY_WRITE + f"report = {{name: try_write(path) for name, path in {targets!r}.items()}}\n"
                                         "report['workspace'] = try_write('mine.txt')\nSUBMIT(result=report)")],
    })
    try:
        run = DeepAgent(lm=lm, workspace=workspace, pool=pool, timeout=60).run("ROOT: go")
        assert run.status == "finished", run.error
        [child] = run.children
        assert child.status == "finished", child.error
        assert (workspace / "mine.txt").read_text() == "planted by a sub-agent"
        assert [name for name, path in targets.items() if os.path.exists(path)] == []
        assert child.config["sandbox"] == {"sandbox": "bubblewrap", "network": False, **HARDENED}  # the record says so
    finally:
        for name in os.listdir(outside):
            os.unlink(os.path.join(outside, name))
        os.rmdir(outside)


def test_a_sub_agent_cannot_see_the_users_home_or_ipython_startup(pool, tmp_path, home):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    report = run_in_kernel(pool, workspace, f"""
        import os
        home = {str(home)!r}
        report = {{'listing': sorted(os.listdir(home)) if os.path.isdir(home) else None,
                   'key': os.path.exists(os.path.join(home, '.ssh', 'id_ed25519')),
                   'notes': os.path.exists(os.path.join(home, 'notes.txt')),
                   'startup_ran': 'HOST_STARTUP_RAN' in globals(), 'HOME': os.environ['HOME']}}
    """)
    assert report["listing"] in ([], [".ipython"], [".ipython", ".local"]), report  # an empty home of its own
    assert not report["key"] and not report["notes"] and not report["startup_ran"], report


def test_a_workspace_that_holds_the_home_still_hides_the_homes_secrets(pool, home):
    report = run_in_kernel(pool, home, prelude=TRY_WRITE, code="""
        import os
        report = {'key': os.path.exists('.ssh/id_ed25519'), 'notes': open('notes.txt').read(),
                  'startup': os.path.exists('.ipython/profile_default/startup/00-host.py'),
                  'write': try_write('new.txt')}
    """)
    assert report == {"key": False, "notes": "my notes", "startup": False, "write": "written"}
    assert (home / ".ssh" / "id_ed25519").read_text() == "PRIVATE-KEY-d41d8cd9"


def test_host_state_git_skills_and_a_python_environment_in_the_workspace_are_read_only(pool, tmp_path, monkeypatch):
    workspace = tmp_path / "ws"
    record = workspace / ".deepagent" / "runs" / "r1.json"
    record.parent.mkdir(parents=True)
    record.write_text('{"status": "finished"}')
    (workspace / ".git" / "hooks").mkdir(parents=True)
    (workspace / "skills" / "csv").mkdir(parents=True)
    (workspace / "skills" / "csv" / "SKILL.md").write_text("# csv\nRead CSV files with pandas.")
    site = workspace / ".venv" / "site-packages"  # the host imports from here
    site.mkdir(parents=True)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), str(site)])))
    report = run_in_kernel(pool, workspace, prelude=TRY_WRITE, code="""
        import os
        def attempt(action):
            try:
                action()
                return 'done'
            except OSError as exc:
                return type(exc).__name__
        report = {
            'new record': try_write('.deepagent/runs/planted.json'),
            'overwrite': try_write('.deepagent/runs/r1.json'),
            'delete': attempt(lambda: os.remove('.deepagent/runs/r1.json')),
            'replace the folder': attempt(lambda: os.rename('.deepagent', 'moved')),
            'checkpoint': attempt(lambda: os.makedirs('.deepagent/checkpoints/default')),
            'git hook': try_write('.git/hooks/pre-commit'),
            'new skill': attempt(lambda: os.makedirs('skills/exfiltrate')),
            'changed skill': try_write('skills/csv/SKILL.md'),
            'module the host imports': try_write('.venv/site-packages/sitecustomize.py'),
            'workspace': try_write('fine.txt'),
        }
    """)
    assert report.pop("workspace") == "written"
    assert set(report.values()) <= {"OSError", "PermissionError"}, report  # EROFS, EBUSY for the mount
    assert record.read_text() == '{"status": "finished"}'
    assert sorted(os.listdir(record.parent)) == ["r1.json"] and not (workspace / "moved").exists()
    assert not (workspace / ".git" / "hooks" / "pre-commit").exists()
    assert sorted(os.listdir(workspace / "skills")) == ["csv"]
    assert (workspace / "skills" / "csv" / "SKILL.md").read_text() == "# csv\nRead CSV files with pandas."
    assert not (site / "sitecustomize.py").exists()


def test_a_workspace_without_skills_or_host_state_gets_neither_from_a_sub_agent(pool, tmp_path):
    """Missing, they would not be bound read-only: a sub-agent's code could make a skill the next root
    prompt lists, or plant host state. The sandbox makes them (empty) first."""
    workspace = tmp_path / "bare"
    workspace.mkdir()
    report = run_in_kernel(pool, workspace, prelude=TRY_WRITE, code="""
        import os
        report = {}
        for folder in ('skills/exfiltrate', '.deepagent/memory'):
            try:
                os.makedirs(folder)
                report[folder] = 'done'
            except OSError as exc:
                report[folder] = type(exc).__name__
        report['workspace'] = try_write('fine.txt')
    """)
    assert report.pop("workspace") == "written"
    assert set(report.values()) <= {"OSError", "PermissionError"}, report
    assert os.listdir(workspace / "skills") == [] and os.listdir(workspace / ".deepagent") == []


@pytest.mark.parametrize("where", ["DEEPAGENT_HOST_KEY", "XDG_DATA_HOME"])
def test_the_host_key_is_hidden_wherever_it_is_kept(pool, tmp_path, monkeypatch, where):
    """With the key a sub-agent could sign a planted checkpoint or record: not even outside the home."""
    folder = tempfile.mkdtemp(prefix="deepagent-data-", dir="/var/tmp")  # neither the home nor a private /tmp
    try:
        if where == "DEEPAGENT_HOST_KEY":
            key = os.path.join(folder, "host.key")
            monkeypatch.setenv("DEEPAGENT_HOST_KEY", key)
        else:
            os.mkdir(os.path.join(folder, "deepagent-magics"))
            key = os.path.join(folder, "deepagent-magics", "host.key")
            monkeypatch.setenv("XDG_DATA_HOME", folder)
            monkeypatch.delenv("DEEPAGENT_HOST_KEY", raising=False)
        with open(key, "w") as handle:
            handle.write("HOST-KEY-0123456789abcdef")
        report = run_in_kernel(pool, tmp_path, f"""
            try:
                report = open({key!r}).read()
            except OSError as exc:
                report = type(exc).__name__
        """)
        assert "HOST-KEY" not in report
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# --------------------------------------------------------------------------- processes
def marked(mark: str) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(["cmdline", "status"]):
        try:
            if mark in (process.info["cmdline"] or []) and process.info["status"] != psutil.STATUS_ZOMBIE:
                found.append(process)
        except psutil.Error:
            continue
    return found


def test_no_process_outlives_a_kernel_that_exits_by_itself(pool, tmp_path):
    """Item 4: a new session, a setsid double fork, then os._exit: the kernel's subreaper role ends with it."""
    mark = f"{random.randint(100, 199)}.{random.randint(10**8, 10**9)}"
    lm = ScriptedLM(scripts={
        "ROOT": [("Delegate.", "print(delegate('CHILD: leave something running'))"), ("Done.", "SUBMIT(result='ok')")],
        "CHILD": [("Escape and exit.", textwrap.dedent(f"""
            import os, subprocess
            subprocess.Popen(['sleep', {mark!r}], start_new_session=True)
            if os.fork() == 0:
                os.setsid()
                if os.fork() == 0:
                    os.execvp('sleep', ['sleep', {mark!r}])
                os._exit(0)
            import time; time.sleep(0.5)
            os._exit(1)
        """))],
    })
    try:
        run = DeepAgent(lm=lm, workspace=tmp_path, pool=pool, timeout=60).run("ROOT: go")
        assert run.status == "finished", run.error
        assert "kernel died" in run.steps[0].output
        deadline = time.monotonic() + 10
        while marked(mark) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert marked(mark) == []
    finally:
        for process in marked(mark):
            process.kill()


def _cmdline(process: psutil.Process) -> list[str]:
    try:
        return process.cmdline()
    except psutil.Error:  # gone meanwhile (the sandbox's probe)
        return []


STARTING_HOST = """
import sys, time
from deepagent_magics.interpreters.pool import KernelPool, lifecycle
register = lifecycle.register
def slow_register(kernel):  # the host is killed in the window after a sandbox starts, before it is registered
    time.sleep(600)
    return register(kernel)
lifecycle.register = slow_register
KernelPool(size=2, cwd=sys.argv[1]).warm()
time.sleep(600)
"""


def test_a_host_killed_while_its_sandboxes_start_leaves_none(tmp_path):
    """Before a kernel watches its lifeline, and before the keeper is told of it (here: never), it is already
    tied to its host."""
    import signal
    import subprocess
    import sys

    script = tmp_path / "host.py"
    script.write_text(STARTING_HOST)
    host = subprocess.Popen([sys.executable, str(script), str(tmp_path)])
    tree: list[psutil.Process] = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # a kernel running in its sandbox, which the host never registers
            if any("ipykernel_launcher" in " ".join(_cmdline(p)) for p in psutil.Process(host.pid).children(True)):
                break
            time.sleep(0.05)
        time.sleep(1.0)
        tree = psutil.Process(host.pid).children(recursive=True)
        assert any(_cmdline(p)[:1] == [shutil.which("bwrap")] for p in tree) and len(tree) >= 2, tree
        host.send_signal(signal.SIGKILL)
        host.wait(timeout=30)
        deadline = time.monotonic() + 15
        alive = tree
        while alive and time.monotonic() < deadline:
            time.sleep(0.1)
            alive = [p for p in alive if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        assert [" ".join(p.cmdline())[:60] for p in alive] == []
    finally:
        if host.poll() is None:
            host.kill()
        for process in tree:
            try:
                process.kill()
            except psutil.Error:
                pass


# --------------------------------------------------------------------------- network
@pytest.fixture
def listener():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    server.settimeout(0.2)
    yield server
    server.close()


CONNECT = """
import socket
try:
    socket.create_connection(('127.0.0.1', {port}), timeout=3).close()
    report = 'connected'
except OSError as exc:
    report = type(exc).__name__
"""


def accepted(server: socket.socket) -> bool:
    try:
        server.accept()[0].close()
        return True
    except socket.timeout:
        return False


def test_network_off_a_sub_agent_cannot_reach_a_listener_on_the_hosts_loopback(pool, tmp_path, listener):
    assert run_in_kernel(pool, tmp_path, CONNECT.format(port=listener.getsockname()[1])) != "connected"
    assert not accepted(listener)


def test_network_on_by_the_setting_it_can(tmp_path, listener):
    with KernelPool(size=0, sandbox=SandboxPolicy(network=True)) as networked:
        assert run_in_kernel(networked, tmp_path, CONNECT.format(port=listener.getsockname()[1])) == "connected"
        assert networked.isolation == {"sandbox": "bubblewrap", "network": True, **HARDENED}
    assert accepted(listener)


# --------------------------------------------------------------------------- where it cannot run
@pytest.fixture
def no_bwrap(monkeypatch):
    """This machine as one without bubblewrap."""
    monkeypatch.setattr(sandbox, "BWRAP", "deepagent-no-such-bwrap")
    sandbox.forget_probes()
    yield
    sandbox.forget_probes()


def test_without_bubblewrap_sub_agents_run_marked_not_sandboxed_and_the_run_says_so(tmp_path, no_bwrap):
    lm = ScriptedLM(scripts={
        "ROOT": [("Delegate.", "print(delegate('CHILD: hi'))"), ("Done.", "SUBMIT(result='ok')")],
        "CHILD": [("Hi.", "SUBMIT(result='hi')")],
    })
    lines: list[str] = []
    with KernelPool(size=0) as unsandboxed:
        agent = DeepAgent(lm=lm, workspace=tmp_path, pool=unsandboxed, timeout=60)
        from deepagent_magics.core.run.run import Run

        run = Run("ROOT: go")
        progress = TextProgress(run, stream=type("Lines", (), {"write": lines.append, "flush": lambda self: None})())
        agent.run(run.task, run=run)
        progress.close()
    assert run.status == "finished", run.error
    [child] = run.children
    assert child.config["sandbox"] == {"sandbox": "none", "reason": "deepagent-no-such-bwrap is not installed"}
    record = json.loads((tmp_path / ".deepagent" / "runs" / f"{run.id}.json").read_text())
    [recorded] = record["steps"][0]["children"]
    assert recorded["config"]["sandbox"]["sandbox"] == "none"
    assert "[not sandboxed]" in "".join(lines)
    line = not_sandboxed_line(run)
    assert line.startswith("deepagent: sub-agents ran NOT sandboxed (deepagent-no-such-bwrap is not installed)")
    assert "\n" not in line


def test_requiring_the_sandbox_refuses_where_it_cannot_run(tmp_path, no_bwrap, ip):
    lm = ScriptedLM(scripts={
        "ROOT": [("Delegate.", "print(delegate('CHILD: hi'))"), ("Done.", "SUBMIT(result='ok')")],
        "CHILD": [("Hi.", "SUBMIT(result='hi')")],
    })
    with KernelPool(size=0, sandbox=SandboxPolicy(required=True)) as strict:
        run = DeepAgent(lm=lm, workspace=tmp_path, pool=strict, timeout=60).run("ROOT: go")
    assert run.status == "finished" and run.children[0].status == "failed"
    assert "--require-sandbox" in run.steps[0].output and run.children[0].steps == []
    # In the notebook: one line, before anything runs.
    ip.user_ns["lm"] = lm
    with pytest.raises(UsageError, match="must run sandboxed"):
        ip.run_cell_magic("deepagent", "--lm lm --require-sandbox", "ROOT: go")
    assert "_deepagent_run" not in ip.user_ns


def test_a_gateways_kernels_are_recorded_as_confined_by_the_gateway():
    from deepagent_magics.interpreters.pool.gateway import Gateway

    pool = KernelPool(size=0, gateway=Gateway("http://127.0.0.1:9"))
    try:
        assert pool.isolation == {"sandbox": "gateway"}
    finally:
        pool.stop()
