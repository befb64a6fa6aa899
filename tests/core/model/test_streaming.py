"""core/model/streaming.py: chunks become transient events, split into fields, throttled and scrubbed, with fallbacks.

Through whole runs on the local provider (steps, ``llm_query``, servers that will not stream, broken
streams, the JSON adapter's second try) see ``tests/adversarial/test_streaming.py`` and
``tests/adversarial/test_llm_query_streaming.py``.
"""

from __future__ import annotations

import asyncio
import threading
import time

import dspy
import pytest
from dspy.adapters.json_adapter import JSONAdapter
from dspy.utils.exceptions import AdapterParseError, LMAuthError, LMServerError, LMStreamAssemblyError

from deepagent_magics.core.model import streaming
from deepagent_magics.core.model.calls import QUERY, ModelCall
from deepagent_magics.core.model.streaming import (SHOWN_CHARS, QueryStream, StepStream, StreamCancelled,
                                                   can_stream, fields, opt_out, query_streams, refuses,
                                                   streamed_call, streamed_query, tail, wanted)
from deepagent_magics.core.run.event_kinds import LLM_QUERY_STREAMING, STEP_STREAMING, TRANSIENT
from deepagent_magics.core.run.run import Run
from deepagent_magics.core.run.secrets import REDACTED
from deepagent_magics.testing import ScriptedLM


def chunk(text) -> dict:
    return {"choices": [{"delta": {"content": text}}]}


def recorded(run: Run, kind: str = STEP_STREAMING) -> list[dict]:
    events: list[dict] = []
    run.subscribe(lambda event: events.append(event.data) if event.kind == kind else None)
    return events


# --------------------------------------------------------------------------- reading what has arrived
def test_before_any_marker_the_text_so_far_is_the_reasoning():
    assert fields("  Let me look at the data ") == ("Let me look at the data", "")


def test_the_markers_split_the_text_into_reasoning_and_code():
    text = "[[ ## reasoning ## ]]\nCount them.\n\n[[ ## code ## ]]\nprint(len(xs))"
    assert fields(text) == ("Count them.", "print(len(xs))")


@pytest.mark.parametrize("cut", ["[", "[[", "[[ ## co", "[[ ## code ## ]", "[[ ## code ##"])
def test_a_marker_still_arriving_is_not_shown(cut):
    assert fields("[[ ## reasoning ## ]]\nCount them.\n\n" + cut) == ("Count them.", "")


def test_a_bracket_that_is_not_a_marker_stays():
    assert fields("[[ ## code ## ]]\nxs = [1, 2, [3")[1] == "xs = [1, 2, [3"


def test_only_the_newest_characters_are_shown():
    assert tail("short") == "short"
    long = "a" * SHOWN_CHARS + "the end"
    assert tail(long) == "…" + long[-(SHOWN_CHARS - 1):] and len(tail(long)) == SHOWN_CHARS


@pytest.mark.parametrize(("piece", "text"), [
    (chunk("hi"), "hi"),
    (type("C", (), {"choices": [type("Ch", (), {"delta": type("D", (), {"content": "obj"})()})()]})(), "obj"),
    (chunk(None), ""),
    (chunk(42), ""),
    ({"choices": []}, ""),
    ("not a chunk", ""),
])
def test_a_chunks_text_is_read_from_either_shape_and_anything_else_adds_nothing(piece, text):
    assert streaming._content(piece) == text


# --------------------------------------------------------------------------- which calls stream
def test_only_dspys_own_client_for_a_chat_model_streams():
    assert can_stream(dspy.LM("openai/x", api_key="k"))
    assert not can_stream(dspy.LM("openai/x", api_key="k", model_type="text"))
    assert not can_stream(ScriptedLM([("s", "x = 1")]))
    assert not can_stream(object())


