"""A past run back as a `Run`, by emitting its recorded events again.

The displays that show a live run show a past one the same way.
"""

from __future__ import annotations

import time
from typing import Any, Callable

from ..core.run.run import STATUSES, Run, Usage


def replay(record: dict[str, Any], on_run: Callable[[Run], Any] | None = None) -> Run:
    """A `Run` rebuilt from ``record`` by emitting its events again.

    ``on_run(run)`` is called before the first event, to subscribe the displays.
    """
    run = Run(record.get("task", ""), config=record.get("config") or {}, profile=record.get("profile", "default"),
              run_id=record.get("id"))
    if on_run is not None:
        on_run(run)
    _replay_into(run, record, files=record.get("files") or {})
    return run


def _replay_into(run: Run, record: dict[str, Any], files: dict[str, int]) -> None:
    run.prompt_hash = record.get("prompt_hash")
    run.max_iters = record.get("max_iters") or run.config.get("max_iters")
    run.start()
    for child in record.get("orphans") or []:
        _replay_child(run, child)
    for step_data in record.get("steps") or []:
        step = run.begin_step(step_data.get("reasoning", ""), step_data.get("code", ""))
        for child in step_data.get("children") or []:
            _replay_child(run, child)
        run.end_step(step_data.get("output") or "")
        step.started_at = step_data.get("started_at") or step.started_at
        step.ended_at = step_data.get("ended_at") or step.ended_at
    if record.get("todos"):
        run.set_todos(record["todos"])
    written = record.get("files_written") or []
    for path in written:
        run.record_file(path, files.get(path, 0))
    run.usage = Usage.from_dict(record.get("usage"))
    status = record.get("status") or "finished"
    error = record.get("error")
    if status in ("pending", "running"):
        status = "interrupted"  # the record of a run that never finished (or is still running elsewhere)
    elif status not in STATUSES:  # a record someone else wrote
        status, error = "failed", f"the record says {str(status)[:40]!r}, not a status; {error or ''}".strip("; ")
    started = record.get("started_at")
    ended = record.get("ended_at") or record.get("updated_at")
    if started and ended:  # so that what is shown at run_finished has the recorded duration
        run.started_at = time.time() - (ended - started)
    run.finish(status, result=record.get("result"), error=error, extracted=record.get("extracted"))
    run.started_at, run.ended_at = started or run.started_at, ended or run.ended_at


def _replay_child(parent: Run, record: dict[str, Any]) -> None:
    child = parent.add_child(record.get("task", ""), config=record.get("config") or {},
                             profile=record.get("profile", "default"), run_id=record.get("id"))
    _replay_into(child, record, files={})
    parent.child_finished(child)
