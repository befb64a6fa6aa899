"""``history()``: every step of the current run in full, also the ones compaction summarised in the prompt."""

from __future__ import annotations

from typing import Any, Callable

from ..core.loop.capability import Capability, ToolLine
from ..core.model.compaction import COMPACTED
from ..core.run import session as _session
from .tool_call import tool


@tool
def history(start: int = 1, end: int | None = None) -> list[dict[str, Any]]:
    """This run's steps in full.

    A list of {"step", "reasoning", "code", "output"}, steps ``start`` to ``end``.

    Steps are numbered from 1. When the REPL history in your prompt is compacted, the older steps
    are still here: read an old output back with history(3, 3)[0]["output"]."""
    steps = list(_session.current().run.steps)
    first = max(1, int(start))
    last = len(steps) if end is None else min(len(steps), int(end))
    return [{"step": number, "reasoning": step.reasoning, "code": step.code,
             "output": step.output} for number, step in enumerate(steps[first - 1:last], start=first)]


def history_tools() -> list[Callable[..., Any]]:
    return [history]


HISTORY = Capability("history", tools=[history], lines={"history": ToolLine(order=85, brief=True, listed=False)},  # used rarely
                     notes={COMPACTED: "history() returns every step in full"})
