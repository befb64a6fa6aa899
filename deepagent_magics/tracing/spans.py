"""The spans of one traced run tree: each run's ``invoke_agent`` span, its open step, and where a new span goes.

A run tree is traced when its root starts with a tracer provider configured (`provider.Tracing.on_run`);
the tree keeps one `TreeTrace` (``run.tree.tracing``) and each of its runs a `RunTrace`, made as the run
starts and forgotten when it ends. Every span is made here, on the host, in the run's own process: a
sub-agent's model calls and tools run on the host too, only its code runs in its kernel.

Where a span goes (its parent) is decided from what the host knows, never from what a kernel sends:

- a root run: under the span current where ``DeepAgent.run`` was called (a user's own span), else a trace
  of its own;
- a sub-agent's run: under the ``execute_tool`` span of the ``delegate`` call that started it (current in
  the sub-agent's thread, which starts in a copy of its caller's context), else under its parent's step;
- a step: under its run; a step's ``chat``: under the step; an ``llm_query``'s ``chat``: under the tool call
  current in its thread, else the step; a tool call: under its run's open step, else the run.

The step span opens with the step's model call (`operations.chat_span`) and ends with the step's ``step_finished``
event; the run's span ends with ``run_finished``, with an error status unless the run finished. A step's
W3C Trace Context (`TreeTrace.headers`) goes to a sub-agent's kernel with the step (``interpreters/kernel.py``),
where the step's code finds it as ``TRACEPARENT`` (what a process it starts reads to join the trace).
"""

from __future__ import annotations

import itertools
import threading
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from ..core.run.event_kinds import RUN_FINISHED, STEP_FINISHED, STEP_STARTED
from ..core.run.run import Event, Run
from . import conventions as names

_W3C = TraceContextTextMapPropagator()
DESCRIPTION_CHARS = 500  # a span status's description: the run's one-line error


class TreeTrace:
    """One run tree's tracing: its tracer, whether content is recorded, each live run's `RunTrace`."""

    def __init__(self, owner: Any, tracer: trace.Tracer, content: bool):
        self.owner = owner  # the `provider.Tracing` that traces this tree
        self.tracer = tracer
        self.content = content
        self.trace_id: int | None = None  # the root's trace: a sub-agent's parent span must be in it
        self.runs: dict[Run, RunTrace] = {}
        self._lock = threading.Lock()

    def of(self, run: Any) -> "RunTrace | None":
        return self.runs.get(run) if run is not None else None

    def start_run(self, agent: Any, run: Run, lms: dict[str, Any]) -> "RunTrace":
        parent = self.runs.get(run.parent) if run.parent is not None else None
        traced = RunTrace(self, run, agent, lms.get("lm"), self._parent_context(parent))
        with self._lock:
            self.runs[run] = traced
            if self.trace_id is None:
                self.trace_id = traced.span.get_span_context().trace_id
        self.owner.started()
        run.subscribe(traced.on_event)
        return traced

    def ended(self, run: Run) -> None:
        with self._lock:
            self.runs.pop(run, None)
        self.owner.ended()

    def _parent_context(self, parent: "RunTrace | None") -> Any:
        """Where a new run's span goes: the current span (a user's, or the ``delegate`` call that started this
        sub-agent), unless this is a sub-agent and the current span is not of this tree's trace (then its
        parent's step)."""
        current = otel_context.get_current()
        if parent is None:
            return current
        if trace.get_current_span(current).get_span_context().trace_id == self.trace_id:
            return current
        return trace.set_span_in_context(parent.step or parent.span)

    def headers(self, run: Any) -> dict[str, str]:
        """Where ``run`` is now (its open step, else the run) as W3C Trace Context headers: ``traceparent``
        and, when the trace has one, ``tracestate``. Empty for a run this tree does not trace."""
        traced = self.of(run)
        if traced is None:
            return {}
        carrier: dict[str, str] = {}
        _W3C.inject(carrier, context=trace.set_span_in_context(traced.step or traced.span))
        return carrier


