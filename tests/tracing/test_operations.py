"""Each model call's ``chat`` span and each tool call's ``execute_tool`` span (tracing/operations.py): what the
provider answered, read from DSPy's history entries of the call's requests; a tool that raises or answers
with an error ends its span in error; a call of an untraced run gets no span."""

from __future__ import annotations

import litellm
from opentelemetry.trace import StatusCode

from deepagent_magics import Capability, DeepAgent
from deepagent_magics.core.model.calls import QUERY, STEP, ModelCall
from deepagent_magics.testing import ScriptedLM
from deepagent_magics.tracing.operations import CHAT, Replies, run_trace

from .captured import Captured


def test_a_call_the_provider_was_asked_twice_for_is_one_span_with_both_requests_tokens():
    captured = Captured()
    replies = Replies()
    for tokens, reason in ((40, "length"), (50, "stop")):  # a first reply cut at the token limit, then asked again
        response = litellm.ModelResponse(
            id=f"chatcmpl-{tokens}", model="gpt-4o-2024-08-06",
            choices=[{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": reason}],
            usage={"prompt_tokens": tokens, "completion_tokens": 5, "total_tokens": tokens + 5})
        replies.history.append({"response": response, "response_model": response.model, "usage": dict(response.usage),
                                "messages": [{"role": "user", "content": "Say hi"}], "outputs": ["hi"]})
    span = captured.provider.get_tracer("test").start_span("chat gpt-4o")
    replies.describe(span, content=False)
    span.end()
    attributes = dict(captured.one("chat gpt-4o").attributes)
    assert attributes == {"gen_ai.usage.input_tokens": 90, "gen_ai.usage.output_tokens": 10,
                          "gen_ai.response.model": "gpt-4o-2024-08-06", "gen_ai.response.id": "chatcmpl-50",
                          "gen_ai.response.finish_reasons": ("stop",)}
    assert len(replies.history) == 0 and len(list(list.__iter__(replies.history))) == 2  # DSPy never trims it


def test_the_chat_layer_applies_only_to_a_traced_runs_steps_and_queries():
    assert CHAT.kinds == frozenset({STEP, QUERY})
    untraced = ModelCall(None, None, {"prompt": "hi"}, None, False, QUERY)
    assert run_trace(untraced) is None and not CHAT.applies_to(untraced)


def test_a_query_is_a_chat_under_its_tool_call_with_what_it_was_sent_and_answered(tmp_path, monkeypatch):
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    captured = Captured()
    steps = [("Ask.", "answer = llm_query('Name a colour')"), ("Done.", "SUBMIT(result=answer)")]
    run = DeepAgent(lm=ScriptedLM(steps, replies="teal", tokens=(12, 3)), workspace=tmp_path, max_depth=0,
                    extensions=[captured.tracing]).run("Colour", {})
    assert run.result == "teal"
    query = next(span for span in captured.spans if span.attributes.get("deepagent.call.kind") == "query")
    assert captured.parent(query).name == "execute_tool llm_query"
    assert query.attributes["gen_ai.usage.input_tokens"] == 12 and query.attributes["gen_ai.usage.output_tokens"] == 3
    assert "Name a colour" in query.attributes["gen_ai.input.messages"]
    assert '"content": "teal"' in query.attributes["gen_ai.output.messages"]
    tool = captured.one("execute_tool llm_query").attributes
    assert "Name a colour" in tool["gen_ai.tool.call.arguments"] and tool["gen_ai.tool.call.result"] == "teal"


def test_a_tool_that_raises_and_one_that_answers_an_error_end_their_spans_in_error(tmp_path):
    def lookup(key: str) -> str:
        """A user's tool."""
        raise LookupError(f"no {key}")

    captured = Captured()
    steps = [("Try.", "try:\n    lookup('a')\nexcept LookupError as exc:\n    print(exc)\nprint(read_file('nope.txt'))"),
             ("Done.", "SUBMIT(result='ok')")]
    run = DeepAgent(lm=ScriptedLM(steps), workspace=tmp_path, max_depth=0,
                    extensions=[captured.tracing, Capability("lookup", tools=[lookup])]).run("Look up", {})
    assert run.status == "finished", run.error
    raised = captured.one("execute_tool lookup")
    assert raised.status.status_code is StatusCode.ERROR and raised.attributes["error.type"] == "LookupError"
    assert raised.status.description == "no a"
    answered = captured.one("execute_tool read_file")  # a built-in tool answers a bad call with Error: text
    assert answered.status.status_code is StatusCode.ERROR and answered.attributes["error.type"] == "tool_error"
    assert answered.status.description is None  # what it answered is content: not recorded by default
    assert captured.one("invoke_agent deepagent").status.status_code is StatusCode.UNSET  # the run went on
