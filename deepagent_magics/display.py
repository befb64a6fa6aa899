"""How a run is shown in the cell that started it (and how a past run is shown again).

`show_run` picks the live widget dashboard when the frontend can render widgets (a
Jupyter kernel with a comm manager), else a text rendering: one progress line per
step, then a summary. ``mode="widgets"`` or ``"text"`` forces either. Both only
listen to the run's events.

Events can come from any thread (sub-agents run beside the main one). Every view's
listener is called under one lock and, off the main thread, inside a copy of the
context of the cell that started the run: ipykernel 7 takes the parent header of
what it sends from that context, so updates from a sub-agent's thread land in the
running cell, not in whichever request a thread's own context last saw.
"""

from __future__ import annotations

import contextvars
import sys
import threading
from typing import Any, Callable

from .records import replay, tree_usage
from .run import RUN_FINISHED, STEP_FINISHED, SUBAGENT_STARTED, Event, Run

MODES = ("auto", "widgets", "text")


def has_widget_frontend(shell: Any) -> bool:
    """True in a Jupyter kernel (a ZMQ shell whose kernel has a comm manager); False in a terminal."""
    kernel = getattr(shell, "kernel", None)
    if kernel is None or getattr(kernel, "comm_manager", None) is None:
        return False
    try:
        import ipywidgets  # noqa: F401
    except ImportError:
        return False
    return True


def choose_mode(shell: Any, mode: str = "auto") -> str:
    if mode not in MODES:
        raise ValueError(f"display mode must be one of {', '.join(MODES)}, not {mode!r}")
    if mode != "auto":
        return mode
    return "widgets" if has_widget_frontend(shell) else "text"


class Routed:
    """A listener called under one lock, in the starting cell's context whatever thread emits."""

    def __init__(self, listener: Callable[[Event], None]):
        self.listener = listener
        self.context = contextvars.copy_context()
        self.thread = threading.current_thread()
        self.lock = threading.RLock()

    def __call__(self, event: Event) -> None:
        with self.lock:
            if threading.current_thread() is self.thread:
                self.listener(event)
            else:
                self.context.copy().run(self.listener, event)


# --------------------------------------------------------------------------- text
class TextProgress:
    """One line per finished step (sub-agents indented under their parent), then a summary."""

    def __init__(self, run: Run, stream: Any = None, show_result: bool = False):
        self.run = run
        self.stream = stream
        self.shows_result = show_result
        self.unsubscribe = run.subscribe(Routed(self.on_event))

    def _write(self, text: str) -> None:
        stream = self.stream or sys.stdout
        # Bypass the per-thread capture of the agent's own output (capture._Router).
        stream = getattr(stream, "_stream", stream) if type(stream).__name__ == "_Router" else stream
        print(text, file=stream, flush=True)

    def on_event(self, event: Event) -> None:
        run = event.run
        indent = "  " * (run.depth - self.run.depth)
        if event.kind == STEP_FINISHED:
            step = run.steps[event.data["index"] - 1]
            output = event.data.get("output") or ""
            mark = "✗" if output.startswith("[Error]") else "✓"
            head = (step.reasoning.strip().splitlines() or [""])[0][:80]
            self._write(f"{indent}[{run.id[-6:]}] step {step.index}/{run.max_iters or '?'} {mark} {head}")
        elif event.kind == SUBAGENT_STARTED:
            child = event.data["child"]
            task = (child.task.strip().splitlines() or [""])[0][:70]
            self._write(f"{indent}  ↳ sub-agent {child.id[-6:]} (step {event.data.get('step')}): {task}")
        elif event.kind == RUN_FINISHED:
            self._write(indent + summary(run))
            if run is self.run and self.shows_result and run.status == "finished":
                self._write(f"\n{run.result}")

    def close(self) -> None:
        self.unsubscribe()


def summary(run: Run) -> str:
    """One line: status, steps, sub-agents, usage, time, todos, files."""
    usage = tree_usage(run)
    children = _count_children(run)
    parts = [f"{len(run.steps)} steps" + (f" (+{children} sub-agents)" if children else ""),
             f"{usage.lm_calls} LM calls", f"{usage.tokens:,} tokens", f"${usage.cost:.4f}", f"{run.elapsed:.1f}s"]
    if run.todos:
        done = sum(item.get("status") == "completed" for item in run.todos)
        parts.append(f"todos {done}/{len(run.todos)} completed")
    if run.files_written:
        shown = ", ".join(run.files_written[:5]) + (", ..." if len(run.files_written) > 5 else "")
        parts.append(f"wrote {shown}")
    head = f"{run.status}" + (f" ({run.error})" if run.error and run.status != "finished" else "")
    return f"{head}: " + ", ".join(parts)


def _count_children(run: Run) -> int:
    return sum(1 + _count_children(child) for child in run.children)


# --------------------------------------------------------------------------- choosing
def show_run(run: Run, shell: Any = None, quiet: bool = False, mode: str = "auto") -> Any:
    """Start showing ``run`` in the current cell; returns an object with ``close()``.

    ``shows_result`` on the returned object tells whether it shows the result itself.
    """
    if quiet:
        return _Nothing()
    if choose_mode(shell, mode) == "text":
        # In a terminal the summary prints the result; a notebook renders it as Markdown.
        return TextProgress(run, show_result=getattr(shell, "kernel", None) is None)
    from IPython.display import display

    from .dashboard import Dashboard

    dashboard = Dashboard(run)
    dashboard.shows_result = True
    unsubscribe = run.subscribe(Routed(dashboard.on_event))
    display(dashboard.widget)
    dashboard.close = _chain(dashboard.close, unsubscribe)  # type: ignore[method-assign]
    return dashboard


def show_record(record: dict[str, Any], shell: Any = None, mode: str = "auto") -> Any:
    """Show a past run again from its record: its events are replayed into a fresh view."""
    if choose_mode(shell, mode) == "text":
        views: list[TextProgress] = []
        replay(record, on_run=lambda run: views.append(TextProgress(run, show_result=True)))
        return views[0]
    from IPython.display import display

    from .dashboard import Dashboard

    dashboards: list[Dashboard] = []

    def attach(run: Run) -> None:
        dashboards.append(Dashboard(run))
        run.subscribe(dashboards[0].on_event)

    replay(record, on_run=attach)
    dashboards[0].refresh()  # the replayed run now has its recorded times
    display(dashboards[0].widget)
    return dashboards[0]


def _chain(*calls: Callable[[], Any]) -> Callable[[], None]:
    def call() -> None:
        for each in calls:
            each()

    return call


class _Nothing:
    shows_result = False

    def close(self) -> None:
        pass
