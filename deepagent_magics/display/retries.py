"""What the dashboard shows while a run retries (``reply_retry`` from `core.loop.attempts`, ``provider_retry``
from `core.model.retries`).

A retry is one line where it happens: for the step the model is being asked for, in the
run's waiting area below its steps (root and sub-agents alike); for an ``llm_query`` made by
a running step's code, inside that step's entry. The line names the step, the cause and the
wait (a provider fault) or the problem (an unreadable reply), and which attempt of how many;
the newest retry replaces the one before. Once the step arrives (or finishes, for an
``llm_query``) the line goes and the step's entry keeps a short "recovered" (or, for an
``llm_query``, "retried": the step's output says how the query ended) note; when the
run ends instead, the line goes and the status line says why. Every text here is the model's
or the provider's and is escaped: it is shown, never parsed.

The retries themselves are core/model/retries.py.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as W

from ..core.loop.attempts import FORMAT_RETRIES, REPLY_RETRY
from .markup import esc
from .streaming import below_steps

RETRY_CLASS = "dag-retry"
NOTE_CLASS = "dag-recovered"
LINE_CHARS = 300


def _one_line(text: Any) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= LINE_CHARS else line[: LINE_CHARS - 1] + "…"


def retry_line(kind: str, data: dict[str, Any], where: str) -> str:
    """The retry in one plain line; ``where``: ``step 2`` or ``llm_query in step 2``."""
    attempt = data.get("attempt") or 1
    if kind == REPLY_RETRY:
        total = FORMAT_RETRIES + 1
        then = "giving up" if attempt >= total else "asking again"
        return _one_line(f"{where}: reply {attempt} of {total} unreadable ({data.get('problem')}): {then}")
    retries = data.get("retries")
    of = f", attempt {attempt + 1} of {retries + 1}" if isinstance(retries, int) else f", attempt {attempt + 1}"
    return _one_line(f"{where}: {data.get('cause')}: retrying in {float(data.get('wait') or 0):g} s{of}")


def line_html(line: str) -> str:
    return f'<div class="{RETRY_CLASS}">⟳ {esc(line)}</div>'


def note_html(lines: list[str], during: bool = False) -> str:
    """The note a step keeps after retries: how many, and the last one. ``during``: its llm_queries'
    retries (whose outcome is the step's output), not the ones before the step arrived."""
    if not lines:
        return ""
    if during:
        head = "retried" if len(lines) == 1 else f"retried {len(lines)} times (last)"
    else:
        head = "recovered" if len(lines) == 1 else f"recovered after {len(lines)} retries (last)"
    return f'<div class="{NOTE_CLASS}"><small>⟳ {esc(head)}: {esc(lines[-1])}</small></div>'


class Waiting:
    """One run's waiting area (one widget, patched in place): the retry of the step being asked for."""

    def __init__(self) -> None:
        self.widget = W.HTML("", layout=W.Layout(display="none"))
        self.lines: list[str] = []

    def show(self, line: str) -> None:
        self.lines.append(line)
        self.widget.value = line_html(line)
        if self.widget.layout.display is not None:
            self.widget.layout.display = None

    def take(self) -> list[str]:
        """The retries so far, for the step that has now arrived; the area empties."""
        lines, self.lines = self.lines, []
        if self.widget.value:
            self.widget.value = ""
            self.widget.layout.display = "none"
        return lines


def waiting_area(view: Any) -> Waiting:
    """``view``'s waiting area (a dashboard `RunView`), added below its steps the first time."""
    return below_steps(view, "waiting", Waiting)
