"""interpreters/pool/sandbox.py: the sandbox's settings reach the pool from every front door, its command line
hides what it must, and a machine without bubblewrap is said so.

No kernel starts here: the magic's settings, the command line's flags and the run API's fields are
checked to arrive as a `SandboxPolicy`; `sandbox.wrap` (bubblewrap's arguments) is read for the order of
its mounts (the workspace writable over a hidden home, host state read-only over it) and run on a shell
command in real bubblewrap. The attacks of a sub-agent's code on it are in tests/adversarial/test_sandbox*.py.
"""

from __future__ import annotations

import os
import subprocess

import pytest
from IPython.core.error import UsageError

from deepagent_magics.cli.parser import build_parser
from deepagent_magics.interpreters.pool import default_pool, sandbox, stop_default_pool
from deepagent_magics.interpreters.pool.hardening import Hardening
from deepagent_magics.interpreters.pool.sandbox import SandboxPolicy
from deepagent_magics.server.launch import RequestError, cell_code, check_body


def test_the_magics_settings_make_the_pools_policy(ip, tmp_path):
    ip.run_line_magic("deepagent_config", "--subagent-network on --require-sandbox on")
    magics = ip.magics_manager.registry["DeepAgentMagics"]
    assert (magics.subagent_network, magics.require_sandbox) == (True, True)
    with pytest.raises(UsageError):
        ip.run_line_magic("deepagent_config", "--subagent-network maybe")
    try:
        settings = {name: getattr(magics, name) for name in magics.SETTINGS}
        settings.update(max_depth=0, workspace=str(tmp_path))
        magics._subagent_pool(settings)
        assert default_pool().sandbox == SandboxPolicy(network=True, required=True)
    finally:
        stop_default_pool()
    ip.run_line_magic("deepagent_config", "--reset")
    assert (magics.subagent_network, magics.require_sandbox) == (False, False)


def test_the_command_line_and_the_run_api_take_them_too():
    args = build_parser().parse_args(["run", "task", "--subagent-network", "--require-sandbox"])
    assert (args.subagent_network, args.require_sandbox) == (True, True)
    args = build_parser().parse_args(["run", "task"])
    assert (args.subagent_network, args.require_sandbox) == (False, False)
    code = cell_code("r1", "task", "/w", {"subagent_network": True, "require_sandbox": True})
    assert "--subagent-network --require-sandbox" in code
    with pytest.raises(RequestError):
        check_body({"task": "t", "subagent_network": "yes"})


@pytest.mark.subprocess  # probes the sandbox: bwrap, prlimit, ldconfig (pyseccomp's find_library)
def test_the_mounts_put_the_workspace_over_a_hidden_home_and_host_state_over_the_workspace(tmp_path, monkeypatch):
    home = tmp_path / "home"
    workspace = home / "project"
    (workspace / ".deepagent").mkdir(parents=True)
    (home / ".ssh").mkdir()
    argv = sandbox.wrap(["python", "-m", "ipykernel_launcher"], workspace=str(workspace), kernel_dir=str(tmp_path),
                        home=str(home))
    mounts = [(argv[i], argv[i + 1]) for i in range(len(argv) - 1) if argv[i].startswith("--")]
    order = [mount for mount in mounts if mount[0] in ("--tmpfs", "--bind", "--ro-bind")]
    assert order.index(("--tmpfs", str(home))) < order.index(("--bind", str(workspace)))
    assert order.index(("--bind", str(workspace))) < order.index(("--ro-bind", str(workspace / ".deepagent")))
    assert ("--tmpfs", str(home / ".ssh")) not in order  # the workspace does not hold the home: nothing to mask
    assert "--unshare-net" in argv and "--unshare-pid" in argv and "--as-pid-1" in argv
    assert "--unshare-net" not in sandbox.wrap(["python"], workspace=str(workspace), kernel_dir=str(tmp_path),
                                               home=str(home), network=True)
    assert argv[-3:] == ["python", "-m", "ipykernel_launcher"]


def test_the_kernels_environment_has_no_credentials_and_no_host_ipython_folder():
    env = sandbox.environment({"PATH": "/usr/bin", "OPENAI_API_KEY": "sk-1234567", "GITHUB_TOKEN": "ghp_x",
                               "IPYTHONDIR": "/home/u/.ipython", "PYTHONSTARTUP": "/home/u/s.py", "LANG": "C"})
    assert env == {"PATH": "/usr/bin", "LANG": "C"}


@pytest.mark.subprocess  # probes the sandbox: bwrap, prlimit, ldconfig (pyseccomp's find_library)
def test_each_folder_of_the_sandbox_in_memory_gets_a_size(tmp_path):
    argv = sandbox.wrap(["python"], workspace=str(tmp_path / "w"), kernel_dir=str(tmp_path), home=str(tmp_path / "h"),
                        tmpfs_size=1 << 20)
    tmpfs = [i for i, word in enumerate(argv) if word == "--tmpfs"]
    assert tmpfs and all(argv[i - 2:i] == ["--size", str(1 << 20)] for i in tmpfs)
    assert "--size" not in sandbox.wrap(["python"], workspace=str(tmp_path / "w"), kernel_dir=str(tmp_path))


