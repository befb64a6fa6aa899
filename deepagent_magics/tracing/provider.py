"""Tracing as a capability: a run tree is traced when its root starts with a tracer provider configured.

`Tracing` is one of the standard capabilities (``standard.py``). As each run starts (``on_run``) it looks
for a tracer provider: the one it was given (``Tracing(provider=...)``), else OpenTelemetry's global one,
set by the user's code (``trace.set_tracer_provider``) or by ``opentelemetry-instrument``. With none, or
without ``opentelemetry-api``, it does nothing: OpenTelemetry is not even imported when nothing imported it
first, its layer is not in the pipeline (``layers`` is empty while no run is traced) and its
``around_tool`` hands each tool back as it is, so an untraced step pays for nothing
(``python -m bench.run --only tracing`` measures it).

Prompts, replies, tool arguments and results, the task and the answer are recorded only when the user opts
in: the conventions' switch ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`` (or ``SPAN_ONLY``,
``SPAN_AND_EVENT``), or the ``trace_content`` setting (``DeepAgent(trace_content=True)``,
``%deepagent_config --trace-content``). Secrets never: content is scrubbed (``core/run/secrets.py``), and
an LM's key, headers and client settings are never read. docs/tracing.md is the user's guide.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import sys
import threading
from typing import Any, Callable

from ..core.loop.capability import Capability
from ..settings import TRACING as NAME

CONTENT_SWITCH = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
CONTENT_ON = {"true", "1", "yes", "on", "span_only", "span_and_event"}  # the spans carry it (not "event_only")
PROVIDER_VARIABLE = "OTEL_PYTHON_TRACER_PROVIDER"  # OpenTelemetry's own way to name a provider by entry point
INSTRUMENTATION = "deepagent_magics"


def global_provider() -> Any:
    """OpenTelemetry's global tracer provider when one is configured; None when none is (the API's default
    proxy or its no-op one), or when the API is not installed. OpenTelemetry is imported only when something
    imported it already or names a provider by variable: configuring one does either."""
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        if not os.environ.get(PROVIDER_VARIABLE):
            return None
        try:
            from opentelemetry import trace
        except ImportError:
            return None
    provider = trace.get_tracer_provider()
    if isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider)):
        return None
    return provider


def content_wanted(agent: Any) -> bool:
    """Whether spans carry content: the agent's ``trace_content``, else the conventions' switch."""
    if getattr(agent, "trace_content", False):
        return True
    return os.environ.get(CONTENT_SWITCH, "").strip().lower() in CONTENT_ON


class Tracing(Capability):
    """Every run as OpenTelemetry spans by the GenAI semantic conventions, when a tracer provider is
    configured (see the module docstring).

    Args:
        provider: the tracer provider to use; None: OpenTelemetry's global one, looked for as each root run
            starts. An agent given one (``DeepAgent(extensions=[Tracing(provider=mine)])``) traces with it;
            the standard one then stands aside.
    """

    name = NAME

    def __init__(self, provider: Any = None):
        super().__init__()
        self.provider = provider
        self._traced_runs = 0
        self._count_lock = threading.Lock()

    @property
    def layers(self) -> tuple[Any, ...]:  # type: ignore[override]
        """The chat layer while a run this capability traces is live; nothing otherwise (no run pays for it)."""
        if not self._traced_runs:
            return ()
        from .operations import CHAT

        return (CHAT,)

    def on_run(self, agent: Any, run: Any, lms: dict[str, Any]) -> None:
        tree = run.tree
        if tree.tracing is None:
            if run.parent is not None:
                return  # a tree is traced from its root, or not at all
            if self.provider is None and _another_has_a_provider(agent, self):
                return
            provider = self.provider if self.provider is not None else global_provider()
            if provider is None:
                return
            from .spans import TreeTrace

            tracer = provider.get_tracer(INSTRUMENTATION, _version())
            tree.tracing = TreeTrace(self, tracer, content_wanted(agent))
        if tree.tracing.owner is self:
            tree.tracing.start_run(agent, run, lms)

    def around_tool(self, session: Any, name: str, call: Callable[..., Any]) -> Callable[..., Any]:
        tracing = getattr(getattr(session, "run", None), "tree", None)
        tracing = getattr(tracing, "tracing", None)
        traced = tracing.of(session.run) if tracing is not None and tracing.owner is self else None
        if traced is None:
            return call
        from .operations import traced_tool

        return traced_tool(traced, name, call)

    # ------------------------------------------------------------ how many runs it traces now (its layer's switch)
    def started(self) -> None:
        with self._count_lock:
            self._traced_runs += 1

    def ended(self) -> None:
        with self._count_lock:
            self._traced_runs = max(0, self._traced_runs - 1)


@functools.cache
def _version() -> str | None:
    try:
        return importlib.metadata.version("deepagent-magics")
    except importlib.metadata.PackageNotFoundError:
        return None


def _another_has_a_provider(agent: Any, me: Tracing) -> bool:
    extensions = getattr(agent, "extensions", None) or ()
    return any(isinstance(each, Tracing) and each is not me and each.provider is not None for each in extensions)


TRACING = Tracing()
