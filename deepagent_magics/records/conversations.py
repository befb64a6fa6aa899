"""Conversation threads rebuilt from run records, so ``--continue`` survives a kernel restart.

Each root run's record keeps ``config["thread"]`` (its thread's id) and
``config["names_created"]``; `load_thread` gathers the records of one thread,
oldest first, into a `core.run.conversations.Thread`. Only records the host wrote count
(``record["_host_written"]``, `store`): a record an agent planted in ``.deepagent/runs/``
is never taken as the user's earlier turn.

The threads themselves (what a follow-up run is told) are core/run/conversations.py; this module rebuilds them from run records.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core.run.conversations import Thread, Turn, UnknownThread
from .store import list_records


def _host_runs(root: Any) -> list[dict[str, Any]]:
    """The root runs the host recorded in ``root`` (signed with its key)."""
    return [record for record in list_records([root]) if record.get("depth", 0) == 0 and record.get("_host_written")]


def load_thread(key: str, root: Any) -> Thread | None:
    """The thread whose id is ``key`` or which holds run ``key``, from the records in ``root``."""
    if root is None:
        return None
    records = _host_runs(root)
    thread_id = None
    for record in records:
        if record.get("id") == key or (record.get("config") or {}).get("thread") == key:
            thread_id = (record.get("config") or {}).get("thread") or record.get("id")
            break
    if thread_id is None:
        if any(record.get("id") == key or Path(str(record.get("_path"))).name == f"{key}.json"
               for record in list_records([root])):  # a record under that name, not signed as it
            raise UnknownThread(f"the record of run {key!r} does not carry this host's signature (an agent may have "
                                f"written it), so it is not continued; %deepagent_trace {key} shows it")
        return None
    turns = [record for record in records
             if ((record.get("config") or {}).get("thread") or record.get("id")) == thread_id]
    turns.sort(key=lambda record: record.get("started_at") or 0)
    return Thread(thread_id, [Turn.from_run(record) for record in turns])


def latest_thread(root: Any) -> str | None:
    """The thread of the newest root run the host recorded in ``root`` (None when there is none)."""
    records = _host_runs(root)
    if not records:
        return None
    newest = max(records, key=lambda record: record.get("started_at") or 0)
    return (newest.get("config") or {}).get("thread") or newest.get("id")
