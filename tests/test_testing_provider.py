"""The fake OpenAI-compatible provider answers DSPy's real client as a provider would.

It is the test bench for what real providers send (issue 15): if it did not speak the
protocol faithfully, the robustness tests built on it would prove nothing.
"""

from __future__ import annotations

import asyncio

import dspy
from dspy.utils import exceptions as lm_errors
import pytest

from deepagent_magics.testing_provider import FakeProvider, Reply, adapter_text


def lm_for(provider: FakeProvider, **kwargs) -> dspy.LM:
    return dspy.LM("openai/fake-model", api_base=provider.url, api_key="sk-local", cache=False,
                   num_retries=0, **kwargs)


def test_a_scripted_reply_reaches_dspys_client_with_its_usage_and_the_request_is_kept():
    with FakeProvider([Reply(content="hello there", usage={"prompt_tokens": 7, "completion_tokens": 2,
                                                          "total_tokens": 9})]) as provider:
        lm = lm_for(provider)
        assert lm("say hello") == ["hello there"]
    assert provider.requests[0]["body"]["messages"][-1]["content"] == "say hello"
    assert provider.requests[0]["path"].endswith("/chat/completions")
    assert lm.history[-1]["usage"]["prompt_tokens"] == 7


def test_fields_are_written_as_dspys_chat_adapter_parses_them():
    with FakeProvider([{"answer": "42"}]) as provider, dspy.context(lm=lm_for(provider)):
        assert dspy.Predict("question -> answer")(question="?").answer == "42"


def test_an_error_status_reaches_the_client_as_that_providers_error():
    script = [Reply.failure(429, "slow down", headers={"Retry-After": "1"}, error_type="rate_limit_error")]
    with FakeProvider(script) as provider:
        with pytest.raises(lm_errors.LMRateLimitError, match="slow down"):
            lm_for(provider)("hi")


def test_a_dropped_connection_is_a_connection_error_not_a_hang():
    with FakeProvider([Reply(reset=True)]) as provider:
        with pytest.raises(lm_errors.LMTransportError):
            lm_for(provider, timeout=20)("hi")


def test_when_the_script_runs_out_the_server_says_so():
    with FakeProvider([]) as provider:
        with pytest.raises(lm_errors.LMServerError, match="no more replies"):
            lm_for(provider)("hi")


def test_a_streamed_reply_arrives_in_chunks_and_joins_to_the_whole_answer():
    text = adapter_text({"answer": "a streamed answer, in pieces"})
    with FakeProvider([Reply(content=text, chunk=5)]) as provider:
        program = dspy.streamify(dspy.Predict("question -> answer"),
                                 stream_listeners=[dspy.streaming.StreamListener(signature_field_name="answer")])

        async def collect():
            chunks, final = [], None
            async for item in program(question="?"):
                if isinstance(item, dspy.streaming.StreamResponse):
                    chunks.append(item.chunk)
                elif isinstance(item, dspy.Prediction):
                    final = item
            return chunks, final

        with dspy.context(lm=lm_for(provider)):
            chunks, final = asyncio.run(collect())
    assert provider.requests[0]["body"]["stream"] is True
    assert len(chunks) > 1
    assert "".join(chunks).strip() == final.answer == "a streamed answer, in pieces"
