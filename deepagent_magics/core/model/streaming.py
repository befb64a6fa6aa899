"""Streaming: what the model writes, on the run's events as it arrives: a step's reasoning and code, an ``llm_query``'s answer.

A step's LM call can take many seconds. When the run's LM is DSPy's own client, the
pipeline's streaming layer (`core.loop.pipeline`) asks it to stream: a step's call goes through
``dspy.Predict.aforward`` with a `StepStream` as DSPy's ``send_stream`` (what
``dspy.streamify`` sets up), so every chunk the provider sends arrives here, in the
calling thread (or, under a running event loop such as a notebook's, a helper thread
while the caller waits). `StepStream` keeps the text so far, splits it into the
``reasoning`` and ``code`` fields (DSPy's ``[[ ## field ## ]]`` markers), keeps the newest
`SHOWN_CHARS` of each, scrubs them of secrets like every text a run emits, and emits
`STEP_STREAMING` at most every `THROTTLE` seconds, and every `TICK` seconds while nothing
arrives: ``index`` (the step being written), ``reasoning``, ``code`` and ``elapsed``
(seconds since the call began).

An ``llm_query`` prompt a running step's code is waiting for (each prompt of
``llm_query_batched`` too) streams the same way (`streamed_query`): its chunks become
`LLM_QUERY_STREAMING` events (a `QueryStream`): ``tool`` ("llm_query"), ``step`` (the running
step), ``query`` (its number in the run), ``text`` (the newest `SHOWN_CHARS` of the answer so
far, scrubbed), ``elapsed``, and ``done`` (the last event of a query). Both go through one call,
`streamed_call`, with the same fallbacks.

Streaming changes only what is shown while the model writes: the prediction and the answer are
the same, and the events are transient (`TRANSIENT`: the event log and the record skip them), so
a run's record is the same with and without it. It falls back, silently, to the ordinary
call when the LM is not DSPy's client (``ScriptedLM``, ``DummyLM``, a custom engine),
when something else already streams (``dspy.streamify`` around the agent), when the
run (or an ancestor) opted out (``DeepAgent(stream=False)``, ``--no-stream``), when a
stream breaks after it began (DSPy does not retry a call that already emitted: that call
is made again, unstreamed, once), and when the server answers a request to stream with
no stream at all (that call is made again unstreamed, and that LM is not asked to stream
again). An answer of a step that does not parse gets DSPy's own next try, the JSON adapter
(which DSPy skips once a stream has shown text), so a model answering in JSON or prose is asked
exactly as without streaming. The displays show them: display/streaming.py.
"""

from __future__ import annotations

import asyncio
import contextvars
import itertools
import re
import threading
import time
import weakref
from typing import Any, Callable

import dspy

from ...errors import DeepAgentError
from ..run.secrets import scrub
from ..run.run_tree import tree_of
from ..run.event_kinds import LLM_QUERY_STREAMING, STEP_STREAMING, TRANSIENT  # noqa: F401 - TRANSIENT: read here
from .calls import Call, ModelCall

THROTTLE = 0.1  # seconds between two events of one streaming step
SHOWN_CHARS = 4000  # of each field, the newest; the step's entry shows the whole once it is written
TICK = 1.0  # seconds between two events of a step while no text arrives (its "writing… Ns" goes on)
_MARKER = re.compile(r"\[\[ ## (\w+) ## \]\]")
_no_stream: "weakref.WeakSet[Any]" = weakref.WeakSet()  # LMs whose server answered a stream request unstreamed
_lock = threading.Lock()


class StreamCancelled(DeepAgentError):
    """The caller stopped waiting (an interrupt): the stream ends at its next chunk."""


def opt_out(run: Any) -> None:
    """Do not stream the steps of ``run``'s tree (its root and every sub-agent)."""
    run.tree.stream = False


def wanted(run: Any) -> bool:
    tree = tree_of(run)
    return tree is None or tree.stream


def can_stream(lm: Any) -> bool:
    """Whether ``lm`` is DSPy's own client for a chat model (a custom engine may not stream) whose server streams."""
    if not (isinstance(lm, dspy.LM) and getattr(lm, "_engine_spec", None) in ("auto", "lm15", "litellm")
            and getattr(lm, "model_type", "chat") == "chat"):
        return False
    with _lock:
        return lm not in _no_stream


def fields(text: str) -> tuple[str, str]:
    """The ``reasoning`` and ``code`` written so far (the raw text while no marker has come)."""
    found = {}
    marks = list(_MARKER.finditer(text))
    for mark, following in zip(marks, [*marks[1:], None]):
        found[mark.group(1)] = text[mark.end():following.start() if following else len(text)]
    if not marks:
        return _unfinished(text).strip(), ""
    return _unfinished(found.get("reasoning", "")).strip(), _unfinished(found.get("code", "")).strip()


