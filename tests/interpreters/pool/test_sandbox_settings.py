"""The sandbox's settings reach the pool from every front door, and its command line hides what it must.

No kernel starts here: the magic's settings, the command line's flags and the run API's fields are
checked to arrive as a `SandboxPolicy`, and `sandbox.wrap` (bubblewrap's arguments) is read for the
order of its mounts (the workspace writable over a hidden home, host state read-only over it).
"""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError

from deepagent_magics.cli.parser import build_parser
from deepagent_magics.interpreters.pool import default_pool, sandbox, stop_default_pool
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