def test_an_lm_whose_server_refused_to_stream_is_not_asked_again():
    lm = dspy.LM("openai/x", api_key="k")
    refuses(lm)
    assert not can_stream(lm) and can_stream(dspy.LM("openai/x", api_key="k"))
    refuses(["not weak-referenceable"])  # said nothing, raised nothing


def test_a_tree_streams_until_it_opts_out():
    root = Run("root")
    child = root.add_child("child")
    assert wanted(root) and wanted(child) and wanted(None)
    opt_out(child)
    assert not wanted(root) and not wanted(child)


def test_the_streaming_events_are_transient():
    assert {STEP_STREAMING, LLM_QUERY_STREAMING} <= set(TRANSIENT)


# --------------------------------------------------------------------------- StepStream
def test_a_chunk_emits_the_step_being_written_split_into_its_fields():
    run = Run("t")
    run.begin_step("first", "x = 1")
    events = recorded(run)
    stream = StepStream(run, throttle=0)
    asyncio.run(stream.send(chunk("[[ ## reasoning ## ]]\nThink.\n\n[[ ## code ## ]]\ny = 2")))
    assert len(events) == 1 and stream.chunks == 1
    event = events[0]
    assert (event["index"], event["reasoning"], event["code"]) == (2, "Think.", "y = 2")
    assert isinstance(event["elapsed"], float)


def test_chunks_within_the_throttle_are_gathered_into_the_next_event():
    run = Run("t")
    events = recorded(run)
    stream = StepStream(run, throttle=60)

    async def send_three():
        for piece in ("a", "b", "c"):
            await stream.send(chunk(piece))

    asyncio.run(send_three())
    assert [e["reasoning"] for e in events] == ["a"]
    stream.emit()
    assert events[-1]["reasoning"] == "abc"


def test_an_empty_chunk_counts_nothing():
    run = Run("t")
    events = recorded(run)
    stream = StepStream(run, throttle=0)
    asyncio.run(stream.send(chunk("")))
    assert stream.chunks == 0 and not events


def test_what_is_shown_is_scrubbed_of_secrets(monkeypatch):
    secret = "zq9-streamed-secret-value-4471"
    monkeypatch.setenv("H26_STREAM_API_KEY", secret)
    run = Run("t")
    events = recorded(run)
    text = f"[[ ## reasoning ## ]]\nUse {secret}.\n[[ ## code ## ]]\nkey = '{secret}'"
    asyncio.run(StepStream(run, throttle=0).send(chunk(text)))
    for field in ("reasoning", "code"):
        assert secret not in events[0][field] and REDACTED in events[0][field]
    queries = recorded(run, LLM_QUERY_STREAMING)
    query = QueryStream(run, step=1)
    query.parts.append(f"the key is {secret}")
    query.emit()
    assert secret not in queries[0]["text"] and REDACTED in queries[0]["text"]


def test_a_cancelled_stream_stops_at_its_next_chunk():
    stream = StepStream(Run("t"))
    stream.cancel()
    with pytest.raises(StreamCancelled):
        asyncio.run(stream.send(chunk("more")))


def test_a_run_that_has_ended_shows_no_late_chunk():
    run = Run("t")
    events = recorded(run)
    run.finish("finished")
    asyncio.run(StepStream(run, throttle=0).send(chunk("late")))
    assert not events


def test_a_silent_model_still_gets_an_event_every_tick_and_a_cancel_stops_the_call():
    run = Run("t")
    events = recorded(run)
    stream = StepStream(run)

    async def silent_call():
        ticking = asyncio.ensure_future(stream.tick(asyncio.current_task(), every=0.05))
        try:
            await asyncio.sleep(0.3)
            assert len(events) >= 2  # "writing… Ns" went on while nothing arrived
            stream.cancel()
            await asyncio.sleep(5)  # cancelled by the tick, not waited out
        finally:
            ticking.cancel()

    started = time.monotonic()
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(silent_call())
    assert time.monotonic() - started < 3


