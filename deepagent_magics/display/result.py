"""The run's result as an ordinary output of the cell: sanitised HTML, with the plain text as its fallback.

It is displayed below the live dashboard (or the text progress), not inside a widget, so a notebook
saved without widget state (Jupyter's default; what GitHub, nbviewer and a headless nbclient run keep)
still shows the answer. The result came from a model: it goes out through `safe_text`
(rendered Markdown cleaned by an allowlist, as ``text/html``, never trusted ``text/markdown``), the
same function the dashboard of a past run and the export use.
"""

from __future__ import annotations

from typing import Any

from ..safe_text import SafeMarkdown


def show_result(result: Any) -> None:
    """Display ``result`` as the cell's own output (after the dashboard's, so it reads below it)."""
    from IPython.display import display

    display(SafeMarkdown(result))
