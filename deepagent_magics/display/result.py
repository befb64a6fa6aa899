"""The run's result as an ordinary output of the cell: sanitised HTML, with the plain text as its fallback.

It is displayed below the live dashboard (or the text progress), not inside a widget, so a notebook
saved without widget state (Jupyter's default; what GitHub, nbviewer and a headless nbclient run keep)
still shows the answer. The result came from a model: it goes out through `safe_text`
(rendered Markdown cleaned by an allowlist, as ``text/html``, never trusted ``text/markdown``), the
same function the dashboard of a past run and the export use. An answer the agent did not submit
(``run.extracted``: taken from its output when it stalled, ran out of steps or reached a spend cap,
core/loop/ending.py) is shown under a line that says so, in the HTML and the plain text alike.
"""

from __future__ import annotations

from typing import Any

from ..core.loop.ending import not_submitted
from ..safe_text import escape, markdown_bundle, plain


def result_bundle(result: Any, extracted: str | None = None) -> dict[str, str]:
    """The display bundle of a finished run's result, marked when the answer was extracted."""
    bundle = markdown_bundle(result)
    if extracted:
        note = "⚠ " + not_submitted(extracted)
        bundle["text/html"] = (f'<div class="deepagent-extracted" style="color:#b06000"><b>{escape(note)}</b></div>'
                               + bundle["text/html"])
        bundle["text/plain"] = f"{plain(note)}\n{bundle['text/plain']}"
    return bundle


class ShownResult:
    """What ``display()`` shows for a run's result."""

    def __init__(self, result: Any, extracted: str | None = None):
        self.result, self.extracted = result, extracted

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, str]:
        return result_bundle(self.result, self.extracted)


def show_result(result: Any, extracted: str | None = None) -> None:
    """Display ``result`` as the cell's own output (after the dashboard's, so it reads below it)."""
    from IPython.display import display

    display(ShownResult(result, extracted))
