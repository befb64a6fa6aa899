"""The event log: every event of a root run and its sub-agents, one JSON line each, as it happens.

Beside the record (``<id>.json``, the summary, rewritten) each root run leaves
``<workspace>/.deepagent/runs/<id>.events.jsonl``, appended to and never rewritten: the
same events the dashboard listens to, scrubbed of secrets like the record. It is what a
live client follows (the run API's Server-Sent Events, ``follow_events``).

A line is ``{"seq", "time", "kind", "run", "parent", "depth", "data"}``: ``seq`` counts
from 1 in the order events were written, ``run`` is the id of the run that emitted it
(a sub-agent's own id) and ``parent`` its parent's id (``None`` for the root). Each line
is one ``write`` to a file opened for appending, so a process killed mid-run leaves whole
lines, and a log whose root run has no ``run_finished`` line reads back as ended mid-run
(`EventLog.ended_mid_run`): a crash, or a run still going.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

from ..core.run.run import RUN_FINISHED, Event, Run
from ..core.run.event_kinds import TRANSIENT
from ..core.run.secrets import Redactor, secret_values
from .store import runs_dir

SUFFIX = ".events.jsonl"
MAX_LINE = 1 << 20  # bytes: a longer line is followed as a stub (`LogTail`), never read whole
READ_CHUNK = 1 << 20  # bytes read from the log at a time
STUB_HEAD = 4096  # bytes of an over-long line kept to read its seq, kind and run from
KIND = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")  # an event's kind: a name, never a line break
REFRESH_SECRETS = 1.0  # least seconds between two looks at the environment for new secrets


def events_path(workspace: str | os.PathLike, run_id: str) -> Path:
    return runs_dir(workspace) / f"{run_id}{SUFFIX}"


def plain(value: Any, depth: int = 0) -> Any:
    """``value`` as JSON-able data: a `Run` by its id and task, anything unknown by its repr."""
    if isinstance(value, (str, int, float, bool, type(None))):
        return value
    if isinstance(value, Run):
        return {"id": value.id, "task": value.task, "depth": value.depth, "parent_step": value.parent_step}
    if depth > 20:
        return repr(value)
    if isinstance(value, dict):
        return {str(key): plain(item, depth + 1) for key, item in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [plain(item, depth + 1) for item in value]
    try:
        return repr(value)
    except Exception:  # a value's own __repr__ may raise anything: its type instead
        return f"<unrepresentable {type(value).__name__}>"


def event_line(event: Event, seq: int) -> dict[str, Any]:
    """The JSON-able line for ``event`` (before redaction)."""
    run = event.run
    return {"seq": seq, "time": event.time, "kind": event.kind, "run": run.id,
            "parent": run.parent.id if run.parent is not None else None, "depth": run.depth,
            "data": plain(event.data)}


class EventLogWriter:
    """Appends every event of ``run`` (sub-agents included) to its event log as it happens."""

    def __init__(self, run: Run, workspace: str | os.PathLike, *, secrets: Iterable[str] = ()):
        self.run = run
        self.path = events_path(workspace, run.id)
        self.redact = Redactor(set(secrets) | secret_values())
        self.seq = 0
        self.error: Exception | None = None
        self._refreshed = time.monotonic()
        self._lock = threading.Lock()
        self._fd: int | None = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        except OSError as exc:  # a read-only workspace must not stop the agent
            self.error = exc
        self.unsubscribe = run.subscribe(self.on_event)

    def on_event(self, event: Event) -> None:
        if event.kind in TRANSIENT:  # a step being written (core.model.streaming): shown, never logged
            return
        with self._lock:
            if self._fd is None:
                return
            if time.monotonic() - self._refreshed > REFRESH_SECRETS:
                self.redact.refresh()
                self._refreshed = time.monotonic()
            self.seq += 1
            line = json.dumps(self.redact(event_line(event, self.seq)), ensure_ascii=False, default=repr)
            try:
                os.write(self._fd, (line + "\n").encode("utf-8"))
            except OSError as exc:
                self.error = exc
        if event.run is self.run and event.kind == RUN_FINISHED:
            self.close()

    def close(self) -> None:
        self.unsubscribe()
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


def log_root_run(agent: Any, run: Run, lms: dict[str, Any]) -> None:
    """The run hook (`core.loop.extensions`): log the events of each root run (a sub-agent's go in it)."""
    if run.parent is None and getattr(agent, "record_runs", True):
        EventLogWriter(run, run.config["workspace"], secrets=secret_values(lms.get("lm"), lms.get("sub_lm")))


# ------------------------------------------------------------------------------------ reading
@dataclass
class EventLog:
    """What a log holds: its events, and whether the root run's end is among them."""

    path: Path
    events: list[dict[str, Any]] = field(default_factory=list)
    finished: bool = False  # the root run's run_finished is logged
    torn: bool = False  # the last line was cut short (the writer was killed while writing it)

    @property
    def ended_mid_run(self) -> bool:
        """True when the log stops before the root run finished: a crash (or a run still going)."""
        return not self.finished

    @property
    def root(self) -> str | None:
        return self.events[0]["run"] if self.events else None

    @property
    def status(self) -> str | None:
        """The root run's final status, or None if it never finished."""
        for event in reversed(self.events):
            if event["kind"] == RUN_FINISHED and event["parent"] is None:
                return event["data"].get("status")
        return None


def _is_root_end(event: dict[str, Any]) -> bool:
    return event.get("kind") == RUN_FINISHED and event.get("parent") is None


def _parse(line: bytes) -> dict[str, Any] | None:
    """The event on ``line``, or None when it is not one: a log may have been planted, so a line's
    ``seq`` must be a whole number and its ``kind`` a plain name (what the SSE stream writes as is)."""
    try:
        event = json.loads(line)
    except ValueError:
        return None
    return event if isinstance(event, dict) and _well_formed(event) else None


def _well_formed(event: dict[str, Any]) -> bool:
    seq, kind = event.get("seq"), event.get("kind")
    return (isinstance(seq, int) and not isinstance(seq, bool) and seq >= 0
            and isinstance(kind, str) and KIND.fullmatch(kind) is not None
            and isinstance(event.get("run", ""), str)
            and (event.get("parent") is None or isinstance(event.get("parent"), str)))


def _stub(head: bytes, size: int) -> dict[str, Any] | None:
    """The event of a line too long to read whole, from its first bytes: the writer puts ``seq``,
    ``time``, ``kind``, ``run``, ``parent`` and ``depth`` before ``data``; None if they are not there."""
    cut = head.find(b', "data": ')
    if cut < 0:
        return None
    event = _parse(head[:cut] + b"}")
    if event is None:
        return None
    event["data"] = {"omitted": f"this event's line is {size} bytes, over the {MAX_LINE}-byte limit of a "
                                "followed event; the run's record has what it holds"}
    return event


def read_events(path: str | os.PathLike, after: int = 0) -> EventLog:
    """The events of the log at ``path`` with ``seq`` above ``after``."""
    log = EventLog(Path(path))
    with open(path, "rb") as handle:
        data = handle.read()
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    elif lines:  # no newline at the end: the writer died in the middle of this line
        lines.pop()
        log.torn = True
    for line in lines:
        event = _parse(line)
        if event is None:
            log.torn = True
            continue
        if _is_root_end(event):
            log.finished = True
        if event["seq"] > after:
            log.events.append(event)
    return log


class LogTail:
    """Reads a growing log a piece at a time: each `read` returns the events of the lines appended since the last.

    ``done`` turns true once the root run's ``run_finished`` has been read. A log that does
    not exist yet reads as empty (the run has not started writing). The log is read in chunks
    and a line longer than `MAX_LINE` is never held whole: it becomes a stub of the same event
    (its ``data`` replaced by a note), or is skipped if its head is not an event's. Lines that
    are not well-formed events (`_parse`) are skipped.
    """

    def __init__(self, path: str | os.PathLike, after: int = 0):
        self.path = Path(path)
        self.after = after
        self.offset = 0
        self.pending = b""
        self.overlong = 0  # bytes of the over-long line being skipped (0: none)
        self.head = b""  # its first bytes
        self.done = False

    def read(self) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        try:
            with open(self.path, "rb") as handle:
                handle.seek(self.offset)
                while True:
                    chunk = handle.read(READ_CHUNK)
                    if not chunk:
                        break
                    self.offset += len(chunk)
                    self._take(chunk, events)
        except FileNotFoundError:
            return []
        return events

    def _take(self, chunk: bytes, events: list[dict[str, Any]]) -> None:
        while chunk:
            end = chunk.find(b"\n")
            piece, chunk = (chunk, b"") if end < 0 else (chunk[:end], chunk[end + 1:])
            if self.overlong:
                self.overlong += len(piece)
            else:
                self.pending += piece
                if len(self.pending) > MAX_LINE:
                    self.head, self.overlong, self.pending = self.pending[:STUB_HEAD], len(self.pending), b""
            if end < 0:
                return
            if self.overlong:
                event, self.overlong, self.head = _stub(self.head, self.overlong), 0, b""
            else:
                event, self.pending = _parse(self.pending), b""
            self._keep(event, events)

    def _keep(self, event: dict[str, Any] | None, events: list[dict[str, Any]]) -> None:
        if event is None or self.done:
            return
        if event["seq"] > self.after:
            events.append(event)
        if _is_root_end(event):
            self.done = True


def follow_events(path: str | os.PathLike, after: int = 0, *, poll: float = 0.1,
                  idle_timeout: float | None = None, stop: threading.Event | None = None
                  ) -> Iterator[dict[str, Any]]:
    """Yield the log's events after ``after``, then new ones as they are appended, until the root run ends.

    Waits for the file to appear. Stops early when ``stop`` is set, or when nothing new has
    been appended for ``idle_timeout`` seconds (a crashed run's log never ends by itself).
    """
    tail, last_new = LogTail(path, after), time.monotonic()
    while stop is None or not stop.is_set():
        offset = tail.offset
        yield from tail.read()
        if tail.done:
            return
        if tail.offset != offset:
            last_new = time.monotonic()
        elif idle_timeout is not None and time.monotonic() - last_new > idle_timeout:
            return
        time.sleep(poll)
