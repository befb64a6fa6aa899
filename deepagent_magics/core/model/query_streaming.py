"""Streaming ``llm_query``: the answer a running step's code is waiting for, on the run's events as it arrives.

RLM's ``llm_query`` and ``llm_query_batched`` call the run's LM (``sub_lm``, else the loop's
LM) with one prompt string, synchronously, from the agent's code. For a run, that LM is the
copy `retries.with_retries` makes, whose class puts `StreamingQueries` first: a call shaped
like an ``llm_query`` (one prompt string, no other arguments) made while a step of the active
run is running is made as DSPy's async call with a `QueryStream` as its ``send_stream``, in
the calling thread (or a helper thread beside a running event loop), exactly as
`step_streaming.call` does for a step. Each query of a run gets a number; `LLM_QUERY_STREAMING`
events say ``tool`` ("llm_query"), ``step`` (the running step), ``query`` (its number), ``text``
(the newest `step_streaming.SHOWN_CHARS` of the answer so far, scrubbed), ``elapsed``, and
``done`` (the last event of a query).

The answer is the same (a streamed call returns what the plain one does), the event is
transient (`event_kinds.TRANSIENT`: the record and the event log skip it), and it falls back to
the plain call, silently, everywhere `step_streaming.call` does: not DSPy's client, an opted-out
run, something else already streaming, a server that will not stream, and a stream cut off
midway (asked again, whole and unstreamed, once). Any other call (a step's fallback with
messages, the compaction summary between steps) is the plain call.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
import weakref
from typing import Any

import dspy

from ..run.secrets import scrub
from .step_streaming import (
    LLM_QUERY_STREAMING,
    StepStream,
    StreamCancelled,
    _retryable,
    _run,
    _tail,
    _unreadable,
    can_stream,
    refuses,
    wanted,
)

TOOL = "llm_query"
_numbers: "weakref.WeakKeyDictionary[Any, itertools.count[int]]" = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def _number(run: Any) -> int:
    with _lock:
        counter = _numbers.get(run)
        if counter is None:
            counter = _numbers[run] = itertools.count(1)
        return next(counter)


class QueryStream(StepStream):
    """DSPy's ``send_stream`` for one ``llm_query``: its chunks become `LLM_QUERY_STREAMING` events."""

    def __init__(self, run: Any, step: int):
        super().__init__(run)
        self.step = step
        self.query = _number(run)

    def emit(self, done: bool = False) -> None:
        if self.run.ended_at is not None:
            return  # a late chunk of a run that has ended shows nothing
        self._last = time.monotonic()
        self.run.emit(LLM_QUERY_STREAMING, tool=TOOL, step=self.step, query=self.query,
                      text=scrub(_tail("".join(self.parts))), elapsed=round(time.time() - self.started, 1), done=done)


def _target(lm: Any, args: tuple, kwargs: dict[str, Any]) -> tuple[Any, int] | None:
    """(run, step) when this call is an ``llm_query`` of a running step that can stream, else None."""
    if len(args) != 1 or not isinstance(args[0], str) or kwargs:
        return None
    from ..run import session as _session

    session = _session.active()
    run = session.run if session is not None else None
    step = run.open_step if run is not None and run.ended_at is None else None
    if step is None or not can_stream(lm) or not wanted(run) or dspy.settings.send_stream is not None:
        return None
    return run, step.index


class StreamingQueries:
    """Mixed in first into the run's LM class (`retries.with_retries`): ``llm_query`` calls stream."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        target = _target(self, args, kwargs)
        if target is None:
            return super().__call__(*args, **kwargs)  # type: ignore[misc]
        return _streamed(self, *target, args[0])


def _streamed(lm: Any, run: Any, step: int, prompt: str) -> Any:
    plain = super(StreamingQueries, lm)
    stream = QueryStream(run, step)
    stream.emit()  # "llm_query 1 · waiting…" from the moment the call goes out

    async def call() -> Any:
        ticking = asyncio.ensure_future(stream.tick(asyncio.current_task()))
        try:
            with dspy.context(send_stream=stream):
                return await plain.acall(prompt)
        finally:
            ticking.cancel()

    try:
        return _run(call, stream)
    except StreamCancelled:
        raise
    except Exception as exc:
        if not stream.chunks and _unreadable(exc):
            refuses(lm)  # a server that answers a request to stream with something else: ask plainly from now on
            return plain.__call__(prompt)
        if stream.chunks and _retryable(exc):
            stream.parts.clear()
            stream.emit()  # what was shown of the broken answer goes; the query is asked again, whole
            return plain.__call__(prompt)
        raise
    finally:
        stream.emit(done=True)
