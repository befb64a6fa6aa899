"""A ``chat`` span around each model call of a traced run, and an ``execute_tool`` span around each tool call.

`CHAT` is the capability's layer in the one pipeline (``core/loop/pipeline.py``, at the place it keeps for
capabilities): around every step and every ``llm_query`` prompt of a traced run, the root's and every
sub-agent's. What the provider answered (the model that answered, tokens, why it stopped, the reply) is read
from DSPy's history entry of each request the call made (`Replies`, a caller module for the call's time, as
the run's usage sink is for the run's): a call that was asked again inside (a provider's retry, a stop the
provider refused) is one span with the tokens of every request.

`traced_tool` is its ``around_tool``: the tool call's span is current while the tool runs, so what the tool
starts goes under it (a ``delegate``'s sub-agent, an ``llm_query``'s ``chat``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Callable

import dspy
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind

from ..core.loop.tool_binding import ANSWERS_ERRORS
from ..core.model.caching import cached_tokens
from ..core.model.calls import QUERY, STEP, Layer, ModelCall, within
from . import conventions as names
from .spans import RunTrace, failed


def run_trace(call: ModelCall) -> RunTrace | None:
    """The `RunTrace` of the run ``call`` is made for (None: an untraced run, or no run)."""
    run = call.run
    tracing = getattr(getattr(run, "tree", None), "tracing", None)
    return tracing.of(run) if tracing is not None else None


@contextmanager
def chat_span(call: ModelCall) -> Iterator[None]:
    """The ``chat {model}`` span of one model call, current while it runs (an instrumented HTTP client's spans
    go under it), with what each request of it was answered."""
    traced = run_trace(call)
    assert traced is not None  # the layer applies only to a traced run's calls
    parent = trace.set_span_in_context(traced.step_for_call()) if call.kind == STEP else traced.current_or_inner()
    attributes = {names.OPERATION: names.CHAT, **names.lm_attributes(call.lm), **traced.common,
                  names.CALL_KIND: call.kind}
    span = traced.tree.tracer.start_span(f"{names.CHAT} {attributes[names.REQUEST_MODEL]}", context=parent,
                                         kind=SpanKind.CLIENT, attributes=attributes)
    replies = Replies()
    token = otel_context.attach(trace.set_span_in_context(span))
    try:
        with dspy.context(caller_modules=[*(dspy.settings.caller_modules or []), replies]):
            yield
    except BaseException as exc:
        failed(span, names.error_type(exc), exc)
        raise
    finally:
        otel_context.detach(token)
        replies.describe(span, traced.tree.content)
        span.end()


CHAT = Layer("tracing", "a chat span around each step and each llm_query of a run traced with OpenTelemetry",
             lambda call: run_trace(call) is not None, within(chat_span), frozenset({STEP, QUERY}))


class _Entries(list):
    """A caller module's ``history`` that keeps what DSPy appends (DSPy trims it to its size first: never)."""

    def pop(self, index: int = -1) -> None:
        return None

    def __len__(self) -> int:
        return 0


class Replies:
    """A stand-in caller module: the history entries of one model call's requests (`chat_span`)."""

    def __init__(self) -> None:
        self.history = _Entries()
        self._lock = threading.Lock()

    def describe(self, span: Span, content: bool) -> None:
        """Set on ``span`` what the provider answered: the last request's model, id, finish reasons (and, with
        content, what it was sent and wrote); every request's tokens."""
        entries = [entry for entry in list.__iter__(self.history) if isinstance(entry, dict)]
        if not entries:
            return
        totals = {names.INPUT_TOKENS: 0, names.OUTPUT_TOKENS: 0, names.CACHE_READ_TOKENS: 0}
        for entry in entries:
            usage = entry.get("usage") if isinstance(entry.get("usage"), dict) else {}
            totals[names.INPUT_TOKENS] += _count(usage.get("prompt_tokens") or usage.get("input_tokens"))
            totals[names.OUTPUT_TOKENS] += _count(usage.get("completion_tokens") or usage.get("output_tokens"))
            totals[names.CACHE_READ_TOKENS] += cached_tokens(usage)
        span.set_attributes({key: value for key, value in totals.items()
                             if value or key != names.CACHE_READ_TOKENS})
        last = entries[-1]
        response = last.get("response")
        if isinstance(last.get("response_model"), str):
            span.set_attribute(names.RESPONSE_MODEL, last["response_model"])
        response_id = _field(response, "id")
        if isinstance(response_id, str) and response_id:
            span.set_attribute(names.RESPONSE_ID, response_id)
        reasons = _finish_reasons(response)
        if reasons:
            span.set_attribute(names.FINISH_REASONS, reasons)
        if content:
            system, sent = names.chat_messages(last.get("messages") or last.get("prompt"))
            if system:
                span.set_attribute(names.SYSTEM_INSTRUCTIONS, system)
            if sent:
                span.set_attribute(names.INPUT_MESSAGES, sent)
            outputs = last.get("outputs") or []
            written = "\n".join(str(o.get("text", "")) if isinstance(o, dict) else str(o) for o in outputs)
            span.set_attribute(names.OUTPUT_MESSAGES,
                               names.messages("assistant", written, reasons[0] if reasons else None))


def _finish_reasons(response: Any) -> list[str]:
    """Why the provider stopped, per choice: an OpenAI-shaped response's choices, or a DSPy lm15 `Response`'s."""
    choices = _field(response, "choices")
    if isinstance(choices, list) and choices:
        found = [_field(choice, "finish_reason") for choice in choices]
    else:
        found = [_field(response, "finish_reason")]
    return [str(getattr(reason, "value", reason)) for reason in found if reason]


def _field(value: Any, name: str) -> Any:
    return value.get(name) if isinstance(value, dict) else getattr(value, name, None)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


# ------------------------------------------------------------ tool calls
def traced_tool(traced: RunTrace, name: str, call: Callable[..., Any]) -> Callable[..., Any]:
    """``call`` (tool ``name`` of a traced run) with an ``execute_tool`` span around each call."""
    tracer = traced.tree.tracer
    described = (getattr(call, "__doc__", None) or "").strip().split("\n\n")[0].strip()
    answers_errors = getattr(call, ANSWERS_ERRORS, False)
    fixed = {names.OPERATION: names.EXECUTE_TOOL, **traced.common, names.TOOL_NAME: name, names.TOOL_TYPE: "function"}
    if described:
        fixed[names.TOOL_DESCRIPTION] = " ".join(described.split())[:500]

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        attributes = {**fixed, names.TOOL_CALL_ID: f"{traced.run.id}-{next(traced.tool_calls)}"}
        if traced.tree.content:
            attributes[names.TOOL_ARGUMENTS] = names.text({**{str(i): a for i, a in enumerate(args)}, **kwargs})
        span = tracer.start_span(f"{names.EXECUTE_TOOL} {name}", context=traced.inner(), kind=SpanKind.INTERNAL,
                                 attributes=attributes)
        token = otel_context.attach(trace.set_span_in_context(span))
        try:
            result = call(*args, **kwargs)
        except BaseException as exc:
            failed(span, names.error_type(exc), exc)
            raise
        else:
            if answers_errors and isinstance(result, str) and result.startswith("Error:"):
                failed(span, "tool_error", result if traced.tree.content else None)  # the model reads it
            if traced.tree.content:
                span.set_attribute(names.TOOL_RESULT, names.text(result))
            return result
        finally:
            otel_context.detach(token)
            span.end()

    return wrapper