@pytest.fixture
def no_bwrap(monkeypatch):
    """A machine without bubblewrap, played by pointing the sandbox at a program that does not exist."""
    monkeypatch.setattr(sandbox, "BWRAP", "no-such-bwrap-here")
    sandbox.forget_probes()
    yield
    sandbox.forget_probes()


def test_without_bubblewrap_the_policy_says_why_and_a_required_sandbox_is_refused_in_one_line(no_bwrap):
    policy = SandboxPolicy(required=True)
    assert policy.status() == "no-such-bwrap-here is not installed"
    assert policy.isolation() == {"sandbox": "none", "reason": "no-such-bwrap-here is not installed"}
    assert sandbox.hardening() == Hardening(False, False, False, (("sandbox", "no-such-bwrap-here is not installed"),))
    refused = sandbox.refusal(policy.status())
    assert "\n" not in refused and "--require-sandbox" in refused and "no-such-bwrap-here is not installed" in refused


@pytest.mark.subprocess  # probes the sandbox: bwrap
def test_where_bubblewrap_runs_the_record_says_so_with_what_it_takes_away():
    if sandbox.unavailable() is not None:
        pytest.skip(f"no sandbox here: {sandbox.unavailable()}")
    isolation = SandboxPolicy(network=True).isolation()
    assert isolation["sandbox"] == "bubblewrap" and isolation["network"] is True
    assert isolation["capabilities"] == "none" and isolation["no_new_privileges"] is True
    assert SandboxPolicy().isolation()["network"] is False


@pytest.mark.subprocess  # probes the sandbox: bwrap
def test_host_state_is_made_and_bound_read_only_a_homes_secrets_masked_and_the_runtime_shown_again(tmp_path):
    home = tmp_path / "home"
    (home / ".git").mkdir(parents=True)
    (home / ".netrc").write_text("machine x password y")
    (home / ".aws").mkdir()
    venv = home / "venv"
    venv.mkdir()
    argv = sandbox.wrap(["python"], workspace=str(home), kernel_dir=str(tmp_path / "k"), home=str(home),
                        runtime=[str(venv)])
    pairs = [tuple(argv[i:i + 3]) for i in range(len(argv) - 2)]
    for name in (".deepagent", "skills"):  # made when missing, so a sub-agent cannot create them
        assert (home / name).is_dir() and ("--ro-bind", str(home / name), str(home / name)) in pairs
    assert ("--ro-bind", str(home / ".git"), str(home / ".git")) in pairs
    assert ("--ro-bind", "/dev/null", str(home / ".netrc")) in pairs and ("--tmpfs", str(home / ".aws")) in [
        tuple(argv[i:i + 2]) for i in range(len(argv) - 1)]
    assert ("--ro-bind", str(venv), str(venv)) in pairs  # the Python in the workspace: read-only
    assert argv.index(str(home / ".netrc")) > argv.index("--bind")  # masked after the workspace is bound
    assert argv[argv.index("--chdir") + 1] == str(home) and argv[argv.index("HOME") + 1] == str(home)
    bare = tmp_path / "bare"
    bare.mkdir()
    sandbox.wrap(["python"], workspace=str(bare), kernel_dir=str(tmp_path / "k"), home=str(home))
    assert not (bare / ".git").exists()  # an empty one could break tools that look for it


@pytest.mark.subprocess  # runs real bubblewrap
def test_a_command_in_the_sandbox_writes_its_workspace_and_folder_and_nothing_else(tmp_path):
    if sandbox.unavailable() is not None:
        pytest.skip(f"no sandbox here: {sandbox.unavailable()}")
    home, outside = tmp_path / "home", tmp_path / "outside"
    workspace, kernel_dir = home / "project", tmp_path / "kernel"
    for folder in (workspace, kernel_dir, outside, home / ".ssh"):
        folder.mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE")
    script = (f"echo w > {workspace}/made; echo k > {kernel_dir}/made; "
              f"echo o > {outside}/made 2>/dev/null; echo h > {workspace}/.deepagent/made 2>/dev/null; "
              f"cat {home}/.ssh/id_ed25519 2>/dev/null; ls {outside} 2>/dev/null; echo $HOME")
    done = subprocess.run(sandbox.wrap(["/bin/sh", "-c", script], workspace=str(workspace), kernel_dir=str(kernel_dir),
                                       home=str(home)), capture_output=True, text=True, timeout=60)
    assert (workspace / "made").read_text() == "w\n" and (kernel_dir / "made").read_text() == "k\n"
    assert not (outside / "made").exists() and not (workspace / ".deepagent" / "made").exists()
    assert "PRIVATE" not in done.stdout and done.stdout.strip().splitlines()[-1] == str(home)
    assert os.listdir(outside) == []
