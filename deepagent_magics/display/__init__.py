"""Showing runs: the live widget dashboard or a text display, both listeners on the run's events.

- `show`: pick and start a view for a run (or a past run's record)
- `dashboard`: the ipywidgets dashboard; `markup`: its HTML
- `text`: progress lines and a summary; `routing`: calling listeners from any thread
- `result`: the result as the cell's own Markdown output, made safe in one place
"""

from .result import show_result
from .routing import Routed
from .show import MODES, choose_mode, has_widget_frontend, show_record, show_run
from .text import TextProgress, summary

__all__ = ["show_result", "Routed", "MODES", "choose_mode", "has_widget_frontend", "show_record", "show_run", "TextProgress",
           "summary"]
