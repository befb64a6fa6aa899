"""The sandbox a local sub-agent kernel runs in: bubblewrap (``bwrap``), when it can run here.

A kernel of the same user without a sandbox isolates context and crashes, not files: whatever
its code can reach, it can write. So each local kernel starts inside ``bwrap`` (`wrap`):

- the whole filesystem read-only; the workspace writable; ``/tmp``, ``/run`` and the user's home
  private and empty (a tmpfs each), with only the Python the kernel runs on (its prefixes and
  ``sys.path``) shown again, read-only, where they live under one of those;
- the host's state in the workspace (``.deepagent``: records, checkpoints, memory, threads) and its
  ``.git`` (hooks and ``core.fsmonitor`` run on the host) bound read-only over the workspace; the
  Python environment read-only even when it lives in the workspace (a ``.venv``: the host imports it);
  secrets of the home (``.ssh``, cloud credentials, the IPython and Jupyter folders) hidden when the
  workspace contains the home; the home the password database gives and ``TMPDIR`` hidden too; Jupyter's
  and IPython's folders, connection files, servers' sockets, the host's signing key, the model cache and
  the sockets the environment names hidden wherever they are (`host_folders`);
- the kernel's own folder (connection file and its unix sockets: the protocol needs no network)
  writable; the environment without credential-named variables and without the host's IPython
  profile, startup file or Jupyter folders;
- its own PID namespace with the kernel as PID 1 (``--as-pid-1``): when the kernel exits, however,
  the kernel ends every process in it, ``setsid`` grandchildren included; ``--die-with-parent``
  ends the sandbox with the host (with the host's thread that started it: `launcher` starts every
  sandbox on a thread that lives as long as the host), even while the kernel is still starting,
  and ends the kernel with the ``bwrap`` process holding it, whoever kills that;
- its own network namespace (no network, loopback included) unless the policy allows the network;
- no capability, whoever starts it, no new privileges, its own user namespace where the kernel allows
  one and a seccomp filter where libseccomp is installed (`hardening`, `seccomp`).

Where ``bwrap`` cannot run (not installed, no user namespaces, not Linux), `SandboxPolicy.status`
says why; the pool then starts kernels unsandboxed and marks them so, or refuses when the policy
requires the sandbox.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass
from typing import Any, Iterable

from ...core.run.secrets import is_secret_name
from . import host_folders
from .hardening import Hardening, probe as probe_hardening
from .limits import ResourceLimits

BWRAP = "bwrap"  # the program; tests point it elsewhere to play a machine without it
# Under the home, hidden even when the workspace contains the home (the workspace is bound over it).
HOME_SECRETS = (".ssh", ".gnupg", ".aws", ".azure", ".config", ".kube", ".docker", ".netrc", ".pypirc",
                ".git-credentials", ".ipython", ".jupyter", ".local/share/jupyter", ".deepagent", ".bash_history",
                ".python_history")
# Read-only over the workspace: the host's state, what git runs on the host (hooks, fsmonitor), and the
# workspace's skills, which the root's prompt lists (a sub-agent the user allows to write a skill does it
# through `write_file`, which runs on the host and checks who asks: tools/files.py).
READ_ONLY_IN_WORKSPACE = (".deepagent", ".git", "skills")
# Of those, the ones this project owns are made (empty) when missing, so that they are read-only too: else a
# sub-agent's code could create them. Not `.git`: an empty one could break tools that look for it.
MADE_IF_MISSING = (".deepagent", "skills")
# Environment variables the kernel does not get: the host's IPython and Jupyter folders and start-up file.
# (JPY_PARENT_PID stays: ipykernel's parent poller, seeing parent 0 outside its namespace, then never fires.)
HOST_ONLY_ENV = ("IPYTHONDIR", "PYTHONSTARTUP", "JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR",
                 "JUPYTER_RUNTIME_DIR", "JUPYTER_PATH", "JUPYTER_CONFIG_PATH", "JUPYTER_TOKEN", "JPY_SESSION_NAME")
PROBE_TIMEOUT = 10.0

_probed: dict[tuple[str, bool], Hardening | str] = {}  # what bwrap applies here, or why it cannot run
_probe_lock = threading.Lock()


@dataclass(frozen=True)
class SandboxPolicy:
    """How local sub-agent kernels are confined.

    Args:
        network: give the kernel the host's network (default off: a sub-agent's tools, LM calls and
            MCP servers run on the host over the kernel's own channel, so its code needs none; off, it
            can neither send the workspace anywhere nor reach services on 127.0.0.1).
        required: refuse to start a kernel when ``bwrap`` cannot run here, instead of running unsandboxed.
        limits: what each kernel may consume (`limits.ResourceLimits`), held with or without the sandbox.
    """

    network: bool = False
    required: bool = False
    limits: ResourceLimits = ResourceLimits()

    def status(self) -> str | None:
        """None when kernels can be sandboxed here; else why not, in a few words."""
        return unavailable(self.network)

    def isolation(self) -> dict[str, Any]:
        """What a sub-agent's record says about its kernel's confinement."""
        reason = self.status()
        if reason is None:
            return {"sandbox": "bubblewrap", "network": self.network, **hardening(self.network).record()}
        return {"sandbox": "none", "reason": reason}


def refusal(reason: str) -> str:
    return (f"sub-agents must run sandboxed (--require-sandbox) but bubblewrap cannot run here: {reason}; "
            "install bubblewrap (apt-get install bubblewrap), or leave --require-sandbox off")


def unavailable(network: bool = False) -> str | None:
    """Why ``bwrap`` cannot sandbox a kernel here (None: it can); probed once per program and setting."""
    probed = _probe_once(network)
    return probed if isinstance(probed, str) else None


def hardening(network: bool = False) -> Hardening:
    """What the sandbox takes away here beyond its mounts (`hardening`); nothing where bwrap cannot run."""
    probed = _probe_once(network)
    return probed if isinstance(probed, Hardening) else Hardening(False, False, False, (("sandbox", probed),))


def _probe_once(network: bool) -> Hardening | str:
    if not sys.platform.startswith("linux"):
        return f"bubblewrap needs Linux, this is {sys.platform}"
    program = shutil.which(BWRAP)
    if program is None:
        return f"{BWRAP} is not installed"
    key = (program, network)
    with _probe_lock:
        if key not in _probed:
            _probed[key] = probe_hardening(lambda arguments, fds: _probe(program, network, arguments, fds))
        return _probed[key]


def _probe(program: str, network: bool, arguments: list[str], fds: tuple[int, ...]) -> str | None:
    """None when bwrap runs ``true`` in its namespaces with these extra arguments; else why not."""
    true = shutil.which("true")
    command = [program, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", *_namespaces(network),
               *arguments, "--", *([true] if true else [sys.executable, "-c", ""])]
    try:
        done = subprocess.run(command, capture_output=True, timeout=PROBE_TIMEOUT, stdin=subprocess.DEVNULL,
                              pass_fds=fds)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{BWRAP} could not run: {exc}"
    if done.returncode != 0:
        detail = (done.stderr.decode(errors="replace").strip().splitlines() or [f"exit code {done.returncode}"])[-1]
        return f"{BWRAP} cannot create its namespaces here ({detail[:160]})"
    return None


def forget_probes() -> None:
    with _probe_lock:
        _probed.clear()


def _namespaces(network: bool) -> list[str]:
    return ["--unshare-pid", "--as-pid-1", "--new-session", "--die-with-parent", "--unshare-ipc", "--unshare-uts",
            *([] if network else ["--unshare-net"])]


def environment(environ: dict[str, str]) -> dict[str, str]:
    """The kernel's environment: the host's, without credentials and the host's IPython/Jupyter folders."""
    return {name: value for name, value in environ.items()
            if name not in HOST_ONLY_ENV and not is_secret_name(name)}


