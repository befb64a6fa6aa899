"""A run and its one event stream.

Everything that shows or stores a run (the live dashboard, the text progress, the
run record on disk, the notebook export) listens to the events a `Run` emits;
nothing re-derives a run from DSPy internals a second time.

A sub-agent's run is a child of the step that spawned it. Its events are delivered
to its own listeners and then bubble up to every ancestor's, so one listener on
the root run sees the whole tree (``event.run`` says which run it came from).

Secrets never enter a run: every text it stores and emits (task, reasoning, code,
output, tool arguments, todos, result, error) is scrubbed first (`secrets`), so
nothing that listens or cuts texts short afterwards can show a piece of one.
"""

from __future__ import annotations

import logging
import threading
import re
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from .secrets import scrub
from .run_tree import RunTree
from .event_kinds import (  # the kinds this module emits (every kind: event_kinds.py)
    FILE_WRITTEN, LM_USAGE, RUN_FINISHED, RUN_STARTED, STATUS, STEP_FINISHED, STEP_STARTED,
    SUBAGENT_FINISHED, SUBAGENT_STARTED, TODOS, TOOL_CALL,
)

log = logging.getLogger(__name__)

STATUSES = ("pending", "running", "finished", "failed", "interrupted", "stopped", "budget_exhausted", "abandoned")
# "abandoned": read from a record whose writing process died mid-run (records/), never set on a live run



@dataclass
class Event:
    kind: str
    run: "Run"
    data: dict[str, Any]
    time: float = field(default_factory=time.time)


Listener = Callable[[Event], None]


@dataclass
class Usage:
    """LM calls, tokens and cost. ``run.usage`` is one run's own (the root's calls, its ``llm_query``s);
    ``run.tree_usage()`` adds every sub-agent's: what displays, listings and spend caps show.

    ``cost`` is what the provider priced, in USD, and None when calls were made and none had a price (a
    local server, a model LiteLLM has no price for): the same thing `cost_text` says, never a made-up 0.0."""

    lm_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = 0.0  # USD of the calls the provider priced; None: every call was unpriced
    cached_input_tokens: int = 0  # of input_tokens, read from the provider's prompt cache (core.model.caching)
    unpriced_calls: int = 0  # calls with no price (a local server, a model LiteLLM has no price for)

    def add(self, input_tokens: int = 0, output_tokens: int = 0, cost: float | None = None,
            cached_tokens: int = 0) -> None:
        self.lm_calls += 1
        self.input_tokens += int(input_tokens or 0)
        self.output_tokens += int(output_tokens or 0)
        self.cached_input_tokens += int(cached_tokens or 0)
        self.unpriced_calls += cost is None
        self._set_cost((self.cost or 0.0) + float(cost or 0.0))

    def merge(self, other: "Usage") -> None:
        for name in ("lm_calls", "input_tokens", "output_tokens", "cached_input_tokens", "unpriced_calls"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self._set_cost((self.cost or 0.0) + (other.cost or 0.0))

    def _set_cost(self, priced: float) -> None:
        self.cost = None if self.lm_calls and self.unpriced_calls >= self.lm_calls else priced

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def cost_text(self) -> str:
        """``$0.0123``; ``cost unknown`` when no call had a price, never a made-up ``$0.0000``."""
        if self.cost is None:
            return "cost unknown"
        priced = f"${self.cost:.4f}"
        return f"{priced} + {self.unpriced_calls} unpriced calls" if self.unpriced_calls else priced

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> "Usage":
        """A record's usage (records before ``unpriced_calls`` existed read as all priced)."""
        data = data if isinstance(data, dict) else {}
        numbers = {}
        for name in ("lm_calls", "input_tokens", "output_tokens", "cost", "cached_input_tokens", "unpriced_calls"):
            try:
                numbers[name] = (float if name == "cost" else int)(data.get(name) or 0)
            except (TypeError, ValueError):
                numbers[name] = 0
        usage = cls(**numbers)
        usage._set_cost(usage.cost or 0.0)
        return usage

    def to_dict(self) -> dict[str, Any]:
        return {
            "lm_calls": self.lm_calls,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cached_input_tokens": self.cached_input_tokens,
            "cost": None if self.cost is None else round(self.cost, 6),
            "unpriced_calls": self.unpriced_calls,
        }


REPEAT_NOTE = "[Note] Same code and output as step"  # what the model reads under a repeated step
_STEP_NAME = re.compile(r"<agent step \d+>")  # a traceback's file name: the same error, another step


def _comparable(output: str | None) -> str:
    return _STEP_NAME.sub("<agent step>", (output or "").split("\n" + REPEAT_NOTE)[0])


@dataclass
class Step:
    """One iteration of the agent loop: the LM's reasoning and code, and what running it printed."""

    index: int
    reasoning: str = ""
    code: str = ""
    output: str | None = None
    started_at: float = field(default_factory=time.time)
    ended_at: float | None = None
    children: list["Run"] = field(default_factory=list)

    @property
    def finished(self) -> bool:
        return self.ended_at is not None

    def same_as(self, code: str, output: str | None) -> bool:
        """Whether ``code`` printing ``output`` is this step again: the same code, the same output (a
        traceback's step name and the repeat note aside). interpreters/step_execution.py notes it; a third time in a
        row the run ends as stalled (core/loop/ending.py)."""
        return self.code.strip() == code.strip() and _comparable(self.output) == _comparable(output)

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "reasoning": self.reasoning,
            "code": self.code,
            "output": self.output,
            "started_at": self.started_at,
            "ended_at": self.ended_at,
            "children": [child.to_dict() for child in self.children],
        }