def _prefix_pattern(parts: list[str]) -> re.Pattern[str]:
    pattern = ""
    for part in reversed(parts):
        pattern = f"(?:{part}{pattern})?"
    return re.compile(pattern)


# What a marker looks like while it is still arriving: "[", "[[ ", "[[ ## co", "[[ ## code ## ]".
_MARKER_START = _prefix_pattern([r"\[", r"\[", " ", "#", "#", " ", r"\w+", " ", "#", "#", " ", r"\]"])


def _unfinished(text: str) -> str:
    """``text`` without a marker cut off at its end (``\\n\\n[[ ## co``)."""
    at = text.find("[", max(0, len(text) - 24))
    while at >= 0:
        if _MARKER_START.fullmatch(text, at):
            return text[:at]
        at = text.find("[", at + 1)
    return text


def tail(text: str) -> str:
    """The newest `SHOWN_CHARS` of ``text`` (a display patched ten times a second must not carry megabytes)."""
    return text if len(text) <= SHOWN_CHARS else "…" + text[-(SHOWN_CHARS - 1):]


def _content(chunk: Any) -> str:
    """The text a chunk adds (DSPy's chunks are shaped like OpenAI's: ``choices[0].delta.content``)."""
    try:
        choices = chunk["choices"] if isinstance(chunk, dict) else chunk.choices
        delta = choices[0]["delta"] if isinstance(choices[0], dict) else choices[0].delta
        content = delta.get("content") if isinstance(delta, dict) else getattr(delta, "content", None)
    except (AttributeError, IndexError, KeyError, TypeError):
        return ""
    return content if isinstance(content, str) else ""


class StepStream:
    """DSPy's ``send_stream`` for one step's LM call: turns its chunks into `STEP_STREAMING` events."""

    def __init__(self, run: Any, throttle: float = THROTTLE):
        self.run = run
        self.index = len(run.steps) + 1
        self.throttle = throttle
        self.parts: list[str] = []
        self.chunks = 0
        self.started = time.time()
        self.cancelled = False
        self._last = float("-inf")

    async def send(self, chunk: Any) -> None:
        if self.cancelled:
            raise StreamCancelled("the caller stopped waiting for this step")
        piece = _content(chunk)
        if not piece:
            return
        self.parts.append(piece)
        self.chunks += 1
        if time.monotonic() - self._last >= self.throttle:
            self.emit()

    def emit(self) -> None:
        if self.run.ended_at is not None:
            return  # a late chunk of a run that has ended shows nothing
        self._last = time.monotonic()
        reasoning, code = fields("".join(self.parts))
        self.run.emit(STEP_STREAMING, index=self.index, reasoning=scrub(tail(reasoning)), code=scrub(tail(code)),
                      elapsed=round(time.time() - self.started, 1))

    async def tick(self, call: "asyncio.Task[Any] | None" = None, every: float = TICK) -> None:
        """Emit again when nothing has come for ``every`` seconds (a model thinking before it writes);
        once cancelled, cancel ``call`` too (an interrupt while the model is silent)."""
        while True:
            await asyncio.sleep(min(every, 0.2))
            if self.cancelled:
                if call is not None:
                    call.cancel()
                return
            if time.monotonic() - self._last >= every:
                self.emit()

    def cancel(self) -> None:
        self.cancelled = True


def call(predict: Any, lm: Any, kwargs: dict[str, Any], plain: Callable[[], Any]) -> Any:
    """The step's LM call, streamed into the run's events when it can be (see the module docstring)."""
    from ..run import session as _session

    session = _session.active()
    run = session.run if session is not None else None
    if run is None or not can_stream(lm) or not wanted(run) or dspy.settings.send_stream is not None:
        return plain()
    return streamed_call(StepStream(run), lambda: dspy.Predict.aforward(predict, **kwargs), plain, lm,
                         json_fallback=True)