def wrap(argv: list[str], *, workspace: str, kernel_dir: str, network: bool = False,
         home: str | None = None, runtime: Iterable[str] = (), seccomp_fd: int | None = None,
         tmpfs_size: int | None = None) -> list[str]:
    """``argv`` run inside ``bwrap``: see the module's docstring for what the kernel sees (``seccomp_fd``:
    the filter, from `seccomp.open_program`, passed to bwrap by the caller); each folder in memory (a
    tmpfs) holds at most ``tmpfs_size`` bytes (`kernel_limits`: the disk limit)."""
    workspace, kernel_dir = os.path.realpath(workspace), os.path.realpath(kernel_dir)
    home = os.path.realpath(home or os.path.expanduser("~"))
    hidden = [path for path in {"/tmp", "/run", home, *_host_folders()} if _covers_nothing_needed(path)]
    secrets = [path for path in host_folders.secrets(home) if _covers_nothing_needed(path)]
    mounts: list[tuple[str, int, list[str]]] = []  # (path, rank at equal depth, bwrap arguments)
    for path in hidden:
        if os.path.isdir(path):
            mounts.append((path, 0, ["--tmpfs", path]))
    shown: list[str] = []
    for path in _runtime_paths(argv, runtime):
        again = any(_under(path, area) for area in [*hidden, *secrets]) or _under(path, workspace)
        uncovers = any(_under(area, path) for area in [*hidden, workspace])  # would show a hidden folder whole
        if again and not uncovers and os.path.exists(path) and not any(_under(path, done) for done in shown):
            shown.append(path)
            mounts.append((path, 1, ["--ro-bind", path, path]))
    mounts.append((workspace, 2, ["--bind", workspace, workspace]))
    mounts.append((kernel_dir, 2, ["--bind", kernel_dir, kernel_dir]))
    for name in READ_ONLY_IN_WORKSPACE:
        path = os.path.join(workspace, name)
        if name in MADE_IF_MISSING and not os.path.lexists(path):
            with contextlib.suppress(OSError):  # a workspace the host cannot write: the kernel cannot either
                os.makedirs(path, exist_ok=True)
        if os.path.isdir(path):
            mounts.append((path, 3, ["--ro-bind", os.path.realpath(path), path]))
    for name in HOME_SECRETS:
        path = os.path.join(home, name)
        if _under(path, workspace) and os.path.lexists(path):
            mounts.append((path, 3, ["--tmpfs", path] if os.path.isdir(path) else ["--ro-bind", "/dev/null", path]))
    shown_again = [workspace, kernel_dir, *shown]
    for path in secrets:  # after whatever shows a folder they lie in again, even at the same depth
        if not _out_of_sight(path, hidden, [other for other in secrets if other != path], shown_again):
            mounts.append((path, 4, ["--tmpfs", path] if os.path.isdir(path) else ["--ro-bind", "/dev/null", path]))
    if network:
        resolv = os.path.realpath("/etc/resolv.conf")
        if any(_under(resolv, area) for area in hidden):  # /run/systemd/resolve/...: DNS needs it
            mounts.append((resolv, 1, ["--ro-bind-try", resolv, resolv]))
    command = [shutil.which(BWRAP) or BWRAP, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for _, _, arguments in sorted(mounts, key=lambda mount: (_depth(mount[0]), mount[1])):
        command += ["--size", str(tmpfs_size), *arguments] if tmpfs_size and arguments[0] == "--tmpfs" else arguments
    command += _namespaces(network) + hardening(network).arguments(seccomp_fd)
    command += ["--setenv", "HOME", home, "--setenv", "TMPDIR", "/tmp", "--chdir", workspace, "--"]
    return command + list(argv)


def _host_folders() -> list[str]:
    """Besides ``/tmp``, ``/run`` and ``HOME``, hidden whole: the host's ``TMPDIR`` and the home the password
    database gives (``HOME`` may point elsewhere). What lies elsewhere is `host_folders.secrets`."""
    folders = []
    tmpdir = os.environ.get("TMPDIR")
    if tmpdir and os.path.isabs(tmpdir):
        folders.append(os.path.realpath(tmpdir))
    with contextlib.suppress(KeyError, ImportError):
        import pwd

        folders.append(os.path.realpath(pwd.getpwuid(os.getuid()).pw_dir))
    return [folder for folder in folders if os.path.isdir(folder)]


def _out_of_sight(path: str, hidden: list[str], secrets: list[str], shown: list[str]) -> bool:
    """Whether ``path`` is hidden already: a hidden folder holds it deeper than anything shown again (at equal
    depth a shown folder wins over a hidden one and loses to a secret one)."""
    def deepest(areas: list[str]) -> int:
        return max((_depth(area) for area in areas if _under(path, area)), default=-1)

    show = deepest(shown)
    return deepest(hidden) > show or deepest(secrets) >= max(show, 0)


def _covers_nothing_needed(path: str) -> bool:
    """A folder hidden behind a tmpfs must not be / or a system folder the kernel needs whole."""
    return _depth(path) >= 1 and path not in ("/usr", "/etc", "/lib", "/lib64", "/bin", "/sbin", "/opt", "/var")


def _runtime_paths(argv: list[str], extra: Iterable[str]) -> list[str]:
    """Where the kernel's Python lives: the prefixes, its executable's folder, ``sys.path`` and ``PYTHONPATH``."""
    paths = [sys.prefix, sys.exec_prefix, sys.base_prefix, getattr(sys, "base_exec_prefix", sys.base_prefix),
             os.path.dirname(sys.executable), os.path.dirname(os.path.realpath(sys.executable)), *sys.path,
             *os.environ.get("PYTHONPATH", "").split(os.pathsep), *extra]
    if argv and os.path.isabs(argv[0]):  # another kernel spec's interpreter: its environment
        real = os.path.realpath(argv[0])
        paths += [os.path.dirname(os.path.dirname(argv[0])), os.path.dirname(os.path.dirname(real))]
    return sorted({os.path.realpath(path) for path in paths if path and os.path.isabs(path)}, key=_depth)


def _under(path: str, folder: str) -> bool:
    """Whether ``path`` is ``folder`` or inside it."""
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _depth(path: str) -> int:
    return len([part for part in path.split("/") if part])
