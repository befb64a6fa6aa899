"""Progress bars for evaluation and optimisation: widgets in a Jupyter kernel, text elsewhere."""

from __future__ import annotations

import sys
from typing import Any


class TextProgress:
    """A one-line text progress bar on the real stdout (what agents print in worker threads is captured)."""

    def __init__(self, label: str = "evaluating", stream: Any = None):
        self.label = label
        self.stream = stream
        self.total = 0
        self.done = 0

    def _out(self):
        stream = self.stream or sys.stdout
        return getattr(stream, "_stream", stream) if type(stream).__name__ == "_Router" else stream

    def start(self, total: int) -> None:
        self.total, self.done = total, 0
        self._draw("")

    def advance(self, system: str) -> None:
        self.done += 1
        self._draw(system)

    def _draw(self, system: str) -> None:
        width = 20
        filled = width * self.done // max(1, self.total)
        bar = "#" * filled + "." * (width - filled)
        tail = f" ({system})" if system else ""
        print(f"\r{self.label}: [{bar}] {self.done}/{self.total}{tail}".ljust(70), end="", file=self._out(), flush=True)

    def close(self) -> None:
        print(file=self._out(), flush=True)


class WidgetProgress:
    """An ipywidgets progress bar, updated from the main thread (it waits on the workers)."""

    def __init__(self, label: str = "evaluating"):
        import ipywidgets as widgets
        from IPython.display import display

        self.bar = widgets.IntProgress(min=0, max=1, description=label)
        self.text = widgets.Label("")
        self.box = widgets.HBox([self.bar, self.text])
        display(self.box)

    def start(self, total: int) -> None:
        self.bar.max = max(1, total)
        self.bar.value = 0
        self.text.value = f"0/{total}"

    def advance(self, system: str) -> None:
        self.bar.value += 1
        self.text.value = f"{self.bar.value}/{self.bar.max} ({system})"

    def close(self) -> None:
        self.bar.bar_style = "success"


def progress_for(shell: Any, label: str = "evaluating") -> Any:
    """Widgets in a Jupyter kernel, text elsewhere (a terminal, a headless notebook run)."""
    if shell is not None and type(shell).__name__ == "ZMQInteractiveShell":
        try:
            return WidgetProgress(label)
        except ImportError:
            pass
    return TextProgress(label)
