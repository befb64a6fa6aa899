"""Tracing: each run as OpenTelemetry spans by the GenAI semantic conventions, when the user configured a provider.

One capability (`provider.Tracing`, standard as ``TRACING``) built like every other: a layer in the one
pipeline (the ``chat`` span of each model call: `operations`), a hook around each tool call (``execute_tool``:
`operations.traced_tool`) and a run hook that opens the run's ``invoke_agent`` span and follows its events
(`spans`). What a span says, by the conventions: `conventions`. Importing it imports no OpenTelemetry.
docs/tracing.md is the user's guide.
"""

from .provider import TRACING, Tracing

__all__ = ["TRACING", "Tracing"]