# --------------------------------------------------------------------------- streamed_call and its fallbacks
class Calls:
    """A streamed call (``start``) that sends ``pieces`` then answers or raises ``fault``; a plain call that answers."""

    def __init__(self, stream: StepStream, pieces=(), fault: BaseException | None = None):
        self.stream, self.pieces, self.fault = stream, pieces, fault
        self.plain_calls: list = []

    async def start(self):
        assert dspy.settings.send_stream is self.stream
        for piece in self.pieces:
            await self.stream.send(chunk(piece))
        if self.fault is not None:
            raise self.fault
        return "streamed answer"

    def plain(self):
        self.plain_calls.append(dspy.settings.adapter)
        return "plain answer"


def test_a_streamed_call_answers_what_the_stream_answered_and_says_writing_first():
    run = Run("t")
    events = recorded(run)
    stream = StepStream(run, throttle=0)
    calls = Calls(stream, ["Hello"])
    assert streamed_call(stream, calls.start, calls.plain, object()) == "streamed answer"
    assert events[0]["reasoning"] == "" and events[-1]["reasoning"] == "Hello"
    assert not calls.plain_calls and dspy.settings.send_stream is None


def test_a_server_that_answers_unstreamed_is_asked_plainly_and_never_asked_to_stream_again():
    lm = dspy.LM("openai/x", api_key="k")
    stream = StepStream(Run("t"))
    calls = Calls(stream, fault=LMStreamAssemblyError("no stream"))
    assert streamed_call(stream, calls.start, calls.plain, lm) == "plain answer"
    assert len(calls.plain_calls) == 1 and not can_stream(lm)


def test_a_stream_cut_off_midway_takes_back_what_was_shown_and_asks_once_more_whole():
    run = Run("t")
    events = recorded(run)
    stream = StepStream(run, throttle=0)
    calls = Calls(stream, ["half an ans"], fault=LMServerError("connection dropped"))
    assert streamed_call(stream, calls.start, calls.plain, object()) == "plain answer"
    assert len(calls.plain_calls) == 1
    assert events[-2]["reasoning"] == "half an ans" and events[-1]["reasoning"] == ""


def test_a_fault_before_any_chunk_that_is_not_a_stream_fault_is_raised():
    stream = StepStream(Run("t"))
    calls = Calls(stream, fault=LMServerError("boom"))  # nothing shown: DSPy's own retries had their turn
    with pytest.raises(LMServerError):
        streamed_call(stream, calls.start, calls.plain, object())
    assert not calls.plain_calls


def test_a_fault_that_is_not_transient_is_raised_even_after_chunks():
    stream = StepStream(Run("t"), throttle=0)
    calls = Calls(stream, ["partial"], fault=LMAuthError("bad key"))
    with pytest.raises(LMAuthError):
        streamed_call(stream, calls.start, calls.plain, object())
    assert not calls.plain_calls


def test_an_answer_that_does_not_parse_gets_the_json_adapters_try_for_a_step_only():
    fault = AdapterParseError(adapter_name="ChatAdapter", signature=dspy.Signature("q -> a"), lm_response="??")
    stream = StepStream(Run("t"), throttle=0)
    calls = Calls(stream, ["??"], fault=fault)
    assert streamed_call(stream, calls.start, calls.plain, object(), json_fallback=True) == "plain answer"
    assert isinstance(calls.plain_calls[0], JSONAdapter)
    query = Calls(StepStream(Run("t"), throttle=0), ["??"], fault=fault)
    with pytest.raises(AdapterParseError):
        streamed_call(query.stream, query.start, query.plain, object())


def test_a_cancelled_stream_is_not_asked_again():
    stream = StepStream(Run("t"))
    calls = Calls(stream, ["x"], fault=StreamCancelled("stop"))
    with pytest.raises(StreamCancelled):
        streamed_call(stream, calls.start, calls.plain, object())
    assert not calls.plain_calls


