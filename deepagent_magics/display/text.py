"""The text display: one progress line per finished step (sub-agents indented), then a summary.

While the model writes a step, one line is rewritten in place (``\r``) with what it has
written so far (`streaming.text_line`); the finished step's line replaces it. Only where a
line can be rewritten (a terminal, a notebook): a log file (``deepagent run 2> log``, CI)
gets the lasting lines only.

For terminals and for headless runs; `show.show_run` picks it when widgets cannot render.
Every line goes out through `safe_text.plain`: a model's escape sequences and
carriage returns are shown, never acted on by the terminal.
"""

from __future__ import annotations

import sys
from typing import Any

from ..core.loop.ending import not_submitted
from ..core.loop.attempts import REPLY_RETRY
from ..core.model.compaction import COMPACTION
from ..core.policy.spend import budget_of
from ..core.model.retries import PROVIDER_RETRY
from ..core.run.run import RUN_FINISHED, STEP_FINISHED, SUBAGENT_STARTED, Event, Run
from ..core.run.event_kinds import LLM_QUERY_STREAMING, STEP_STREAMING
from .markup import not_sandboxed, step_mark, usage_parts
from ..safe_text import plain
from .streaming import query_text_line, text_line
from .routing import Routed


class TextProgress:
    """One line per finished step (sub-agents indented under their parent), then a summary."""

    def __init__(self, run: Run, stream: Any = None, show_result: bool = False):
        self.run = run
        self.stream = stream
        self.shows_result = show_result
        self._live = 0  # length of the updating line on screen (0: none)
        self.unsubscribe = run.subscribe(Routed(self.on_event))

    def _out(self) -> Any:
        stream = self.stream or sys.stdout
        # Bypass the per-thread capture of the agent's own output (capture._Router).
        return getattr(stream, "_stream", stream) if type(stream).__name__ == "_Router" else stream

    def _write(self, text: str) -> None:
        stream = self._out()
        if self._live:  # the updating line gives way to the lasting one
            stream.write("\r" + " " * self._live + "\r")
            self._live = 0
        print(plain(text), file=stream, flush=True)

    def _rewrites(self) -> bool:
        """Whether a line can be rewritten in place: a terminal or a notebook's output, not a log file."""
        stream = self._out()
        try:
            return bool(stream.isatty()) or type(stream).__name__ == "OutStream"  # ipykernel's
        except Exception:  # a stream that cannot say what it is: not a terminal
            return False

    def _write_live(self, text: str) -> None:
        """Rewrite the one updating line (a step being written) in place."""
        stream = self._out()
        text = plain(text)
        stream.write("\r" + text.ljust(self._live))
        stream.flush()
        self._live = len(text)

    def on_event(self, event: Event) -> None:
        run = event.run
        indent = "  " * (run.depth - self.run.depth)
        if event.kind == STEP_STREAMING:
            if self._rewrites():
                self._write_live(text_line(run, event.data, indent))
        elif event.kind == LLM_QUERY_STREAMING:  # an llm_query of a running step (core/model/streaming.py)
            if self._rewrites() and not event.data.get("done"):
                self._write_live(query_text_line(run, event.data, indent))
        elif event.kind == STEP_FINISHED:
            step = run.steps[event.data["index"] - 1]
            output = event.data.get("output") or ""
            mark = step_mark(output)
            head = (step.reasoning.strip().splitlines() or [""])[0][:80]
            self._write(f"{indent}[{run.id[-6:]}] step {step.index}/{run.max_iters or '?'} {mark} {head}")
        elif event.kind == SUBAGENT_STARTED:
            child = event.data["child"]
            task = (child.task.strip().splitlines() or [""])[0][:70]
            mark = " [not sandboxed]" if not_sandboxed(child) else ""
            self._write(f"{indent}  ↳ sub-agent {child.id[-6:]} (step {event.data.get('step')}){mark}: {task}")
        elif event.kind == COMPACTION:
            data = event.data
            self._write(f"{indent}[{run.id[-6:]}] ⟲ compacted steps 1-{data.get('summarized')} in the prompt "
                        f"({data.get('chars_before', 0):,} → {data.get('chars_after', 0):,} chars; history() has them all)")
        elif event.kind in (REPLY_RETRY, PROVIDER_RETRY):  # core/loop/attempts.py, core/model/retries.py
            data = event.data
            what = (f"reply {data.get('attempt')} unreadable ({data.get('problem')}): asking again"
                    if event.kind == REPLY_RETRY else f"{data.get('cause')}: retrying in {data.get('wait', 0):g} s")
            self._write(f"{indent}[{run.id[-6:]}] ⟳ {what}")
        elif event.kind == RUN_FINISHED:
            self._write(indent + summary(run))
            if run is self.run and self.shows_result and run.status == "finished":
                self._write(f"\n{run.result}")

    def close(self) -> None:
        self.unsubscribe()


def summary(run: Run) -> str:
    """One line: status, steps, sub-agents, usage, time, todos, files."""
    children = _count_children(run)
    parts = [f"{len(run.steps)} steps" + (f" (+{children} sub-agents)" if children else ""),
             *usage_parts(run), f"{run.elapsed:.1f}s"]
    if run.todos:
        done = sum(item.get("status") == "completed" for item in run.todos)
        parts.append(f"todos {done}/{len(run.todos)} completed")
    if run.files_written:
        shown = ", ".join(run.files_written[:5]) + (", ..." if len(run.files_written) > 5 else "")
        parts.append(f"wrote {shown}")
    budget = budget_of(run) if run.parent is None else None
    if budget is not None and budget.capped:
        parts.append(f"caps: {budget.describe()}")
    head = f"{run.status}" + (f" ({run.error})" if run.error and run.status != "finished" else "")
    if run.status == "finished" and run.extracted:  # core.loop.ending: not the agent's SUBMIT
        head += f" ({not_submitted(run.extracted)})"
    return f"{head}: " + ", ".join(parts)


def _count_children(run: Run) -> int:
    return sum(1 + _count_children(child) for child in run.children)
