"""The run's result as an ordinary output of the cell: Markdown, with the plain text as its fallback.

It is displayed below the live dashboard (or the text progress), not inside a widget, so a
notebook saved without widget state (Jupyter's default; what GitHub, nbviewer and a headless
nbclient run keep) still shows the answer. The result came from a model: its Markdown is
made safe here, in this one function (`safe_markdown`), before anything renders it; the
dashboard of a past run shows it through the same function. Until a Markdown sanitiser
exists, raw HTML is escaped: a ``<`` outside code becomes ``&lt;``, so no tag a model wrote
reaches the page, while tables, emphasis, lists and code render as written.
"""

from __future__ import annotations

import re
from typing import Any

_CODE = re.compile(r"(```.*?```|~~~.*?~~~|`[^`\n]*`)", re.S)  # fenced blocks and inline spans: rendered literally


def safe_markdown(text: Any) -> str:
    """``text`` (Markdown a model wrote) with every raw HTML tag escaped; code is left as written."""
    parts = _CODE.split(str(text))
    return "".join(part if index % 2 else part.replace("<", "&lt;") for index, part in enumerate(parts))


class ResultOutput:
    """What IPython displays for a result: ``text/markdown`` (made safe) and ``text/plain`` (as it is)."""

    def __init__(self, result: Any):
        self.result = result

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        text = str(self.result)
        return {"text/markdown": safe_markdown(text), "text/plain": text}

    def __repr__(self) -> str:
        return str(self.result)


def show_result(result: Any) -> None:
    """Display ``result`` as the cell's own output (after the dashboard's, so it reads below it)."""
    from IPython.display import display

    display(ResultOutput(result))