def test_beside_a_running_event_loop_the_call_runs_in_a_helper_thread_with_the_callers_settings():
    stream = StepStream(Run("t"))
    threads = []

    async def start():
        threads.append(threading.current_thread())
        return dspy.settings.adapter

    async def in_a_notebook():
        with dspy.context(adapter=JSONAdapter()):
            return streamed_call(stream, start, lambda: None, object())

    assert isinstance(asyncio.run(in_a_notebook()), JSONAdapter)
    assert threads[0] is not threading.main_thread() and threads[0].name == "deepagent-step-stream"


def test_an_error_in_the_helper_thread_reaches_the_caller():
    stream = StepStream(Run("t"))

    async def start():
        raise KeyError("inside")

    async def in_a_notebook():
        return streamed_call(stream, start, lambda: None, object())

    with pytest.raises(KeyError, match="inside"):
        asyncio.run(in_a_notebook())


def test_a_steps_call_outside_a_run_is_the_plain_call():
    assert streaming.call(None, dspy.LM("openai/x", api_key="k"), {}, lambda: "plain") == "plain"


# --------------------------------------------------------------------------- an llm_query
def query_call(run: Run, lm) -> ModelCall:
    return ModelCall(None, None, {"prompt": "p"}, lm, False, QUERY, run)


def test_a_query_streams_only_while_a_step_of_its_run_is_running_on_dspys_client():
    lm = dspy.LM("openai/x", api_key="k")
    run = Run("t")
    assert not query_streams(query_call(run, lm))  # no step running
    run.begin_step("r", "llm_query('p')")
    assert query_streams(query_call(run, lm))
    assert not query_streams(query_call(run, ScriptedLM([("s", "x = 1")])))
    with dspy.context(send_stream=object()):
        assert not query_streams(query_call(run, lm))  # something else streams
    opt_out(run)
    assert not query_streams(query_call(run, lm))
    assert not query_streams(query_call(None, lm))


def test_queries_are_numbered_per_run_and_their_events_say_which():
    run, other = Run("t"), Run("u")
    events = recorded(run, LLM_QUERY_STREAMING)
    first, second = QueryStream(run, step=3), QueryStream(run, step=3)
    assert (first.query, second.query, QueryStream(other, step=1).query) == (1, 2, 1)
    second.parts.append("the answer")
    second.emit(done=True)
    assert events == [{"tool": "llm_query", "step": 3, "query": 2, "text": "the answer",
                       "elapsed": events[0]["elapsed"], "done": True}]


class StreamingLM:
    """An LM whose async call streams ``pieces`` into DSPy's send_stream, or fails with ``fault``."""

    def __init__(self, pieces, fault=None):
        self.pieces, self.fault = pieces, fault

    async def acall(self, prompt):
        for piece in self.pieces:
            await dspy.settings.send_stream.send(chunk(piece))
        if self.fault is not None:
            raise self.fault
        return ["".join(self.pieces)]


def test_a_streamed_query_emits_its_answer_and_ends_with_done():
    run = Run("t")
    run.begin_step("r", "llm_query('p')")
    events = recorded(run, LLM_QUERY_STREAMING)
    query = streamed_query(query_call(run, StreamingLM(["Par", "is"])), lambda **inputs: pytest.fail("plain"))
    assert query(prompt="capital of France?") == ["Paris"]
    assert events[0]["text"] == "" and events[0]["step"] == 1 and events[0]["done"] is False
    assert events[-1]["text"] == "Paris" and events[-1]["done"] is True
    assert [e for e in events if e["done"]] == [events[-1]]


def test_a_query_that_fails_still_ends_its_stream_with_done():
    run = Run("t")
    run.begin_step("r", "llm_query('p')")
    events = recorded(run, LLM_QUERY_STREAMING)
    query = streamed_query(query_call(run, StreamingLM([], fault=LMAuthError("bad key"))), lambda **inputs: None)
    with pytest.raises(LMAuthError):
        query(prompt="p")
    assert events[-1]["done"] is True
