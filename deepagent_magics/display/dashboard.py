"""The live dashboard: ipywidgets that show a run while it works.

Layout, top to bottom: a status line; the todos beside the workspace (file tree
and a file's head); the trajectory, one collapsible entry per step with each
sub-agent's run nested, collapsible, under the step that spawned it; the result.

The dashboard only listens to the run's events. Every update appends a widget or
patches one small widget: a new step adds one entry to the current page of 50
(so the message a step sends does not grow with the run), a finished step
re-renders only its own body, and the status line is one HTML value. Nothing
re-renders the trajectory.

Threads and cells are `show.show_run`'s business: it calls `on_event` under one
lock, in the context of the cell that started the run.
"""

from __future__ import annotations

import time
from typing import Any

import ipywidgets as W
from ipywidgets.widgets.widget_string import HTMLStyle

from ..core.loop.attempts import REPLY_RETRY
from ..core.model.compaction import COMPACTION
from ..core.model.retries import PROVIDER_RETRY
from ..core.run.run import (
    FILE_WRITTEN,
    LM_USAGE,
    RUN_FINISHED,
    RUN_STARTED,
    STATUS,
    STEP_FINISHED,
    STEP_STARTED,
    SUBAGENT_FINISHED,
    SUBAGENT_STARTED,
    TODOS,
    Event,
    Run,
)
from ..core.run.event_kinds import LLM_QUERY_STREAMING, STEP_STREAMING
from ..core.workspace.workspace import Workspace
from .controls import SteeringControls
from .markup import (
    STYLE,
    esc,
    file_head,
    head_line,
    not_sandboxed,
    highlight_code,
    status_line,
    step_body,
    step_title,
    todos_html,
    tree_html,
)
from .result import result_bundle
from .retries import line_html, note_html, retry_line, waiting_area
from .streaming import query_html, writing_panel

PAGE_SIZE = 50
TREE_MAX_FILES = 300
TREE_RESCAN_SECONDS = 2.0  # files the agent's code wrote with open() show up within this (tools: at once)
DASHBOARD_CLASS = "deepagent-dashboard"
RUN_WORKSPACE = object()  # the dashboard shows the files of the run's configured workspace


def _box(title: str, *children: W.Widget, flex: str = "1 1 0", style: str = "") -> W.VBox:
    label = W.HTML(f'{style}<div class="dag-panel-title">{esc(title)}</div>')
    return W.VBox([label, *children], layout=W.Layout(flex=flex, min_width="0", padding="4px 8px",
                                                      border="1px solid var(--jp-border-color2, #ddd)"))


# --------------------------------------------------------------------------- pieces
class _Shared:
    """Layouts and styles every step's widgets share: a widget made per step costs one comm, not three."""

    _made: dict[str, W.Widget] = {}

    @classmethod
    def get(cls, kind: str) -> W.Widget:
        widget = cls._made.get(kind)
        if widget is None or widget.comm is None:  # closed with its kernel's widgets
            widget = cls._made[kind] = {"layout": W.Layout, "html_style": HTMLStyle}[kind]()
        return widget


class StepView:
    """One step: a collapsible entry with its reasoning, highlighted code and output, then its sub-agents.

    Two widgets per step (the entry and its body; the sub-agents' box only when one starts),
    and the code is highlighted once. ``notes``: the retries before the step arrived (retries.py)."""

    def __init__(self, index: int, reasoning: str, code: str, notes: list[str] | None = None):
        self.index, self.reasoning, self.code = index, reasoning, code
        self.code_html = highlight_code(code)
        self.notes = list(notes or [])
        self.retried: list[str] = []  # its llm_queries' retries
        self.output: str | None = None
        self.live: str | None = None  # the retry of an llm_query the step's code is waiting for
        self.queries: dict[Any, str] = {}  # the llm_queries being answered (core/model/streaming.py)
        self.body = W.HTML(self._html(), layout=_Shared.get("layout"), style=_Shared.get("html_style"))
        self.subagents: W.VBox | None = None
        self.widget = W.Accordion(children=[self.body], titles=(step_title(index, reasoning, None),),
                                  layout=_Shared.get("layout"))

    def _html(self) -> str:
        return (note_html(self.notes) + step_body(self.reasoning, self.code, self.output, self.code_html)
                + "".join(self.queries.values()) + (line_html(self.live) if self.live else "")
                + (note_html(self.retried, during=True) if self.output is not None else ""))

    def finish(self, output: str) -> None:
        self.output, self.live = output, None
        self.queries.clear()
        self.body.value = self._html()
        self.widget.titles = (step_title(self.index, self.reasoning, output),)

    def querying(self, data: dict[str, Any]) -> None:
        """An llm_query of this running step is being answered (gone when it is done)."""
        if self.output is not None:
            return
        if data.get("done"):
            if self.queries.pop(data.get("query"), None) is None:
                return
        else:
            self.queries[data.get("query")] = query_html(data)
        self.body.value = self._html()

    def retrying(self, line: str) -> None:
        """An llm_query of this running step is being retried: the line shows until the step ends."""
        self.retried.append(line)
        self.live = line
        self.body.value = self._html()

    def add_subagent(self, widget: W.Widget) -> None:
        if self.subagents is None:
            self.subagents = W.VBox([], layout=W.Layout(margin="0 0 0 12px"))
            self.widget.children = [W.VBox([self.body, self.subagents])]
        self.subagents.children = (*self.subagents.children, widget)