class RunTrace:
    """One run's spans: its ``invoke_agent`` span, the step open now, the numbers of its tool calls."""

    def __init__(self, tree: TreeTrace, run: Run, agent: Any, lm: Any, parent: Any):
        self.tree = tree
        self.run = run
        self.name = names.agent_name(run.profile)
        self.common: dict[str, Any] = {names.AGENT_NAME: self.name}
        thread = run.config.get("thread")
        if isinstance(thread, str) and thread:
            self.common[names.CONVERSATION] = thread
        lm_part = names.lm_attributes(lm) if lm is not None else {names.PROVIDER: names.OTHER}
        attributes = {names.OPERATION: names.INVOKE_AGENT, **self.common, **lm_part,
                      names.RUN_ID: run.id, names.RUN_DEPTH: run.depth}
        if tree.content:
            attributes[names.INPUT_MESSAGES] = names.messages("user", run.task)
        self.span: Span = tree.tracer.start_span(f"{names.INVOKE_AGENT} {self.name}", context=parent,
                                                 kind=SpanKind.INTERNAL, attributes=attributes)
        self.step: Span | None = None
        self.step_index = 0
        self.tool_calls = itertools.count(1)
        self._lock = threading.Lock()

    # ------------------------------------------------------------ where a span goes
    def step_for_call(self) -> Span:
        """The step a model call of this run's loop belongs to: the one open for the step about to begin (a
        retried reply keeps it), else a new one (a step that never ran is ended first)."""
        index = len(self.run.steps) + 1
        with self._lock:
            if self.step is not None and self.step_index == index:
                return self.step
            stale = self.step
            self.step = self.tree.tracer.start_span(
                names.STEP_SPAN, context=trace.set_span_in_context(self.span), kind=SpanKind.INTERNAL,
                attributes={**self.common, names.STEP_INDEX: index})
            self.step_index = index
            step = self.step
        if stale is not None:
            stale.end()
        return step

    def inner(self) -> Any:
        """The context a tool call of this run goes under: its open step, else the run."""
        return trace.set_span_in_context(self.step or self.span)

    def current_or_inner(self) -> Any:
        """The current context when its span is of this tree's trace (an ``llm_query`` inside its tool call),
        else `inner`."""
        current = otel_context.get_current()
        if trace.get_current_span(current).get_span_context().trace_id == self.tree.trace_id:
            return current
        return self.inner()

    # ------------------------------------------------------------ the run's events
    def on_event(self, event: Event) -> None:
        if event.run is not self.run:
            return  # a sub-agent's event, on its way up: its own RunTrace has it
        if event.kind == STEP_STARTED:
            self._step_started(event.data)
        elif event.kind == STEP_FINISHED:
            self._step_finished(event.data)
        elif event.kind == RUN_FINISHED:
            self._finished(event.data)

    def _step_started(self, data: dict[str, Any]) -> None:
        step = self.step if self.step_index == data.get("index") else None
        if step is not None and self.tree.content:
            step.set_attribute(names.STEP_CODE, names.text(data.get("code") or ""))

    def _step_finished(self, data: dict[str, Any]) -> None:
        """End the open step; a step the run's own end closes stays open for `_finished`, which ends it as the
        run ended (in error, for an interrupted or failed run)."""
        closing_run = self.run.ended_at is not None
        with self._lock:
            if self.step is None or self.step_index != data.get("index"):
                return  # an earlier step closed late, or one this run opened before it was traced
            step = self.step
            if not closing_run:
                self.step = None
        if self.tree.content:
            step.set_attribute(names.STEP_OUTPUT, names.text(data.get("output") or ""))
        if not closing_run:
            step.end()

    def _finished(self, data: dict[str, Any]) -> None:
        status = str(data.get("status") or "")
        run = self.run
        with self._lock:
            step, self.step = self.step, None
        span = self.span
        span.set_attribute(names.RUN_STATUS, status)
        usage = run.usage
        if usage.lm_calls:
            span.set_attribute(names.INPUT_TOKENS, usage.input_tokens)
            span.set_attribute(names.OUTPUT_TOKENS, usage.output_tokens)
        if self.tree.content and data.get("result") is not None:
            span.set_attribute(names.OUTPUT_MESSAGES, names.messages("assistant", _shown(data.get("result")), status))
        if status != "finished":
            kind = names.error_type(run.exception) if status == "failed" else status
            for each in (step, span):
                if each is not None:
                    failed(each, kind, data.get("error") or status)
        if step is not None:
            step.end()
        span.end()
        self.tree.ended(run)


def failed(span: Span, kind: str, description: Any = None) -> None:
    """Mark ``span`` as ended in error: ``error.type`` and an error status (the description scrubbed, short)."""
    span.set_attribute(names.ERROR_TYPE, kind)
    shown = names.text(str(description), DESCRIPTION_CHARS) if description else None
    span.set_status(Status(StatusCode.ERROR, shown))


def _shown(result: Any) -> str:
    return result if isinstance(result, str) else names.text(result)
