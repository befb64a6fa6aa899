"""What a benchmark's time was spent against: wall time, this process's CPU time and the machine's load.

A benchmark's seconds per task say little on a shared machine unless one knows what else ran: a
model served in this process (``--lm local``) does its work on this process's threads, so its CPU
time is this process's (`resource.getrusage`), and the machine's one-minute load average, sampled
while the benchmark runs, says how many others wanted the same cores. The report keeps all three
(`BenchReport.machine`).
"""

from __future__ import annotations

import os
import resource
import threading
import time
from typing import Any

SAMPLE_SECONDS = 30.0  # how often the load average is read


def cpu_seconds() -> float:
    """User and system CPU time of this process (all its threads) and of its children that have ended."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def load_average() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:  # a platform without it
        return None


class MachineLoad:
    """``with MachineLoad() as load: ...``; then ``load.summary()``: wall and CPU seconds, cores, the load seen."""

    def __init__(self, every: float = SAMPLE_SECONDS):
        self.every = every
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._began = self._cpu = 0.0
        self.wall = self.cpu = 0.0

    def __enter__(self) -> "MachineLoad":
        self._began, self._cpu = time.monotonic(), cpu_seconds()
        self._sample()
        self._thread = threading.Thread(target=self._watch, name="deepagent-bench-load", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._sample()
        self.wall, self.cpu = time.monotonic() - self._began, cpu_seconds() - self._cpu

    def _watch(self) -> None:
        while not self._stop.wait(self.every):
            self._sample()

    def _sample(self) -> None:
        value = load_average()
        if value is not None:
            self.samples.append(value)

    def summary(self) -> dict[str, Any]:
        samples = self.samples
        return {"wall_seconds": round(self.wall, 1), "cpu_seconds": round(self.cpu, 1), "cpus": os.cpu_count(),
                "load_mean": round(sum(samples) / len(samples), 2) if samples else None,
                "load_min": round(min(samples), 2) if samples else None,
                "load_max": round(max(samples), 2) if samples else None}
