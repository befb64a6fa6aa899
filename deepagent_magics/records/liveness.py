"""Whether the process that wrote a run record is still alive: a dead writer's run is ``abandoned``.

A record says ``running`` while its run works. If the kernel that ran it is killed (SIGKILL,
the machine's OOM killer, a crash) the record keeps saying so forever. So each record
carries its writer: process id, host name, the kernel's boot id and the process's start
time (field 22 of ``/proc/<pid>/stat``, so a process id reused since by another program is
not mistaken for the writer). A reader on the same host finds a pending or running record
whose writer is gone, or is another process now, ``abandoned``. A record from another host
cannot be checked and keeps its status.
"""

from __future__ import annotations

import os
import socket
from functools import lru_cache
from typing import Any

OPEN_STATUSES = ("pending", "running")


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            return handle.read()
    except OSError:
        return None


def process_start(pid: int) -> int | None:
    """The start time of process ``pid`` in clock ticks since boot (Linux), else None."""
    stat = _read(f"/proc/{pid}/stat")
    if not stat or ")" not in stat:
        return None
    fields = stat.rpartition(")")[2].split()  # the command name may hold spaces and parentheses
    try:
        return int(fields[19])  # field 22 of the line; the remainder starts at field 3
    except (IndexError, ValueError):
        return None


@lru_cache(maxsize=1)
def boot_id() -> str | None:
    text = _read("/proc/sys/kernel/random/boot_id")
    return text.strip() if text else None


def writer_identity() -> dict[str, Any]:
    """This process, as a record names its writer."""
    pid = os.getpid()
    return {"pid": pid, "host": socket.gethostname(), "boot_id": boot_id(), "start": process_start(pid)}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: it exists
    except (OverflowError, ValueError, OSError):
        return False
    return True


def writer_gone(writer: Any) -> bool:
    """True when ``writer`` (a record's) is known to be dead; False when alive or unknowable."""
    if not isinstance(writer, dict):
        return False
    pid, host = writer.get("pid"), writer.get("host")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0 or host != socket.gethostname():
        return False
    recorded_boot = writer.get("boot_id")
    if recorded_boot and boot_id() and recorded_boot != boot_id():
        return True  # the machine rebooted since
    if not _alive(pid):
        return True
    recorded_start = writer.get("start")
    current_start = process_start(pid)
    return isinstance(recorded_start, int) and current_start is not None and current_start != recorded_start


def mark_abandoned(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with its status (and every open sub-agent's) ``abandoned`` if its writer died."""
    if record.get("status") in OPEN_STATUSES and writer_gone(record.get("writer")):
        _abandon(record)
    return record


def _abandon(run: dict[str, Any]) -> None:
    if run.get("status") in OPEN_STATUSES:
        run["status"] = "abandoned"
        run["error"] = run.get("error") or "its process ended before the run did (killed or crashed)"
    for child in run.get("orphans") or []:
        _abandon(child)
    for step in run.get("steps") or []:
        for child in step.get("children") or []:
            _abandon(child)
