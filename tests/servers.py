"""Servers the tests start as real processes (JupyterLab, Jupyter Server, the kernel gateway, MCP over HTTP):
a free port, and one way to start a server, wait until it answers and always stop it."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def serving(argv: list[str], *, cwd: Path, env: dict[str, str], log: Path, ready: Callable[[], bool],
            timeout: float = 90, poll: float = 0.3) -> Iterator[subprocess.Popen]:
    """Start ``argv`` (output to ``log``), wait until ``ready()`` is true, yield the process; stop it afterwards.

    A server that exits or is not ready within ``timeout`` fails the test with the end of its log."""
    with open(log, "wb") as out:
        process = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + timeout
            while not ready():
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{argv[2] if len(argv) > 2 else argv[0]} did not start:\n"
                                       + log.read_text(errors="replace")[-3000:])
                time.sleep(poll)
            yield process
        finally:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def answers(url: str) -> Callable[[], bool]:
    """``ready`` for `serving`: a GET of the URL succeeds."""
    import urllib.request

    def check() -> bool:
        try:
            urllib.request.urlopen(url, timeout=2)
            return True
        except OSError:
            return False

    return check