class Run:
    """What one agent did for one task: status, steps, todos, files, usage, result.

    The agent fills it in by calling the recording methods below; each one updates
    the fields and emits one event.
    """

    def __init__(
        self,
        task: str,
        *,
        config: dict[str, Any] | None = None,
        profile: str = "default",
        depth: int = 0,
        parent: "Run | None" = None,
        run_id: str | None = None,
    ):
        self.id = run_id or time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
        self.task = scrub(task)
        self.config = dict(config or {})
        self.profile = profile
        self.depth = depth
        self.parent = parent
        self.tree = parent.tree if parent is not None else RunTree()  # what the whole tree shares
        self.parent_step: int | None = None
        self.status = "pending"
        self.result: Any = None
        self.extracted: str | None = None  # why the answer was taken from the run's output, not submitted
        self.error: str | None = None
        self.steps: list[Step] = []
        self.todos: list[dict[str, str]] = []
        self.files_written: list[str] = []
        self.usage = Usage()
        self.prompt_hash: str | None = None
        self.max_iters: int | None = self.config.get("max_iters")
        self.started_at: float | None = None
        self.ended_at: float | None = None
        self.reverted: dict[str, Any] = {}
        self.approvals: list[dict[str, Any]] = []  # each approval decision (core.policy.approval): who, what, when
        self.waited_seconds = 0.0  # time spent waiting for the user's answers (not counted by time limits)
        self.changes: list[dict[str, Any]] = []  # names this run made or changed, by step (interpreters.provenance)
        # Children started before the first step (rare: a tool called during set-up).
        self._orphans: list[Run] = []
        self.prediction: Any = None  # DSPy's Prediction, when the loop finished
        self.exception: BaseException | None = None  # what ended a failed run
        self._listeners: list[Listener] = []
        self._lock = threading.RLock()

    @property
    def spend(self) -> Any:
        """The spend budget of this run's tree (`RunTree.spend`; None: no caps)."""
        return self.tree.spend

    @spend.setter
    def spend(self, budget: Any) -> None:
        self.tree.spend = budget

    # ---------------------------------------------------------------- listening
    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(event)`` for every event of this run and its sub-agents."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    def emit(self, kind: str, **data: Any) -> Event:
        event = Event(kind, self, data)
        self._deliver(event)
        return event

    def _deliver(self, event: Event) -> None:
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:  # a broken display must never break the agent
                log.exception("run listener failed on %s", event.kind)
        if self.parent is not None:
            self.parent._deliver(event)

    # ---------------------------------------------------------------- recording
    def start(self) -> None:
        self.status = "running"
        self.started_at = time.time()
        self.emit(RUN_STARTED, task=self.task, config=scrub(self.config))

    def begin_step(self, reasoning: str, code: str) -> Step:
        with self._lock:
            self._close_open_step("(not executed)")
            step = Step(index=len(self.steps) + 1, reasoning=scrub(reasoning or ""), code=scrub(code or ""))
            self.steps.append(step)
        self.emit(STEP_STARTED, index=step.index, reasoning=step.reasoning, code=step.code)
        return step

    def end_step(self, output: str) -> Step | None:
        output = scrub(output)
        with self._lock:
            step = self.open_step
            if step is None:
                return None
            step.output = output
            step.ended_at = time.time()
        self.emit(STEP_FINISHED, index=step.index, output=output)
        return step

    @property
    def open_step(self) -> Step | None:
        if self.steps and not self.steps[-1].finished:
            return self.steps[-1]
        return None

    @property
    def current_step(self) -> Step | None:
        return self.steps[-1] if self.steps else None

    def _close_open_step(self, output: str) -> None:
        if self.open_step is not None:
            self.end_step(output)

    def record_tool_call(self, name: str, args: dict[str, Any], error: str | None = None) -> None:
        self.emit(TOOL_CALL, name=name, args=scrub(args), error=scrub(error))

    def set_todos(self, todos: list[dict[str, str]]) -> None:
        self.todos = scrub([dict(t) for t in todos])
        self.emit(TODOS, todos=self.todos)

    def record_file(self, path: str, size: int) -> None:
        path = scrub(path)
        if path not in self.files_written:
            self.files_written.append(path)
        self.emit(FILE_WRITTEN, path=path, size=size)

    def record_usage(self, model: str, input_tokens: int, output_tokens: int, cost: float | None,
                     cached_tokens: int = 0) -> None:
        self.usage.add(input_tokens, output_tokens, cost, cached_tokens)
        self.emit(LM_USAGE, model=model, input_tokens=input_tokens, output_tokens=output_tokens, cost=cost,
                  cached_tokens=cached_tokens)

    def add_child(self, task: str, **kwargs: Any) -> "Run":
        """Create a sub-agent run nested under the current step and announce it."""
        child = Run(task, parent=self, depth=self.depth + 1, **kwargs)
        with self._lock:
            step = self.current_step
            child.parent_step = step.index if step else None
            if step is not None:
                step.children.append(child)
            else:
                self._orphans.append(child)
        self.emit(SUBAGENT_STARTED, child=child, step=child.parent_step)
        return child

    def child_finished(self, child: "Run") -> None:
        self.emit(SUBAGENT_FINISHED, child=child, step=child.parent_step)

    def finish(self, status: str, result: Any = None, error: str | None = None,
               extracted: str | None = None) -> None:
        """End the run; ``extracted``: why ``result`` was not submitted but taken from the output (core/loop/ending.py)."""
        assert status in STATUSES, status
        with self._lock:
            if self.ended_at is not None:
                return  # a run finishes once: a late call (an abandoned sub-agent's thread) is ignored
            self.ended_at = time.time()
        self._close_open_step("(interrupted)" if status == "interrupted" else "(no output)")
        self.status = status
        self.result = scrub(result) if isinstance(result, (str, dict, list)) else result
        self.error = error = scrub(error)
        self.extracted = scrub(extracted) if status == "finished" and extracted else None
        result = self.result
        self.emit(STATUS, status=status, error=error)
        self.emit(RUN_FINISHED, status=status, result=result, error=error, extracted=self.extracted)

    # ---------------------------------------------------------------- reading
    @property
    def children(self) -> list["Run"]:
        return [child for step in self.steps for child in step.children] + list(self._orphans)

    @property
    def trajectory(self) -> list[dict[str, Any]]:
        """The steps as plain dicts, each sub-agent's run nested under its step."""
        return [step.to_dict() for step in self.steps]

    @property
    def elapsed(self) -> float:
        if self.started_at is None:
            return 0.0
        return (self.ended_at or time.time()) - self.started_at

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "task": self.task,
            "profile": self.profile,
            "depth": self.depth,
            "parent_step": self.parent_step,
            "config": scrub(self.config),
            "prompt_hash": self.prompt_hash,
            "status": self.status,
            "result": self.result if isinstance(self.result, (str, int, float, bool, type(None))) else _shown(self.result),
            "error": self.error,
            "extracted": self.extracted,
            "steps": self.trajectory,
            "todos": self.todos,
            "files_written": self.files_written,
            "usage": self.usage.to_dict(),
            "approvals": scrub(list(self.approvals)),
            "changes": scrub([{k: v for k, v in change.items() if not k.startswith("_")} for change in self.changes]),
            "waited_seconds": round(self.waited_seconds, 3),
            "started_at": self.started_at,
            "ended_at": self.ended_at,
        }

    def walk(self) -> Iterator["Run"]:
        """This run and every sub-agent run under it."""
        yield self
        for child in self.children:
            yield from child.walk()

    def tree_usage(self) -> Usage:
        """The LM usage of this run and all its sub-agents together (``self.usage`` is this run's own)."""
        total = Usage()
        for each in self.walk():
            total.merge(each.usage)
        return total

    def __repr__(self) -> str:
        head = self.task.strip().splitlines()[0][:60] if self.task.strip() else ""
        return f"<Run {self.id} {self.status} steps={len(self.steps)} task={head!r}>"


RESULT_CHARS = 100_000  # of a result that is data (a sub-agent's dict), as the record shows it


def _shown(value: Any) -> str:
    """A result that is not text, as its repr in the record: bounded, scrubbed of secrets."""
    text = repr(value)
    if len(text) > RESULT_CHARS:
        text = text[:RESULT_CHARS] + f"... ({len(text) - RESULT_CHARS:,} more characters)"
    return scrub(text)
