"""How a run is shown in the cell that started it (and how a past run is shown again).

`show_run` picks the live widget dashboard when the frontend can render widgets (a
Jupyter kernel with a comm manager), else a text rendering: one progress line per
step, then a summary. ``mode="widgets"`` or ``"text"`` forces either. Both only
listen to the run's events, through `routing.Routed`.
"""

from __future__ import annotations

from typing import Any, Callable

from ..core.run.run import Run
from ..records.replay import replay
from ..records.store import record_home
from .routing import Routed
from .text import TextProgress, summary

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


# --------------------------------------------------------------------------- choosing
def show_run(run: Run, shell: Any = None, quiet: bool = False, mode: str = "auto") -> Any:
    """Start showing ``run`` in the current cell; returns an object with ``close()``.

    ``shows_result`` on the returned object tells whether it shows the result itself; when it does not,
    the caller displays it as the cell's own output (`result.show_result`), below the live view.
    """
    if quiet:
        return _Nothing()
    if choose_mode(shell, mode) == "text":
        # In a terminal the summary prints the result; a notebook renders it as Markdown.
        return TextProgress(run, show_result=getattr(shell, "kernel", None) is None)
    from IPython.display import display

    from .dashboard import Dashboard

    dashboard = Dashboard(run, steerable=True, result_inside=False)
    dashboard.shows_result = False  # the magic displays it below, as the cell's own output (result.py)
    unsubscribe = run.subscribe(Routed(dashboard.on_event))
    handle = display(WidgetWithSummary(dashboard.widget, run), display_id=True)

    def refresh_fallback() -> None:
        """A notebook read without widgets (GitHub, nbconvert, a headless run) shows the final summary."""
        if handle is not None:
            handle.update(WidgetWithSummary(dashboard.widget, run))

    dashboard.close = _chain(dashboard.close, unsubscribe, refresh_fallback)  # type: ignore[method-assign]
    return dashboard


class WidgetWithSummary:
    """The dashboard's widget view, with the run's one-line summary as its text fallback
    (a widget's own fallback is the repr of its children, frozen when it was first shown)."""

    def __init__(self, widget: Any, run: Run):
        self.widget, self.run = widget, run

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = dict(self.widget._repr_mimebundle_(**kwargs) or {})
        bundle["text/plain"] = f"deepagent run {self.run.id}: {summary(self.run)}"
        return bundle


def show_record(record: dict[str, Any], shell: Any = None, mode: str = "auto") -> Any:
    """Show a past run again from its record: its events are replayed into a fresh view.

    The dashboard's file tree and previews read the workspace the record was found in, never the
    folder the record names (a planted record could name any folder)."""
    if choose_mode(shell, mode) == "text":
        views: list[TextProgress] = []
        replay(record, on_run=lambda run: views.append(TextProgress(run, show_result=True)))
        return views[0]
    from IPython.display import display

    from .dashboard import Dashboard

    dashboards: list[Dashboard] = []

    def attach(run: Run) -> None:
        dashboards.append(Dashboard(run, workspace=record_home(record)))
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
