"""interpreters/pool/host_folders.py: every place the host keeps something a sub-agent could use, found where it is.

That a sandboxed kernel cannot read them is checked with bwrap in ``tests/adversarial/test_sandbox.py``.
"""

from __future__ import annotations

import json
import os
import socket
import stat

import pytest

from deepagent_magics.interpreters.pool import host_folders
from deepagent_magics.interpreters.pool.host_folders import secrets

PLACES = ("JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR", "JUPYTER_PATH", "JUPYTER_CONFIG_PATH",
          "JUPYTER_PLATFORM_DIRS", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_RUNTIME_DIR", "IPYTHONDIR",
          "SSH_AUTH_SOCK", "GNUPGHOME", "DBUS_SESSION_BUS_ADDRESS", "DOCKER_HOST", "DEEPAGENT_HOST_KEY")


@pytest.fixture
def host(tmp_path, monkeypatch):
    """A host whose home and environment are the test's own (nothing of the machine's)."""
    for name in PLACES:
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("DEEPAGENT_MODEL_CACHE", str(tmp_path / "models"))
    return tmp_path


def real(path) -> str:
    return os.path.realpath(path)


def test_jupyters_runtime_folder_is_hidden_even_before_it_exists(host):
    found = secrets(str(host / "home"))
    runtime = host / "xdg-data" / "jupyter" / "runtime"
    assert real(runtime) in found
    assert stat.S_IMODE(runtime.stat().st_mode) == 0o700  # made as Jupyter makes it: a later connection file hidden


def test_jupyters_folders_are_found_where_the_environment_moves_them(host, monkeypatch):
    config, data = host / "jconf", host / "jdata"
    config.mkdir()
    data.mkdir()
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(config))
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(data))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(host / "jrun"))
    found = secrets(str(host / "home"))
    assert {real(config), real(data), real(host / "jrun")} <= set(found)


def test_ipythons_folders_of_every_layout(host, monkeypatch):
    (host / "ipy").mkdir()
    (host / "home" / ".ipython").mkdir()
    (host / "xdg-config" / "ipython").mkdir(parents=True)
    monkeypatch.setenv("IPYTHONDIR", str(host / "ipy"))
    found = secrets(str(host / "home"))
    assert {real(host / "ipy"), real(host / "home" / ".ipython"), real(host / "xdg-config" / "ipython")} <= set(found)


def test_the_sockets_jupyter_servers_listen_on(host, monkeypatch):
    runtime = host / "jrun"
    runtime.mkdir()
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(runtime))
    sock = host / "server.sock"
    with socket.socket(socket.AF_UNIX) as listening:
        listening.bind(str(sock))
        (runtime / "jpserver-123.json").write_text(json.dumps({"sock": str(sock), "token": "t"}))
        (runtime / "jpserver-456.json").write_text("{not json")
        assert real(sock) in secrets(str(host / "home"))


def test_sockets_and_folders_the_environment_names(host, monkeypatch):
    for name in ("agent.sock", "bus", "docker.sock"):
        (host / name).touch()
    for name in ("run", "gnupg"):
        (host / name).mkdir()
    monkeypatch.setenv("SSH_AUTH_SOCK", str(host / "agent.sock"))
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", f"unix:path={host / 'bus'},guid=abc;unix:abstract=/tmp/x")
    monkeypatch.setenv("DOCKER_HOST", f"unix://{host / 'docker.sock'}")
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(host / "run"))
    monkeypatch.setenv("GNUPGHOME", str(host / "gnupg"))
    found = secrets(str(host / "home"))
    assert {real(host / name) for name in ("agent.sock", "bus", "docker.sock", "run", "gnupg")} <= set(found)


def test_only_absolute_paths_that_exist_are_listed(host, monkeypatch):
    monkeypatch.setenv("SSH_AUTH_SOCK", str(host / "gone.sock"))
    monkeypatch.setenv("DOCKER_HOST", "tcp://127.0.0.1:2375")
    monkeypatch.setenv("GNUPGHOME", "relative/gnupg")
    found = secrets(str(host / "home"))
    assert real(host / "gone.sock") not in found and all(os.path.isabs(path) for path in found)
    assert not any(path.endswith("2375") or path.endswith("relative/gnupg") for path in found)
    assert found == sorted(set(found))


def test_the_host_keys_default_folder_is_made_and_hidden(host):
    found = secrets(str(host / "home"))
    folder = host / "xdg-data" / "deepagent-magics"
    assert real(folder) in found and stat.S_IMODE(folder.stat().st_mode) == 0o700


def test_a_configured_host_key_is_hidden_or_its_folder_while_it_does_not_exist(host, monkeypatch):
    keys = host / "keys"
    keys.mkdir()
    monkeypatch.setenv("DEEPAGENT_HOST_KEY", str(keys / "host.key"))
    assert real(keys) in secrets(str(host / "home"))
    (keys / "host.key").write_text("k")
    found = secrets(str(host / "home"))
    assert real(keys / "host.key") in found and real(keys) not in found


def test_the_local_models_cache_is_hidden(host):
    (host / "models").mkdir()
    assert real(host / "models") in secrets(str(host / "home"))


def test_what_other_users_cannot_read_is_found_under_a_folder(tmp_path):
    (tmp_path / "shadow").write_text("x")
    (tmp_path / "shadow").chmod(0o600)
    (tmp_path / "hosts").write_text("x")
    (tmp_path / "hosts").chmod(0o644)
    private = tmp_path / "private"
    private.mkdir()
    private.chmod(0o700)
    (private / "inside").write_text("x")
    (private / "inside").chmod(0o600)
    os.mkfifo(tmp_path / "pipe", 0o600)  # not a file: hiding a pipe or socket is for the environment's list
    (tmp_path / "link").symlink_to(tmp_path / "shadow")
    found = host_folders._root_only(str(tmp_path))
    assert sorted(found) == [str(private), str(tmp_path / "shadow")]  # the folder whole, not walked; no link


@pytest.mark.skipif(os.geteuid() != 0, reason="a host running as root")
def test_a_root_hosts_unreadable_files_in_etc_are_hidden(host):
    shadow = "/etc/shadow"
    if not os.path.exists(shadow) or os.stat(shadow).st_mode & stat.S_IROTH:
        pytest.skip("no private /etc/shadow here")
    assert shadow in secrets(str(host / "home"))
