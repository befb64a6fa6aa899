"""Spans as a real OpenTelemetry SDK keeps them: a tracer provider of the test's own, its in-memory exporter.

`Captured().tracing` is the tracing capability on that provider (``Tracing(provider=...)``), so a test
traces its own runs without touching OpenTelemetry's global provider (which a process sets once);
``test_provider.py`` configures the global one in a fresh interpreter, as a user does.
"""

from __future__ import annotations

from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from deepagent_magics.tracing import Tracing


class Captured:
    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracing = Tracing(provider=self.provider)

    @property
    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def named(self, name: str) -> list[ReadableSpan]:
        """The spans called ``name`` exactly, in the order they ended."""
        return [span for span in self.spans if span.name == name]

    def one(self, name: str) -> ReadableSpan:
        found = self.named(name)
        assert len(found) == 1, (name, [span.name for span in self.spans])
        return found[0]

    def parent(self, span: ReadableSpan) -> ReadableSpan | None:
        """The span's parent among the captured ones (None: a root, or a parent not captured)."""
        if span.parent is None:
            return None
        return next((each for each in self.spans if each.context.span_id == span.parent.span_id), None)

    def children(self, span: ReadableSpan) -> list[ReadableSpan]:
        return [each for each in self.spans if each.parent is not None and each.parent.span_id == span.context.span_id]

    def text(self) -> str:
        """Everything the spans say, as one text: names, attributes, events and status descriptions."""
        parts: list[str] = []
        for span in self.spans:
            parts += [span.name, str(span.status.description or "")]
            parts += [f"{key}={_text(value)}" for key, value in (span.attributes or {}).items()]
            for event in span.events:
                parts += [event.name] + [f"{key}={_text(value)}" for key, value in (event.attributes or {}).items()]
        return "\n".join(parts)


def _text(value: Any) -> str:
    return " ".join(map(str, value)) if isinstance(value, (tuple, list)) else str(value)
