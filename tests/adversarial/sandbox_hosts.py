"""A host process that runs one sub-agent step in a real sandboxed kernel, as root or as an unprivileged user.

The sandbox tests attack from inside the kernel; who started the sandbox decides what bwrap keeps
(root keeps every capability unless told otherwise), so each attack runs from a host of each kind:

- ``root``: this test process's user (CI runs as root);
- ``unprivileged``: a host process dropped to uid/gid 65534 (``nobody``: no passwd entry needed) with
  ``setpriv`` before it starts, its home, temporary folder and workspace owned by that user (run by a
  user other than root, the tests' own user, and no root host).

The host is a fresh Python process (`HOST`): it makes a `KernelPool`, runs the attack's code as a
sub-agent's REPL does, and prints the pool's record of the sandbox and the attack's ``report``.
Where this machine keeps the Python or the checkout in a folder other users cannot enter (pyenv under
``/root``), the unprivileged host runs in a mount namespace of its own in which that folder is an empty
tmpfs with only the Python and the checkout bound back in, read-only (nothing changes on the machine).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path

import deepagent_magics

UNPRIVILEGED = 65534
CHECKOUT = Path(deepagent_magics.__file__).parents[1]
HOSTS = ("root", "unprivileged")
HOST = """
import json, os, sys
spec = json.load(open(sys.argv[1]))
exec(spec["before"])  # what the host does to itself first (a seccomp filter of its own: a host like Docker's)
from deepagent_magics.interpreters.kernel import KernelInterpreter
from deepagent_magics.interpreters.pool import KernelPool
from deepagent_magics.interpreters.pool.sandbox import SandboxPolicy
pool = KernelPool(size=0, sandbox=SandboxPolicy(network=spec["network"]))
try:
    interpreter = KernelInterpreter(pool=pool, cwd=spec["workspace"])
    try:
        output = interpreter.execute(spec["code"] + "\\nimport json\\nprint(json.dumps(report))")
    finally:
        interpreter.shutdown()
finally:
    pool.stop()
host_report = None
exec(spec["after"])  # what the host looks at afterwards (binds host_report)
print(json.dumps({"isolation": pool.isolation, "output": output, "host_report": host_report}))
"""


@dataclass
class Host:
    """Where one host runs: its user, and folders that user owns (removed by `close`)."""

    kind: str
    root: Path  # a private folder: home, tmp, workspace, the host script

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def tmp(self) -> Path:
        return self.root / "tmp"

    @property
    def workspace(self) -> Path:
        return self.root / "ws"

    def own(self, *paths: Path) -> None:
        """Make ``paths`` (made by the test, as root) belong to the host's user."""
        if self.kind == "unprivileged" and os.geteuid() == 0:  # else this user is unprivileged already
            for path in paths:
                for each in [path, *path.rglob("*")] if path.is_dir() else [path]:
                    os.lchown(each, UNPRIVILEGED, UNPRIVILEGED)

    def run(self, code: str, env: dict[str, str] | None = None, before: str = "", after: str = "",
            network: bool = False, timeout: float = 180) -> dict:
        """Run ``code`` (which binds ``report``) in a sandboxed kernel of a new host (``network``: with the
        network); the pool's record of the sandbox, the report, and what ``after`` bound as ``host_report``."""
        spec = self.root / "spec.json"
        spec.write_text(json.dumps({"code": textwrap.dedent(code), "workspace": str(self.workspace),
                                    "before": textwrap.dedent(before), "after": textwrap.dedent(after),
                                    "network": network}))
        script = self.root / "host.py"
        script.write_text(HOST)
        self.own(spec, script)
        result = self.python([str(script), str(spec)], env, timeout)
        output = result.pop("output")
        try:
            result["report"] = json.loads(output.strip().splitlines()[-1])
        except (ValueError, IndexError):
            raise AssertionError(f"the attack did not report: {output}") from None
        return result

    def python(self, arguments: list[str], env: dict[str, str] | None = None, timeout: float = 180) -> dict:
        """Run this Python with ``arguments`` as the host's user, in its workspace; the JSON of its last line.
        (``env``: more of its environment; this checkout is importable, ``tests`` included.)"""
        environ = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.home),
                   "TMPDIR": str(self.tmp), "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1",
                   "PYTHONPATH": str(CHECKOUT), **(env or {})}
        command = [sys.executable, *arguments]
        if self.kind == "unprivileged" and os.geteuid() == 0:  # else this user is unprivileged already
            command = [*_view(), "setpriv", f"--reuid={UNPRIVILEGED}", f"--regid={UNPRIVILEGED}", "--clear-groups",
                       "--", *command]
        done = subprocess.run(command, env=environ, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, cwd=str(self.workspace))
        lines = done.stdout.strip().splitlines()
        assert done.returncode == 0 and lines, f"the host failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
        return json.loads(lines[-1])

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def make_host(kind: str) -> Host:
    """A host of this kind, with an empty home, temporary folder and workspace of its user's."""
    if kind == "root" and os.geteuid() != 0:
        import pytest

        pytest.skip("a root host needs the tests to run as root (CI does)")
    root = Path(tempfile.mkdtemp(prefix="deepagent-host-", dir="/var/tmp"))  # not under a tmpfs the sandbox hides
    os.chmod(root, 0o755)
    host = Host(kind, root)
    for folder in (host.home, host.tmp, host.workspace):
        folder.mkdir(mode=0o700)
    host.own(root)
    return host


def _view() -> list[str]:
    """A mount namespace of the unprivileged host's own in which the Python and this checkout can be read
    (bwrap as root: each folder on their way that other users cannot enter becomes an empty tmpfs, with
    only what the host needs bound back read-only); no command at all where every folder can be entered."""
    needed = {os.path.realpath(path) for path in (sys.base_prefix, sys.prefix, os.path.dirname(sys.executable),
                                                   os.path.dirname(os.path.realpath(sys.executable)),
                                                   str(CHECKOUT))}
    closed: dict[str, set[str]] = {}
    for path in sorted(needed):
        ancestor = _closed_ancestor(path)
        if ancestor is not None:
            closed.setdefault(ancestor, set()).add(path)
    if not closed:
        return []
    command = ["bwrap", "--dev-bind", "/", "/"]
    for ancestor, paths in sorted(closed.items()):
        command += ["--perms", "0755", "--tmpfs", ancestor]
        for path in sorted(paths):
            between = Path(path).relative_to(ancestor).parents
            for folder in sorted(str(Path(ancestor) / each) for each in between if str(each) != "."):
                command += ["--perms", "0755", "--dir", folder]  # else bwrap makes them 0700
            command += ["--ro-bind", path, path]
    return [*command, "--"]


def _closed_ancestor(path: str) -> str | None:
    """The outermost folder on the way to ``path`` that other users cannot enter (None: none)."""
    parts = Path(path).parts
    for depth in range(2, len(parts)):
        folder = str(Path(*parts[:depth]))
        if not os.stat(folder).st_mode & stat.S_IXOTH:
            return folder
    return None