class RunView:
    """One run's trajectory; a sub-agent's also carries its status and todos, in a collapsible entry."""

    def __init__(self, run: Run, nested: bool):
        self.run = run
        self.nested = nested
        self.steps: list[StepView] = []
        self.pages = W.VBox([])
        self._page: W.VBox | None = None
        self.orphans = W.VBox([])
        if nested:
            self.status = W.HTML(status_line(run))
            self.todos = W.HTML("")
            self.widget = W.Accordion(children=[W.VBox([self.status, self.todos, self.orphans, self.pages])],
                                      titles=(self.title(),))
        else:
            self.widget = W.VBox([self.orphans, self.pages])

    def title(self) -> str:
        run = self.run
        mark = " · not sandboxed" if not_sandboxed(run) else ""
        return f"↳ sub-agent {run.id[-6:]} · {head_line(run.task, 70)} · {run.status} · {len(run.steps)} steps{mark}"

    def add_step(self, index: int, reasoning: str, code: str) -> StepView:
        waiting = getattr(self, "waiting", None)  # the retries before this step arrived (retries.py)
        step = StepView(index, reasoning, code, waiting.take() if waiting is not None else None)
        self.steps.append(step)
        if self._page is None or len(self._page.children) >= PAGE_SIZE:
            self._page = W.VBox([])
            self.pages.children = (*self.pages.children, self._page)
        self._page.children = (*self._page.children, step.widget)
        return step

    def add_marker(self, widget: W.Widget) -> None:
        """A mark between steps (where compaction happened), in the current page."""
        if self._page is None:
            self._page = W.VBox([])
            self.pages.children = (*self.pages.children, self._page)
        self._page.children = (*self._page.children, widget)

    def step(self, index: int | None) -> StepView | None:
        if index is None or not 0 < index <= len(self.steps):
            return None
        return self.steps[index - 1]

    def retry(self, kind: str, data: dict[str, Any]) -> None:
        """Show a retry where it happens: the running step's llm_query, else the step being asked for."""
        running = self.steps[-1] if self.steps and self.steps[-1].output is None else None
        if running is not None and kind == PROVIDER_RETRY:
            running.retrying(retry_line(kind, data, f"llm_query in step {running.index}"))
        else:
            waiting_area(self).show(retry_line(kind, data, f"step {data.get('step') or len(self.steps) + 1}"))

    def refresh(self) -> None:
        if self.nested:
            self.status.value = status_line(self.run)
            self.widget.titles = (self.title(),)


def compaction_html(data: dict[str, Any]) -> str:
    """The mark where the prompt was compacted: which steps, how much smaller, and the summary (folded)."""
    summary = esc(data.get("summary", ""))
    return (f'<details class="deepagent-compaction"><summary>⟲ compacted steps 1–{esc(data.get("summarized"))} before '
            f'step {esc(data.get("step"))}: prompt history {data.get("chars_before", 0):,} → {data.get("chars_after", 0):,} chars '
            f'(every step stays below and in history())</summary><pre style="white-space:pre-wrap">{summary}</pre></details>')


