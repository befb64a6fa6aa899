"""What the displays show while the model writes a step (``step_streaming`` events of core/model/streaming.py),
and while an ``llm_query`` of a running step is answered (``llm_query_streaming``, the same module).

The dashboard gives each run's trajectory one "writing" panel below its steps: the step
number, how long the model has been writing, the reasoning and the code so far. It is
emptied and hidden when the step starts (the step's own entry then shows the whole
text). The text display writes one line that it keeps rewriting (``\\r``): which step,
how long, the last line written so far.

An ``llm_query`` shows inside its running step's entry in the dashboard (one block per query
being answered: which query, how long, the answer so far), gone once the query is done; the
text display rewrites the same one line (``step 1 llm_query 2 · 3s …``).
"""

from __future__ import annotations

from typing import Any

import ipywidgets as W

from .markup import esc

WRITING_CLASS = "dag-writing"
QUERY_CLASS = "dag-query"


def last_line(data: dict[str, Any], limit: int = 80) -> str:
    """The newest line written: of the code once it has begun, else of the reasoning."""
    text = data.get("code") or data.get("reasoning") or ""
    line = next((line.strip() for line in reversed(text.splitlines()) if line.strip()), "")
    return line if len(line) <= limit else "…" + line[-(limit - 1):]


def writing_label(data: dict[str, Any]) -> str:
    """``writing… 12s``; before the first word arrives the model is still reading its prompt (on a CPU, a
    local model reads a few thousand tokens for tens of seconds), and the label says so."""
    label = f"writing… {float(data.get('elapsed') or 0):.0f}s"
    return label if data.get("reasoning") or data.get("code") else label + " (reading the prompt)"


def text_line(run: Any, data: dict[str, Any], indent: str = "") -> str:
    """The text display's updating line for a step being written."""
    return (f"{indent}[{run.id[-6:]}] step {data.get('index')}/{run.max_iters or '?'} {writing_label(data)} "
            f"{last_line(data)}").rstrip()


def writing_html(data: dict[str, Any]) -> str:
    code = data.get("code") or ""
    return (f'<div class="{WRITING_CLASS}"><div class="dag-label">Step {esc(data.get("index"))} · '
            f'{esc(writing_label(data))}</div>'
            f'<div class="dag-reasoning">{esc(data.get("reasoning") or "")}</div>'
            + (f'<pre class="dag-pre">{esc(code)}</pre>' if code else "") + "</div>")


def query_label(data: dict[str, Any]) -> str:
    """``llm_query 2 · 3s``: which query of the run, how long it has been answered."""
    return f"{data.get('tool') or 'llm_query'} {data.get('query')} · {float(data.get('elapsed') or 0):.0f}s"


def query_html(data: dict[str, Any]) -> str:
    """An llm_query being answered, shown inside its running step (``llm_query_streaming`` events)."""
    return (f'<div class="{QUERY_CLASS}"><div class="dag-label">{esc(query_label(data))}</div>'
            f'<div class="dag-reasoning">{esc(data.get("text") or "")}</div></div>')


def query_text_line(run: Any, data: dict[str, Any], indent: str = "") -> str:
    """The text display's updating line for an llm_query being answered."""
    return (f"{indent}[{run.id[-6:]}] step {data.get('step')} {query_label(data)} "
            f"{last_line({'reasoning': data.get('text')})}").rstrip()


class Writing:
    """One run's "writing" panel in the dashboard (one widget, patched in place)."""

    def __init__(self) -> None:
        self.widget = W.HTML("", layout=W.Layout(display="none"))

    def show(self, data: dict[str, Any]) -> None:
        self.widget.value = writing_html(data)
        if self.widget.layout.display is not None:
            self.widget.layout.display = None

    def clear(self) -> None:
        if self.widget.value:
            self.widget.value = ""
            self.widget.layout.display = "none"


def writing_panel(view: Any) -> Writing:
    """``view``'s panel (a dashboard `RunView`), added below its steps the first time."""
    return below_steps(view, "writing", Writing)


def below_steps(view: Any, name: str, make: Any) -> Any:
    """``view.<name>``: made with ``make()`` and its widget added below the view's steps the first time."""
    part = getattr(view, name, None)
    if part is None:
        part = make()
        setattr(view, name, part)
        box = view.widget if isinstance(view.widget, W.VBox) else view.widget.children[0]
        box.children = (*box.children, part.widget)
    return part
