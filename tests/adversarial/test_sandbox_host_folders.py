"""Every host folder that matters is hidden from a sandboxed kernel, wherever the host's environment puts it
(issue 30, item 2).

With ``XDG_DATA_HOME=/data/xdg`` the notebook kernel's connection file
(``$XDG_DATA_HOME/jupyter/runtime/kernel-*.json``: its key and ports) was readable in the sandbox, and
with ``--subagent-network`` a sub-agent used it to bind a variable in the user's kernel. Here, for each
layout of the host's environment (``XDG_*``, ``JUPYTER_*``, ``JUPYTER_PLATFORM_DIRS=1``, ``IPYTHONDIR``, a
home elsewhere, the model cache, the sockets the environment names), secrets are planted where Jupyter,
IPython and this package put them, outside the home, ``/tmp`` and ``/run`` (which are hidden whole), and
a sub-agent's code in a real sandboxed kernel tries to read them, also ones written after its kernel
started. The issue's attack runs end to end from a root host and from an unprivileged one, with a real
user kernel and the network on.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import socket
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from deepagent_magics.interpreters.kernel import KernelInterpreter
from deepagent_magics.interpreters.pool import KernelPool, sandbox
from tests.adversarial.sandbox_hosts import HOSTS, make_host

pytestmark = pytest.mark.kernel

LAYOUT_VARIABLES = ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_RUNTIME_DIR", "XDG_CACHE_HOME", "JUPYTER_CONFIG_DIR",
                    "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR", "JUPYTER_PATH", "JUPYTER_CONFIG_PATH",
                    "JUPYTER_PLATFORM_DIRS", "JUPYTER_PREFER_ENV_PATH", "IPYTHONDIR", "DEEPAGENT_MODEL_CACHE",
                    "SSH_AUTH_SOCK", "DOCKER_HOST", "DBUS_SESSION_BUS_ADDRESS", "GNUPGHOME")


@pytest.fixture(autouse=True)
def _bubblewrap_runs_here():
    reason = sandbox.unavailable()
    if reason is not None:
        if os.environ.get("DEEPAGENT_SKIP_SANDBOX") == "1":
            pytest.skip(f"no sandbox here: {reason}")
        pytest.fail(f"bubblewrap cannot sandbox kernels here ({reason}): install it (apt-get install bubblewrap), "
                    "or DEEPAGENT_SKIP_SANDBOX=1 to skip these tests")


@pytest.fixture(scope="module")
def pool():
    pool = KernelPool(size=0)  # a kernel per test, started with the environment of that test
    yield pool
    pool.stop()


@pytest.fixture
def place(monkeypatch):
    """A folder on the host's disk, outside the home, /tmp and /run (which the sandbox hides whole), and an
    environment without any layout variable of the machine's."""
    for name in LAYOUT_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    folder = Path(tempfile.mkdtemp(prefix="deepagent-layout-", dir="/var/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def plant(path: Path | str, text: str = "SECRET") -> str:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return str(path)


def listen(path: Path) -> socket.socket:
    path.parent.mkdir(parents=True, exist_ok=True)
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen(1)
    return server


READ = """
import os, socket, stat
def look(path):
    try:
        if stat.S_ISCHR(os.stat(path).st_mode):
            return 'null'  # /dev/null in its place
        if os.path.isdir(path):
            return sorted(os.listdir(path)) or 'empty'
        if path.endswith('.sock') or path.endswith('/bus'):
            client = socket.socket(socket.AF_UNIX)
            client.settimeout(2)
            client.connect(path)
            return 'SECRET: connected'
        return open(path).read()
    except OSError as exc:
        return type(exc).__name__
report = {path: look(path) for path in PATHS}
"""


def attempt(pool, workspace: Path, paths: list[str], after_start=None) -> dict:
    """What a sub-agent's code sees at each path (``after_start`` runs on the host once its kernel started)."""
    workspace.mkdir(parents=True, exist_ok=True)
    interpreter = KernelInterpreter(pool=pool, cwd=str(workspace))
    try:
        interpreter.execute("pass")
        if after_start is not None:
            after_start()
        output = interpreter.execute(f"PATHS = {paths!r}\n" + READ + "import json\nprint(json.dumps(report))")
        return json.loads(output)
    finally:
        interpreter.shutdown()


def leaked(report: dict) -> dict:
    return {path: seen for path, seen in report.items() if "SECRET" in json.dumps(seen)}


def jupyter_paths() -> dict[str, str]:
    from jupyter_core import paths

    return {"config": paths.jupyter_config_dir(), "data": paths.jupyter_data_dir(),
            "runtime": paths.jupyter_runtime_dir()}


# --------------------------------------------------------------------------- one test per layout
def test_xdg_data_home_outside_the_home(pool, place, monkeypatch):
    """The issue's layout: the connection file, a server's token file and the host key under XDG_DATA_HOME."""
    monkeypatch.setenv("XDG_DATA_HOME", str(place / "xdg-data"))
    monkeypatch.delenv("DEEPAGENT_HOST_KEY")  # the key where host_key puts it by default
    runtime = Path(jupyter_paths()["runtime"])
    assert runtime == place / "xdg-data" / "jupyter" / "runtime"
    secrets = [plant(runtime / "kernel-1234.json", '{"key": "SECRET"}'),
               plant(runtime / "jpserver-99.json", '{"token": "SECRET"}'),
               plant(place / "xdg-data" / "jupyter" / "kernels" / "evil" / "kernel.json"),
               plant(place / "xdg-data" / "deepagent-magics" / "host.key")]
    assert leaked(attempt(pool, place / "ws", secrets)) == {}


def test_platform_dirs_and_xdg_config_home(pool, place, monkeypatch):
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(place / "xdg-config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(place / "xdg-data"))
    where = jupyter_paths()
    assert where["config"] == str(place / "xdg-config" / "jupyter")
    secrets = [plant(Path(where["config"]) / "jupyter_server_config.json", '{"token": "SECRET"}'),
               plant(Path(where["runtime"]) / "kernel-1.json"),
               plant(place / "xdg-config" / "ipython" / "profile_default" / "startup" / "00.py")]
    assert leaked(attempt(pool, place / "ws", secrets)) == {}


def test_xdg_runtime_dir_and_the_sockets_the_environment_names(pool, place, monkeypatch):
    runtime = place / "xdg-runtime"
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("SSH_AUTH_SOCK", str(place / "agent" / "ssh.sock"))
    monkeypatch.setenv("DOCKER_HOST", f"unix://{place / 'docker' / 'docker.sock'}")
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", f"unix:path={place / 'dbus' / 'bus'},guid=0")
    listeners = [listen(path) for path in (runtime / "gnupg.sock", place / "agent" / "ssh.sock",
                                           place / "docker" / "docker.sock", place / "dbus" / "bus")]
    try:
        secrets = [plant(runtime / "jupyter" / "kernel-1.json"), *[sock.getsockname() for sock in listeners]]
        assert leaked(attempt(pool, place / "ws", secrets)) == {}
    finally:
        for sock in listeners:
            sock.close()


def test_every_jupyter_variable_elsewhere(pool, place, monkeypatch):
    for name in ("JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR", "JUPYTER_PATH", "JUPYTER_CONFIG_PATH"):
        monkeypatch.setenv(name, str(place / name.lower()))
    secrets = [plant(place / "jupyter_config_dir" / "jupyter_server_config.json", '{"token": "SECRET"}'),
               plant(place / "jupyter_data_dir" / "secrets.json"),
               plant(place / "jupyter_runtime_dir" / "kernel-1.json"),
               plant(place / "jupyter_path" / "kernels" / "k" / "kernel.json"),
               plant(place / "jupyter_config_path" / "jupyter_notebook_config.json")]
    assert leaked(attempt(pool, place / "ws", secrets)) == {}


def test_ipython_folders_elsewhere(pool, place, monkeypatch):
    """IPYTHONDIR, and the old $XDG_CONFIG_HOME/ipython that IPython still reads when it is there."""
    monkeypatch.setenv("IPYTHONDIR", str(place / "ipython"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(place / "xdg-config"))
    secrets = [plant(place / "ipython" / "profile_default" / "startup" / "00-host.py", "SECRET = 1"),
               plant(place / "ipython" / "profile_default" / "history.sqlite"),
               plant(place / "xdg-config" / "ipython" / "profile_default" / "history.sqlite")]
    report = attempt(pool, place / "ws", secrets)
    assert leaked(report) == {}


def test_a_home_elsewhere_hides_it_and_the_home_the_password_database_gives(pool, place, monkeypatch):
    home = place / "home"
    monkeypatch.setenv("HOME", str(home))
    runtime = Path(jupyter_paths()["runtime"])
    assert runtime == home / ".local" / "share" / "jupyter" / "runtime"
    secrets = [plant(runtime / "kernel-1.json"), plant(home / ".jupyter" / "jupyter_server_config.json")]
    real_home = os.path.realpath(pwd.getpwuid(os.getuid()).pw_dir)
    report = attempt(pool, place / "ws", [*secrets, real_home])
    assert leaked(report) == {}
    # Of the real home, at most the folders on the way to the kernel's Python are shown again.
    seen = report.pop(real_home)
    runtime_paths = {os.path.realpath(p) for p in (sys.base_prefix, sys.prefix, *sys.path) if p}
    shown = [name for name in (seen if isinstance(seen, list) else [])
             if not any(p.startswith(os.path.join(real_home, name) + "/") or p == os.path.join(real_home, name)
                        for p in runtime_paths)]
    assert shown == [], seen


def test_the_model_cache_wherever_it_is(pool, place, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(place / "cache"))
    cached = plant(place / "cache" / "deepagent-magics" / "models" / "model.gguf", "SECRET weights")
    assert leaked(attempt(pool, place / "ws", [cached])) == {}
    monkeypatch.setenv("DEEPAGENT_MODEL_CACHE", str(place / "models"))
    cached = plant(place / "models" / "model.gguf", "SECRET weights")
    assert leaked(attempt(pool, place / "ws", [cached])) == {}


def test_a_servers_socket_listed_in_its_runtime_file(pool, place, monkeypatch):
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(place / "runtime"))
    server = listen(place / "srv" / "jupyter.sock")
    try:
        plant(place / "runtime" / "jpserver-7.json", json.dumps({"sock": server.getsockname(), "token": "SECRET"}))
        assert leaked(attempt(pool, place / "ws", [server.getsockname()])) == {}
    finally:
        server.close()


def test_secrets_written_after_the_kernel_started(pool, place, monkeypatch):
    """A connection file of a kernel the user starts later, and the host key made at the first signature."""
    monkeypatch.setenv("XDG_DATA_HOME", str(place / "xdg-data"))
    monkeypatch.setenv("DEEPAGENT_HOST_KEY", str(place / "keys" / "host.key"))
    (place / "keys").mkdir()
    later = [str(place / "xdg-data" / "jupyter" / "runtime" / "kernel-later.json"), str(place / "keys" / "host.key")]
    report = attempt(pool, place / "ws", later, after_start=lambda: [plant(path) for path in later])
    assert all(os.path.exists(path) for path in later)
    assert leaked(report) == {}


def test_a_workspace_inside_a_hidden_folder_is_still_the_kernels(pool, place, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(place / "xdg-data"))
    secret = plant(Path(jupyter_paths()["runtime"]) / "kernel-1.json")
    workspace = place / "xdg-data" / "jupyter" / "projects" / "ws"
    report = attempt(pool, workspace, [secret, str(workspace)])
    assert leaked(report) == {}
    assert report[str(workspace)] == [".deepagent", "skills"], report  # its own, made by the sandbox
    interpreter = KernelInterpreter(pool=pool, cwd=str(workspace))
    try:
        interpreter.execute("open('made-in-the-sandbox.txt', 'w').write('ok')")
    finally:
        interpreter.shutdown()
    assert (workspace / "made-in-the-sandbox.txt").read_text() == "ok"


# --------------------------------------------------------------------------- the attack of the issue, both hosts
START_USERS_KERNEL = """
import os, uuid
from jupyter_client.manager import KernelManager
from jupyter_core.paths import jupyter_runtime_dir
os.makedirs(jupyter_runtime_dir(), exist_ok=True)
users_kernel = KernelManager(kernel_name='python3',  # where a Jupyter server puts its kernels' connection files
                             connection_file=os.path.join(jupyter_runtime_dir(), f'kernel-{uuid.uuid4()}.json'))
users_kernel.start_kernel()
users_client = users_kernel.client()
users_client.start_channels()
users_client.wait_for_ready(timeout=60)
"""
CHECK_USERS_KERNEL = """
reply = users_client.execute_interactive("print('PWNED' in globals())", timeout=30, output_hook=lambda msg: seen.append(msg))
host_report = {'connection_file': users_kernel.connection_file,
               'bound': any(m['msg_type'] == 'stream' and 'True' in m['content']['text'] for m in seen)}
users_client.stop_channels()
users_kernel.shutdown_kernel(now=True)
"""
ATTACK = """
import glob, json
found = sorted(glob.glob(RUNTIME + '/kernel-*.json'))
report = {'found': found}
try:
    info = json.load(open(found[0]))
    report['read'] = 'SECRET: the key'
    from jupyter_client import BlockingKernelClient
    client = BlockingKernelClient()
    client.load_connection_info(info)
    client.start_channels()
    client.wait_for_ready(timeout=20)
    client.execute_interactive('PWNED = 1', timeout=20)
    report['ran'] = 'SECRET: ran code in the user kernel'
except Exception as exc:
    report['error'] = type(exc).__name__
"""


@pytest.mark.subprocess
@pytest.mark.parametrize("kind", HOSTS)
def test_with_the_network_a_sub_agent_cannot_use_the_users_kernel_connection_file(kind):
    host = make_host(kind)
    try:
        data = host.root / "xdg-data"  # outside the home, /tmp and /run
        data.mkdir()
        host.own(data)
        runtime = data / "jupyter" / "runtime"
        result = host.run(f"RUNTIME = {str(runtime)!r}\n" + ATTACK, env={"XDG_DATA_HOME": str(data)}, network=True,
                          before=START_USERS_KERNEL + "seen = []\n", after=CHECK_USERS_KERNEL)
    finally:
        host.close()
    assert result["host_report"]["connection_file"].startswith(str(runtime))  # it was there to be found
    assert result["host_report"]["bound"] is False
    assert leaked(result["report"]) == {} and result["report"]["found"] == [], result["report"]
    assert result["isolation"]["network"] is True


COMBINED = {  # every variable elsewhere at once; the host's temporary folder inside its runtime folder
    "XDG_DATA_HOME": "xdg-data", "XDG_CONFIG_HOME": "xdg-config", "XDG_RUNTIME_DIR": "xdg-runtime",
    "XDG_CACHE_HOME": "xdg-cache", "IPYTHONDIR": "ipython", "JUPYTER_PATH": "jupyter-path",
    "JUPYTER_CONFIG_PATH": "jupyter-config-path", "JUPYTER_PLATFORM_DIRS": None, "TMPDIR": "xdg-runtime/tmp",
}


@pytest.mark.subprocess
@pytest.mark.parametrize("kind", HOSTS)
def test_every_layout_at_once_from_each_host(kind):
    host = make_host(kind)
    try:
        env = {name: "1" if where is None else str(host.root / where) for name, where in COMBINED.items()}
        secrets = [plant(host.root / "xdg-data" / "jupyter" / "runtime" / "kernel-1.json"),
                   plant(host.root / "xdg-config" / "jupyter" / "jupyter_server_config.json"),
                   plant(host.root / "xdg-runtime" / "bus"),
                   plant(host.root / "xdg-cache" / "deepagent-magics" / "models" / "model.gguf"),
                   plant(host.root / "ipython" / "profile_default" / "startup" / "00.py"),
                   plant(host.root / "jupyter-path" / "kernels" / "k" / "kernel.json"),
                   plant(host.root / "jupyter-config-path" / "jupyter_server_config.json"),
                   plant(host.root / "xdg-data" / "deepagent-magics" / "host.key")]
        (host.root / "xdg-runtime" / "tmp").mkdir()
        for folder in ("xdg-data", "xdg-config", "xdg-runtime", "xdg-cache", "ipython", "jupyter-path",
                       "jupyter-config-path"):
            host.own(host.root / folder)
        result = host.run(f"PATHS = {secrets!r}\n" + textwrap.dedent(READ), env=env)
    finally:
        host.close()
    assert leaked(result["report"]) == {}, result["report"]


def test_a_root_host_hides_what_only_root_may_read_in_etc(pool, place):
    """Started by root, the kernel is uid 0 without a capability: root's own permission bits would still let it
    read /etc/shadow, SSH host keys or /etc/ssl/private."""
    if os.geteuid() != 0:
        pytest.skip("only a root host's sandbox is uid 0 to the files")
    root_only = []
    for folder, subfolders, files in os.walk("/etc"):
        root_only += [os.path.join(folder, name) for name in files
                      if os.path.isfile(os.path.join(folder, name)) and not os.path.islink(os.path.join(folder, name))
                      and not os.stat(os.path.join(folder, name)).st_mode & 0o004]
        root_only += [os.path.join(folder, name) for name in subfolders
                      if not os.stat(os.path.join(folder, name)).st_mode & 0o001]
    assert "/etc/shadow" in root_only
    report = attempt(pool, place / "ws", root_only)
    assert {path: seen for path, seen in report.items() if seen not in ("null", "empty")} == {}