# --------------------------------------------------------------------------- the dashboard
class Dashboard:
    """The widgets for one root run, fed by its events (``on_event``)."""

    def __init__(self, run: Run, steerable: bool = False, workspace: Any = RUN_WORKSPACE,
                 result_inside: bool = True):
        """``workspace``: the folder whose files to show; by default the run's own (a past run's: show.py).
        ``result_inside``: False when a finished run's result is the cell's own output (display/result.py)."""
        self.run = run
        self._workspace_root = workspace
        self.result_inside = result_inside
        self.controls = SteeringControls(run) if steerable else None  # stop, a note, edit todos (controls.py)
        self.status = W.HTML(status_line(run))
        self.todos = W.HTML(todos_html(run.todos))
        self.tree = W.HTML(tree_html([], set()))
        self.preview_choice = W.Dropdown(options=[], description="Preview", layout=W.Layout(width="95%"))
        self.preview = W.HTML("")
        self.preview_choice.observe(self._on_preview_choice, names="value")
        self.result = W.Output()
        self.result_box = _box("Result", self.result, flex="1 1 auto")
        self.result_box.layout.display = "none"
        self.root = RunView(run, nested=False)
        self.views: dict[str, RunView] = {run.id: self.root}
        self.workspace: Workspace | None = None
        self.written: dict[str, int] = {}  # what this run wrote through its tools
        self.files: dict[str, int] = {}  # the workspace as last scanned, patched by every file written since
        self._more_files = False
        self._scanned_at = float("-inf")
        self._open_step: StepView | None = None
        self.writing: dict[str, float] = {}  # run id: seconds the model has been writing its next step
        self._tree_files: list[str] = []
        todo_box = [self.todos] + ([self.controls.todo_editor] if self.controls is not None else [])
        panels = W.HBox([_box("Todos", *todo_box), _box("Workspace", self.tree, self.preview_choice, self.preview)],
                        layout=W.Layout(width="100%"))
        controls = self.controls
        self.widget = W.VBox([self.status, panels, _box("Trajectory", self.root.widget,
                                                        *([controls.step_controls] if controls else []),
                                                        flex="1 1 auto", style=STYLE),
                              self.result_box], layout=W.Layout(width="100%"))
        self.widget.add_class(DASHBOARD_CLASS)

    # ------------------------------------------------------------------ events
    def on_event(self, event: Event) -> None:
        kind, run, data = event.kind, event.run, event.data
        view = self._view_for(run)
        if kind == RUN_STARTED and run is self.run:
            root = run.config.get("workspace") if self._workspace_root is RUN_WORKSPACE else self._workspace_root
            self.workspace = Workspace(root) if root else None
            self.refresh_tree()
        elif kind == STEP_STREAMING and view is not None:  # the model is writing a step (streaming.py)
            self.writing[run.id] = data.get("elapsed") or 0.0
            writing_panel(view).show(data)
        elif kind == STEP_STARTED and view is not None:
            if self.writing.pop(run.id, None) is not None:
                writing_panel(view).clear()
            step = view.add_step(data["index"], data.get("reasoning", ""), data.get("code", ""))
            if view is self.root:  # the newest top-level step is open, the one before closes
                if self._open_step is not None:
                    self._open_step.widget.selected_index = None
                step.widget.selected_index = 0
                self._open_step = step
        elif kind == STEP_FINISHED and view is not None:
            step = view.step(data["index"])
            if step is not None:
                step.finish(data.get("output") or "")
            if time.monotonic() - self._scanned_at >= TREE_RESCAN_SECONDS:
                self.refresh_tree()
        elif kind == TODOS:
            if run is self.run:
                self.todos.value = todos_html(data["todos"])
                if self.controls is not None:
                    self.controls.show_todos(data["todos"])
            elif view is not None and view.nested:
                view.todos.value = todos_html(data["todos"])
        elif kind == FILE_WRITTEN:
            self.written[data["path"]] = self.files[data["path"]] = data.get("size", 0)
            self.refresh_tree(rescan=False)
            self.show_preview(data["path"])
        elif kind == SUBAGENT_STARTED:
            self._view_for(data["child"])
        elif kind == LLM_QUERY_STREAMING and view is not None:
            step = view.step(data.get("step"))
            if step is not None:
                step.querying(data)
        elif kind in (REPLY_RETRY, PROVIDER_RETRY) and view is not None:
            view.retry(kind, data)
        elif kind == COMPACTION and view is not None:
            view.add_marker(W.HTML(compaction_html(data)))
        elif kind == RUN_FINISHED and run is self.run:
            if self.controls is not None:
                self.controls.close()
            self.refresh_tree()
            self.show_result()
        if kind == RUN_FINISHED and self.writing.pop(run.id, None) is not None and view is not None:
            writing_panel(view).clear()  # ended while a step was being written (an interrupt, a fault)
        if kind == RUN_FINISHED and view is not None and getattr(view, "waiting", None) is not None:
            view.waiting.take()  # no step will arrive: the status line says why
        if view is not None and view is not self.root and kind in (STEP_STARTED, STEP_FINISHED, LM_USAGE, STATUS,
                                                                   RUN_STARTED, RUN_FINISHED, SUBAGENT_FINISHED):
            view.refresh()
        if kind != LM_USAGE:  # usage shows with the step the call proposes, an event later
            self.status.value = status_line(self.run, writing=self.writing.get(self.run.id))

    def _view_for(self, run: Run) -> RunView | None:
        """The view of ``run``, made (nested under its parent's step) the first time it is seen."""
        view = self.views.get(run.id)
        if view is not None or run.parent is None:
            return view
        parent = self._view_for(run.parent)
        if parent is None:
            return None
        view = self.views[run.id] = RunView(run, nested=True)
        step = parent.step(run.parent_step)
        if step is not None:
            step.add_subagent(view.widget)
        else:
            parent.orphans.children = (*parent.orphans.children, view.widget)
        return view

    # ------------------------------------------------------------------ panels
    def refresh(self) -> None:
        """Patch the status lines (after a replay has restored the run's times)."""
        self.status.value = status_line(self.run)
        for view in self.views.values():
            view.refresh()

    def refresh_tree(self, rescan: bool = True) -> None:
        """Show the workspace tree: scanned again (``rescan``), or as patched by the files written since."""
        if rescan and self.workspace is not None:
            scanned = self.workspace.tree(max_entries=TREE_MAX_FILES + 1)
            self.files = dict(scanned[:TREE_MAX_FILES]) | self.written
            self._more_files = len(scanned) > TREE_MAX_FILES
            self._scanned_at = time.monotonic()
        files = sorted(self.files.items())[:TREE_MAX_FILES]
        more = self._more_files or len(self.files) > TREE_MAX_FILES
        value = tree_html(files, set(self.written), more)
        if value != self.tree.value:
            self.tree.value = value
        names = [path for path, _ in sorted(files)]
        if names != self._tree_files:
            self._tree_files = names
            current = self.preview_choice.value
            with self.preview_choice.hold_trait_notifications():
                self.preview_choice.options = names
                self.preview_choice.value = current if current in names else None

    def show_preview(self, path: str) -> None:
        if path in self._tree_files and self.preview_choice.value != path:
            self.preview_choice.value = path  # the observer renders it
        else:
            self._render_preview(path)

    def _on_preview_choice(self, change: dict[str, Any]) -> None:
        if change["new"]:
            self._render_preview(change["new"])

    def _render_preview(self, path: str) -> None:
        if self.workspace is None:
            self.preview.value = ""
            return
        try:
            target = self.workspace.resolve(path)
        except ValueError:
            self.preview.value = ""
            return
        self.preview.value = f"<small>{esc(path)}</small>{file_head(target)}"

    def show_result(self) -> None:
        run = self.run
        if run.status == "finished" and not self.result_inside:
            return
        if run.status == "finished":
            data = result_bundle(run.result, run.extracted)  # sanitised HTML (safe_text.py), marked if extracted
        else:
            text = {"interrupted": "Interrupted: the trajectory so far is kept.",
                    "failed": f"The agent failed: {run.error}",
                    "stopped": f"Stopped: {run.error or 'by the user'}; everything so far is kept.",
                    "budget_exhausted": f"Spend cap reached: {run.error}; everything so far is kept.",
                    }.get(run.status, run.status)
            data = {"text/html": f'<div class="dag-error">{esc(text)}</div>', "text/plain": text}
        self.result.outputs = ({"output_type": "display_data", "data": data, "metadata": {}},)
        self.result_box.layout.display = None

    def close(self) -> None:
        """Nothing to stop: the widgets stay, and the preview keeps working after the cell."""
        self.status.value = status_line(self.run)