def streamed_call(stream: "StepStream", start: Callable[[], Any], plain: Callable[[], Any], lm: Any, *,
                  json_fallback: bool = False) -> Any:
    """``start()`` (a coroutine: DSPy's async call) made with ``stream`` as DSPy's ``send_stream``, here or beside
    a running event loop; what a step and an ``llm_query`` fall back on alike: a server that will not stream
    (``plain()``, and ``lm`` is not asked to stream again), an answer that does not parse (DSPy's own JSON
    adapter, ``json_fallback``: a step's), a stream cut off midway (``plain()`` once, what was shown taken back)."""
    stream.emit()  # "writing…" from the moment the call goes out

    async def streamed() -> Any:
        ticking = asyncio.ensure_future(stream.tick(asyncio.current_task()))  # "writing… Ns" goes on
        try:
            with dspy.context(send_stream=stream):
                return await start()
        finally:
            ticking.cancel()

    try:
        return _run(streamed, stream)
    except StreamCancelled:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever the streamed call raised: a fallback below, or raised as it is
        if not stream.chunks and _unreadable(exc):
            refuses(lm)  # a server that answers a request to stream with something else: ask plainly from now on
            return plain()
        fallback = _json_fallback(exc) if json_fallback else None
        if fallback is not None:  # DSPy's own next try, which it skips once a stream has shown text
            with dspy.context(adapter=fallback):
                return plain()
        if stream.chunks and _retryable(exc):
            stream.parts.clear()
            stream.emit()  # what was shown of the broken answer goes; the call is asked again, whole
            return plain()  # a stream cut off midway: DSPy retries only what has not emitted
        raise


def refuses(lm: Any) -> None:
    """``lm``'s server does not stream: its steps are asked for whole from now on."""
    with _lock:
        try:
            _no_stream.add(lm)
        except TypeError:
            pass


def _json_fallback(exc: BaseException) -> Any:
    """The JSON adapter ChatAdapter would have asked next when an answer does not parse, or None.

    ChatAdapter falls back to JSONAdapter on a parse error only when nothing was streamed;
    a streamed step asks it here, so a model answering in JSON (or in prose) gets the same
    second request as without streaming.
    """
    from dspy.adapters.chat_adapter import ChatAdapter
    from dspy.adapters.json_adapter import JSONAdapter
    from dspy.utils.exceptions import AdapterParseError

    adapter = dspy.settings.adapter or ChatAdapter()
    if (not isinstance(exc, AdapterParseError) or not isinstance(adapter, ChatAdapter)
            or isinstance(adapter, JSONAdapter) or not getattr(adapter, "use_json_adapter_fallback", True)):
        return None
    return adapter._make_json_adapter_fallback()


def _unreadable(exc: BaseException) -> bool:
    from dspy.utils.exceptions import LMStreamAssemblyError

    return isinstance(exc, LMStreamAssemblyError)


def _retryable(exc: BaseException) -> bool:
    from dspy.utils.exceptions import LMStreamAssemblyError, is_retryable_lm_error

    try:  # a stream that ended without its end (a dropped connection) is a transport fault too
        return isinstance(exc, LMStreamAssemblyError) or bool(is_retryable_lm_error(exc))
    except Exception:  # noqa: BLE001 - DSPy's classifier failing on an odd exception: not a transport fault
        return False


def _run(factory: Callable[[], Any], stream: StepStream) -> Any:
    """Run ``factory()`` to completion here, or beside a running event loop (a notebook's) in a helper thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(factory())
    context = contextvars.copy_context()  # the run's dspy settings and session
    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            outcome["value"] = context.run(asyncio.run, factory())
        except BaseException as exc:  # everything, BaseException too: re-raised in the caller's thread
            outcome["error"] = exc

    helper = threading.Thread(target=work, name="deepagent-step-stream", daemon=True)
    helper.start()
    try:
        while helper.is_alive():  # in slices: a signal handled by another thread still reaches this one
            helper.join(0.1)
    except BaseException:  # an interrupt: stop the stream (at its next chunk or tick)
        stream.cancel()
        raise
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


# ------------------------------------------------------------ an llm_query
TOOL = "llm_query"
_numbers: "weakref.WeakKeyDictionary[Any, itertools.count[int]]" = weakref.WeakKeyDictionary()
_numbers_lock = threading.Lock()


def _number(run: Any) -> int:
    with _numbers_lock:
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
                      text=scrub(tail("".join(self.parts))), elapsed=round(time.time() - self.started, 1), done=done)


def query_streams(call: ModelCall) -> bool:
    """Whether this query can stream: a step of its run is running, its LM is DSPy's client, nothing else streams."""
    run = call.run
    step = run.open_step if run is not None and run.ended_at is None else None
    return step is not None and can_stream(call.lm) and wanted(run) and dspy.settings.send_stream is None


def streamed_query(call: ModelCall, next_call: Call) -> Call:
    """The query ``next_call`` (its plain call), made streamed instead (the pipeline's streaming layer)."""
    def query(**inputs: Any) -> Any:
        run, lm, prompt = call.run, call.lm, inputs["prompt"]
        stream = QueryStream(run, run.open_step.index)
        try:
            return streamed_call(stream, lambda: lm.acall(prompt), lambda: next_call(**inputs), lm)
        finally:
            stream.emit(done=True)
    return query
