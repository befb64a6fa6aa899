"""How a running `Run` is shown in the cell that started it.

`show_run` picks the live widget dashboard when the frontend can render widgets,
else a text rendering (one progress line per step, then a summary). Both listen
to the run's events.
"""

from __future__ import annotations

import sys
from typing import Any

from .run import RUN_FINISHED, STEP_FINISHED, Event, Run


class TextProgress:
    """One line per finished step, then a summary line."""

    def __init__(self, run: Run, stream: Any = None):
        self.run = run
        self.stream = stream
        self.unsubscribe = run.subscribe(self.on_event)

    def _write(self, text: str) -> None:
        stream = self.stream or sys.stdout
        stream = getattr(stream, "_stream", stream) if type(stream).__name__ == "_Router" else stream
        print(text, file=stream, flush=True)

    def on_event(self, event: Event) -> None:
        run = event.run
        indent = "  " * run.depth
        if event.kind == STEP_FINISHED:
            step = run.steps[event.data["index"] - 1]
            head = (step.reasoning.strip().splitlines() or [""])[0][:80]
            self._write(f"{indent}[{run.id[-6:]}] step {step.index}/{run.max_iters or '?'}: {head}")
        elif event.kind == RUN_FINISHED and run is self.run:
            u = run.usage
            self._write(
                f"{indent}{run.status}: {len(run.steps)} steps, {u.lm_calls} LM calls, "
                f"{u.tokens:,} tokens, {run.elapsed:.1f}s"
            )

    def close(self) -> None:
        self.unsubscribe()


def show_run(run: Run, shell: Any = None, quiet: bool = False) -> Any:
    """Start showing ``run``; returns an object with ``close()``."""
    if quiet:
        return _Nothing()
    return TextProgress(run)


class _Nothing:
    def close(self) -> None:
        pass
