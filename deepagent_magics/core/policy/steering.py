"""Steering a run while it works: stop it after the current step, send the agent a note, edit its todos.

A run tree has one `Steering` inbox, on its root run (`steering_of`). Anything may post to it
from any thread (the dashboard's controls do, from the kernel thread that handles their
messages); the agent's loop reads it at its step boundaries, before it asks the LM for the next
step (`core.loop.pipeline.StepPredict` calls `before_step`):

- **stop**: the next step of every agent in the tree is not asked for; the run ends ``stopped``
  (`StopRequested`, which is `stopping.StopRun`: one exception for every stop), everything it did kept;
- **notes**: each note is shown to the root agent in every request from its next step on, after
  its REPL history (`NotedHistory`), and recorded on the run (a ``user_note`` event);
- **todo edits**: the root run's todo list is replaced at the next step boundary, so the agent's
  next ``read_todos()`` returns the edited list (a ``todos`` event, as for the agent's own edits).

The core offers the inbox; who posts to it (display/, a server) is not its business.
"""

from __future__ import annotations

import threading
from typing import Any

from dspy.primitives.repl_types import REPLHistory
from pydantic import Field

from ..run.secrets import scrub
from ..run.stopping import StopRun
from ..run.run_tree import tree_of
from ..run.event_kinds import USER_NOTE

MAX_NOTE_CHARS = 4_000
TODO_STATUSES = ("pending", "in_progress", "completed")
NOTES_HEAD = "=== Notes from the user, sent while you work (they take precedence over the task where they differ) ==="


StopRequested = StopRun  # the user asked the run to stop after its current step: the one stop exception


class Steering:
    """One run tree's inbox: a stop flag, notes to deliver, a todo list to apply (thread-safe)."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self._lock = threading.Lock()
        self._pending_notes: list[str] = []
        self.notes: list[str] = []  # delivered, in order
        self._todos: list[dict[str, str]] | None = None

    def request_stop(self) -> None:
        self.stop.set()

    def send_note(self, text: Any) -> bool:
        """Queue a note for the agent's next step (an empty one is ignored); True when queued."""
        note = str(text or "").strip()
        if not note:
            return False
        if len(note) > MAX_NOTE_CHARS:
            note = note[: MAX_NOTE_CHARS - 1] + "…"
        with self._lock:
            self._pending_notes.append(note)
        return True

    def edit_todos(self, todos: Any) -> list[dict[str, str]]:
        """Queue ``todos`` (checked: a list of {"content", "status"}) to replace the root's list at the next step."""
        items = check_todos(todos)
        with self._lock:
            self._todos = items
        return items

    def take_notes(self) -> list[str]:
        with self._lock:
            new, self._pending_notes = self._pending_notes, []
            self.notes.extend(new)
            return new

    def take_todos(self) -> list[dict[str, str]] | None:
        with self._lock:
            todos, self._todos = self._todos, None
            return todos


def check_todos(todos: Any) -> list[dict[str, str]]:
    """A todo list as the tools keep it; a malformed one is a one-line `ValueError`."""
    if not isinstance(todos, (list, tuple)):
        raise ValueError('todos must be a list of {"content": ..., "status": ...}')
    items = []
    for position, item in enumerate(todos):
        if not isinstance(item, dict) or not str(item.get("content", "")).strip():
            raise ValueError(f'todo #{position + 1} needs a non-empty "content"')
        status = str(item.get("status", "pending"))
        if status not in TODO_STATUSES:
            raise ValueError(f"todo #{position + 1} has status {status!r}; use one of {', '.join(TODO_STATUSES)}")
        items.append({"content": str(item["content"]).strip(), "status": status})
    return items


def steering_of(run: Any, create: bool = False) -> Steering | None:
    """The inbox of ``run``'s tree; made on first use when ``create``."""
    tree = tree_of(run)
    if tree is None:
        return None
    return tree.setdefault("steering", Steering) if create else tree.steering


class NotedHistory(REPLHistory):
    """The REPL history as the prompt shows it, followed by the user's notes."""

    notes: list[str] = Field(default_factory=list)
    shown: Any = None  # the history (maybe compacted) this one stands for

    def format(self) -> str:
        base = self.shown.format() if self.shown is not None else super().format()
        return base + "\n\n" + NOTES_HEAD + "\n" + "\n".join(f"- {note}" for note in self.notes)


def check_stop(session: Any) -> None:
    """Before an agent's next step: `StopRequested` when the user asked its tree to stop."""
    steering = steering_of(getattr(session, "run", None))
    if steering is not None and steering.stop.is_set():
        run = session.run
        raise StopRequested(f"stopped by the user after step {len(run.steps)}")


def before_step(session: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    """At the root agent's step boundary: apply the user's todo edits and show the user's notes."""
    run = getattr(session, "run", None)
    steering = steering_of(run)
    if steering is None:
        return kwargs
    if run.parent is not None:  # notes and todos are the root agent's
        return kwargs
    todos = steering.take_todos()
    if todos is not None:
        run.set_todos(todos)
    for note in steering.take_notes():
        note = scrub(note)
        run.emit(USER_NOTE, note=note, step=len(run.steps) + 1)
        run.config.setdefault("user_notes", []).append({"step": len(run.steps) + 1, "note": note})
    history = kwargs.get("repl_history")
    if steering.notes and isinstance(history, REPLHistory):
        noted = NotedHistory(entries=list(history.entries), max_output_chars=history.max_output_chars,
                             notes=list(steering.notes), shown=history)
        kwargs = {**kwargs, "repl_history": noted}
    return kwargs
