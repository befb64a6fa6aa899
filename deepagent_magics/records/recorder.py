"""Run records: every root run written to ``<workspace>/.deepagent/runs/<run-id>.json`` as it goes.

A `RunRecorder` listens to the run's event stream and rewrites the record after
the events that matter, so a run that is interrupted or whose kernel dies still
leaves what it did so far. Writes are atomic (a temporary file renamed over) and
throttled: at most one every ``min_interval`` seconds, and never more than a
small share of the run's time (a write costs O(record), so writing after every
event would be quadratic). A timer writes what a throttled event left pending.
Every string is scrubbed of secrets again first (`core.run.secrets`; the run already scrubbed what
it stored), and the record names its writer process (`liveness`), so a reader can tell a
run whose process died (``abandoned``) from one still running. The record is signed with the
host key (`host_key`): only a signed record is continued as the user's earlier turn.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Iterable

from ..core.run.secrets import (
    Redactor,
    default_redactor,
    protect_logs,
    register_lm_secrets,
    secret_values,
)
from ..core.run.run import (
    FILE_WRITTEN,
    RUN_FINISHED,
    RUN_STARTED,
    SUBAGENT_STARTED,
    TOOL_CALL,
    Event,
    Run,
)
from ..core.run.event_kinds import TRANSIENT
from .host_key import HostKeyError, signed_json
from .liveness import writer_identity
from .store import FORMAT, RECORD_PURPOSE, record_place, runs_dir


def record_of(run: Run, files: dict[str, int] | None = None,
              tool_calls: dict[str, list[dict[str, Any]]] | None = None) -> dict[str, Any]:
    """The JSON-able record of ``run`` and its sub-agents (before redaction)."""
    record = {"format": FORMAT, "writer": _writer(), **_tree_dict(run, tool_calls or {})}
    record["usage_total"] = run.tree_usage().to_dict()
    record["files"] = dict(files or {})
    record["elapsed"] = round(run.elapsed, 3)
    record["updated_at"] = time.time()
    return record


__all__ = ["RunRecorder", "Redactor", "record_of", "record_root_run", "secret_values", "write_json_atomic"]
_WRITER: dict[str, Any] = {}


def _writer() -> dict[str, Any]:
    """This process as the record's writer (computed again in a forked child)."""
    global _WRITER
    if _WRITER.get("pid") != os.getpid():
        _WRITER = writer_identity()
    return _WRITER


def _tree_dict(run: Run, tool_calls: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    data = run.to_dict()
    data["max_iters"] = run.max_iters
    data["tool_calls"] = tool_calls.get(run.id, [])
    for step_data, step in zip(data["steps"], list(run.steps)):
        step_data["children"] = [_tree_dict(child, tool_calls) for child in list(step.children)]
    data["orphans"] = [_tree_dict(child, tool_calls) for child in list(run._orphans)]
    return data


def write_json_atomic(path: Path, data: Any, purpose: str | None = None, place: str | None = None) -> None:
    """Write ``data`` as JSON to a temporary file beside ``path`` and rename it over.

    With ``purpose``, the file is signed with the host key (`host_key`) as the file ``place`` (what it
    is, by name); without the key (a read-only home), it is written unsigned: readable, never trusted."""
    body = None
    if purpose is not None:
        try:
            body = signed_json(data, purpose, place or path.name)
        except HostKeyError:
            pass
    if body is None:
        body = json.dumps(data, indent=1, default=repr).encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(body)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


class RunRecorder:
    """Keeps the record of a root run (sub-agents nested in it) on disk while it runs.

    Args:
        run: the root run.
        workspace: the record goes to ``<workspace>/.deepagent/runs/<run-id>.json``.
        secrets: extra values to scrub (the LM's key; see `secret_values`).
        min_interval: least seconds between two writes during the run.
        budget: most share of the run's time spent writing its record.
    """

    MIN_INTERVAL = 1.0
    BUDGET = 0.05

    def __init__(self, run: Run, workspace: str | os.PathLike, *, secrets: Iterable[str] = (),
                 min_interval: float | None = None, budget: float | None = None):
        self.run = run
        self.path = runs_dir(workspace) / f"{run.id}.json"
        self.redact = default_redactor()
        self.redact.add(secrets)
        self.min_interval = self.MIN_INTERVAL if min_interval is None else min_interval
        self.budget = self.BUDGET if budget is None else budget
        self.files: dict[str, int] = {}
        self.tool_calls: dict[str, list[dict[str, Any]]] = {}
        self._spawned: dict[str, list[str]] = {}
        self.writes = 0
        self.error: Exception | None = None
        self._last_write = float("-inf")
        self._last_cost = 0.0
        self._lock = threading.RLock()
        self._timer: threading.Timer | None = None
        self.unsubscribe = run.subscribe(self.on_event)

    def on_event(self, event: Event) -> None:
        if event.kind in TRANSIENT:  # a step being written (core.model.streaming): nothing to record
            return
        if event.kind == FILE_WRITTEN:
            self.files[event.data["path"]] = event.data["size"]
        elif event.kind == SUBAGENT_STARTED:
            self._spawned.setdefault(event.run.id, []).append(event.data["child"].id)
        elif event.kind == TOOL_CALL:  # recorded when the tool returns: it owns the sub-agents started since
            step = event.run.current_step
            call = {"step": step.index if step else None, **event.data}
            spawned = self._spawned.pop(event.run.id, None)
            if spawned:
                call["subagents"] = spawned
            self.tool_calls.setdefault(event.run.id, []).append(call)
        if event.run is self.run and event.kind in (RUN_STARTED, RUN_FINISHED):
            self.flush()
            if event.kind == RUN_FINISHED:
                self.close()
            return
        self._maybe_flush()

    def _maybe_flush(self) -> None:
        wait = self._last_write + max(self.min_interval, self._last_cost / self.budget) - time.monotonic()
        if wait <= 0:
            self.flush()
            return
        with self._lock:
            if self._timer is None:
                self._timer = threading.Timer(wait, self._on_timer)
                self._timer.daemon = True
                self._timer.start()

    def _on_timer(self) -> None:
        with self._lock:
            self._timer = None
        try:
            self.flush()
        except Exception:  # the run is changing under us; the next event writes again
            pass

    def flush(self) -> None:
        """Write the record now."""
        with self._lock:
            started = time.monotonic()
            try:
                self.redact.refresh()
                write_json_atomic(self.path, self.redact(record_of(self.run, self.files, self.tool_calls)),
                                  purpose=RECORD_PURPOSE, place=record_place(self.path))
            except OSError as exc:  # a read-only workspace must not stop the agent
                self.error = exc
                return
            self.writes += 1
            self._last_write = time.monotonic()
            self._last_cost = self._last_write - started

    def close(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
        self.unsubscribe()


def record_root_run(agent: Any, run: Run, lms: dict[str, Any]) -> None:
    """The run hook (`core.loop.extensions`): keep a record of each root run (a sub-agent's is nested in it)."""
    register_lm_secrets(lms.get("lm"), lms.get("sub_lm"))  # before the run emits anything
    protect_logs()
    if run.parent is None and getattr(agent, "record_runs", True):
        RunRecorder(run, run.config["workspace"], secrets=secret_values(lms.get("lm"), lms.get("sub_lm"), environ={}))
