"""The dashboard's steering controls: stop after this step, a note to the agent, edit the todo list.

They post to the run tree's inbox (`core.policy.steering`); the agent's loop reads it at its next step.
Their widget messages are handled while the cell runs, on a kernel subshell (`subshell`), so a
click takes effect without waiting for the cell to end. Where that cannot work (no subshells),
the controls are not offered and a line says why.

The todo list is edited as text, one item a line: ``- [ ] pending``, ``- [~] in progress``,
``- [x] completed`` (a line without a box is pending).
"""

from __future__ import annotations

import re
from typing import Any

import ipywidgets as W

from ..core.run.run import Run
from ..core.policy.steering import steering_of
from .markup import esc
from .subshell import route_to_subshell

MARKS = {"pending": " ", "in_progress": "~", "completed": "x"}
_LINE = re.compile(r"^\s*(?:[-*]\s*)?(?:\[(?P<mark>[ xX~>-]?)\]\s*)?(?P<content>.*?)\s*$")
STATUS_OF = {"": "pending", " ": "pending", "x": "completed", "X": "completed", "~": "in_progress",
             ">": "in_progress", "-": "in_progress"}
CLASS = "deepagent-steer"


def todos_text(todos: list[dict[str, str]]) -> str:
    return "\n".join(f"- [{MARKS.get(item.get('status', 'pending'), ' ')}] {item.get('content', '')}"
                     for item in todos)


def parse_todos_text(text: str) -> list[dict[str, str]]:
    """The todo list a text of ``- [ ] item`` lines stands for (empty lines skipped)."""
    items = []
    for line in str(text or "").splitlines():
        match = _LINE.match(line)
        if match is None or not match.group("content"):
            continue
        items.append({"content": match.group("content"), "status": STATUS_OF[match.group("mark") or ""]})
    return items


class SteeringControls:
    """The controls for one root run (see the module docstring)."""

    def __init__(self, run: Run):
        self.run = run
        self.inbox = steering_of(run, create=True)
        self.stop = W.Button(description="Stop after this step", icon="stop", button_style="warning",
                             layout=W.Layout(width="auto", min_width="13em"),
                             tooltip="The agent finishes the step it is in, then the run ends 'stopped'")
        self.note = W.Textarea(placeholder="A note to the agent: it reads it in its next step",
                               layout=W.Layout(width="100%", height="3.2em"))
        self.send = W.Button(description="Send note", icon="paper-plane")
        self.todos = W.Textarea(placeholder="- [ ] a todo per line   (- [~] in progress, - [x] done)",
                                layout=W.Layout(width="100%", height="5em"))
        self.apply = W.Button(description="Apply todos", icon="check",
                              tooltip="Replace the agent's todo list: its next read_todos() returns this")
        self.feedback = W.HTML("")
        for widget, name in ((self.stop, "stop"), (self.note, "note"), (self.send, "send"),
                             (self.todos, "todos"), (self.apply, "apply")):
            widget.add_class(f"dag-steer-{name}")
        self._shown_todos = ""
        self.live = route_to_subshell([self.stop, self.note, self.send, self.todos, self.apply])
        self.stop.on_click(self._on_stop)
        self.send.on_click(self._on_send)
        self.apply.on_click(self._on_apply)
        # Two places in the dashboard: the todo editor under the todos, the rest under the trajectory.
        self.todo_editor = W.VBox([self.todos, self.apply] if self.live else [])
        self.step_controls = W.VBox([W.HBox([self.stop, W.VBox([self.note, self.send], layout=W.Layout(flex="1 1 0"))],
                                            layout=W.Layout(width="100%", gap="8px")), self.feedback]
                                    if self.live else [self.feedback])
        if not self.live:
            self.feedback.value = ("<small>Steering controls need a kernel with subshells (ipykernel 7 or later): "
                                   "interrupt the kernel to stop a run.</small>")
        for widget in (self.todo_editor, self.step_controls):
            widget.add_class(CLASS)

    # ------------------------------------------------------------ clicks (on the kernel's subshell thread)
    def _on_stop(self, _: Any = None) -> None:
        self.inbox.request_stop()
        self.stop.disabled = True
        self.stop.description = "Stopping after this step"
        self._say("The run stops after the step it is in.")

    def _on_send(self, _: Any = None) -> None:
        if self.inbox.send_note(self.note.value):
            self._say(f"Note sent: the agent reads it in its next step. <i>{esc(self.note.value[:200])}</i>")
            self.note.value = ""
        else:
            self._say("The note is empty: nothing sent.")

    def _on_apply(self, _: Any = None) -> None:
        try:
            items = self.inbox.edit_todos(parse_todos_text(self.todos.value))
        except ValueError as exc:
            self._say(f"Not applied: {esc(str(exc))}")
            return
        self._shown_todos = self.todos.value
        self._say(f"Todo list of {len(items)} items applied: the agent sees it from its next step.")

    def _say(self, text: str) -> None:
        self.feedback.value = f"<small>{text}</small>"

    # ------------------------------------------------------------ the run (main thread)
    def show_todos(self, todos: list[dict[str, str]]) -> None:
        """The agent changed its todos: show them for editing, unless the user is editing them."""
        if self.todos.value == self._shown_todos:
            self.todos.value = self._shown_todos = todos_text(todos)

    def close(self) -> None:
        for widget in (self.stop, self.note, self.send, self.todos, self.apply):
            widget.disabled = True
