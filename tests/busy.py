"""A busy machine for tests whose subject is timing: processes that spin on every core while a test runs.

Limits, alarms and watchdogs are raced by load: on a machine with a load average of 5 to 8, a
time limit's alarm arrived after its block had ended and host code was refused (issue 30). The
hostile tests of time limits run their hammering with `busy_machine` around it.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from typing import Iterator

SPIN = "while True:\n    pass\n"


@contextlib.contextmanager
def busy_machine(spinners: int | None = None) -> Iterator[list[subprocess.Popen]]:
    """Start ``spinners`` processes (one per core by default) that spin until the block ends."""
    count = spinners if spinners is not None else max(2, len(os.sched_getaffinity(0)))
    procs = [subprocess.Popen([sys.executable, "-c", SPIN], stdin=subprocess.DEVNULL) for _ in range(count)]
    try:
        yield procs
    finally:
        for proc in procs:
            proc.kill()
        for proc in procs:
            proc.wait(timeout=30)
