"""core/model/facade_requests.py: a facade predictor's ``messages=`` call goes to the host LM as a ``Request``.

Through real sub-agents and the REPL (no DeprecationWarning, caps per facade call) see
``tests/adversarial/test_facade_calls.py``.
"""

from __future__ import annotations

import asyncio
import warnings

import dspy
import pydantic
import pytest
from dspy.primitives.facade import FacadeInvocation, SandboxLM

from deepagent_magics.core.model.calls import FACADE
from deepagent_magics.core.model.facade_requests import RequestLM, facade_requests
from deepagent_magics.testing import ScriptedLM

MESSAGES = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello"}]


class SpyLM(ScriptedLM):
    """A ScriptedLM noting each call: (the Request or prompt, messages=, other keywords)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, replies="hi there", **kwargs)
        self.calls: list[tuple] = []

    def __call__(self, prompt=None, *args, messages=None, **kwargs):
        self.calls.append((prompt, messages, kwargs))
        return super().__call__(prompt, *args, messages=messages, **kwargs)

    async def acall(self, prompt=None, *args, messages=None, **kwargs):  # a scripted engine has no async side
        return self(prompt, *args, messages=messages, **kwargs)


def sent_as_request(lm: SpyLM) -> dspy.lm15.Request:
    prompt, messages, _ = lm.calls[-1]
    assert isinstance(prompt, dspy.lm15.Request) and messages is None
    return prompt


def test_a_messages_call_goes_out_as_a_request_carrying_the_lms_and_the_calls_settings():
    lm = SpyLM()
    lm.kwargs["temperature"] = 0.3
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # DSPy's messages= warning would fail here
        assert RequestLM(lm)(messages=MESSAGES, max_tokens=50) == ["hi there"]
    request = sent_as_request(lm)
    assert request.model == lm.model and request.system == "be brief"
    assert [m.role for m in request.messages] == ["user"] and request.messages[0].parts[0].text == "hello"
    assert (request.config.temperature, request.config.max_tokens) == (0.3, 50)


def test_call_options_go_beside_the_request_and_client_keys_stay_out_of_its_body():
    lm = SpyLM()
    RequestLM(lm)(messages=MESSAGES, rollout_id=3, cache=False, api_key="sk-secret", timeout=9)
    request = sent_as_request(lm)
    assert lm.calls[-1][2] == {"rollout_id": 3, "cache": False}
    assert "sk-secret" not in repr(request)


def test_a_pydantic_response_format_becomes_a_strict_json_schema():
    class Answer(pydantic.BaseModel):
        a: int

    lm = SpyLM()
    RequestLM(lm)(messages=MESSAGES, response_format=Answer)
    schema = sent_as_request(lm).config.response_format
    assert schema["type"] == "json_schema" and schema["name"] == "Answer" and schema["strict"] is True
    assert schema["schema"]["additionalProperties"] is False and schema["schema"]["required"] == ["a"]


def test_a_prompt_cache_setting_is_the_requests_cache():
    cache = dspy.lm15.CacheConfig(key="k")
    lm = SpyLM()
    RequestLM(lm)(messages=MESSAGES, prompt_cache=cache)
    assert sent_as_request(lm).config.cache == cache


@pytest.mark.parametrize("kwargs", [{"n": 2}, {"num_generations": 3}])
def test_several_completions_keep_the_old_call(kwargs):
    lm = SpyLM()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        outputs = RequestLM(lm)(messages=MESSAGES, **kwargs)
    assert lm.calls[-1][0] is None and lm.calls[-1][1] == MESSAGES
    assert outputs[0] == "hi there"


def test_a_text_completion_model_keeps_the_old_call():
    lm = SpyLM()
    lm.model_type = "text"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        RequestLM(lm)(messages=MESSAGES)
    assert lm.calls[-1][:2] == (None, MESSAGES)


def test_a_prompt_call_is_passed_on_as_it_is():
    lm = SpyLM()
    assert RequestLM(lm)("just a prompt", temperature=0) == ["hi there"]
    assert lm.calls[-1] == ("just a prompt", None, {"temperature": 0})


def test_a_plain_callable_has_no_request_form_and_gets_the_messages():
    seen = []
    RequestLM(lambda prompt=None, **kwargs: seen.append((prompt, kwargs)) or ["ok"])(messages=MESSAGES)
    assert seen == [(None, {"messages": MESSAGES})]


def test_everything_else_reads_through_to_the_lm_and_a_copy_stays_a_request_lm():
    lm = SpyLM()
    through = lambda call, next_call: next_call  # noqa: E731
    wrapped = RequestLM(lm, through)
    assert wrapped.model == lm.model and wrapped.model_type == "chat" and wrapped.kwargs is lm.kwargs
    copy = wrapped.copy(temperature=0.9)
    assert isinstance(copy, RequestLM) and copy._through is through
    assert copy._lm is not lm and copy.kwargs["temperature"] == 0.9


def test_each_call_goes_through_the_pipeline_as_a_facade_call():
    seen = []

    def through(call, next_call):
        seen.append((call.kind, call.lm, call.is_async))
        return next_call

    lm = SpyLM()
    wrapped = RequestLM(lm, through)
    wrapped(messages=MESSAGES)
    asyncio.run(wrapped.acall(messages=MESSAGES))
    assert seen == [(FACADE, lm, False), (FACADE, lm, True)]
    assert isinstance(lm.calls[-1][0], dspy.lm15.Request)  # the async call went out as a Request too


def test_a_layer_that_refuses_the_call_stops_it_before_the_lm():
    class Refused(Exception):
        pass

    def through(call, next_call):
        def refuse(*args, **kwargs):
            raise Refused("cap reached")
        return refuse

    lm = SpyLM()
    with pytest.raises(Refused):
        RequestLM(lm, through)(messages=MESSAGES)
    assert lm.calls == []


# --------------------------------------------------------------------------- facade_requests
def invocation(lm=None) -> FacadeInvocation:
    facade = FacadeInvocation({}, lambda: None, None, lm=lm)
    facade.construct("Predict", "question -> answer", "p")
    return facade


def test_a_tool_that_is_not_the_facades_call_is_returned_as_it_is():
    def llm_query(prompt: str) -> str:
        return prompt

    assert facade_requests(llm_query) is llm_query
    facade = invocation()
    assert facade_requests(facade.construct) == facade.construct


def test_the_facades_call_keeps_its_name_and_signature():
    facade = invocation()
    tool = facade_requests(facade.call)
    assert tool is not facade.call and tool.__name__ == "call"
    assert list(tool.__signature__.parameters) == ["handle", "inputs"]


def test_a_facade_given_its_lm_gets_it_as_a_request_lm():
    lm = SpyLM()
    facade = invocation(lm)
    seen = []
    tool = facade_requests(facade.call, lambda call, next_call: seen.append(call.kind) or next_call)
    assert tool("p", {"question": "q"}) == {"answer": "hi there"}
    assert isinstance(facade._lm, RequestLM) and facade._lm._lm is lm
    assert isinstance(lm.calls[-1][0], dspy.lm15.Request) and seen == [FACADE]
    tool("p", {"question": "again"})
    assert facade._lm._lm is lm  # not wrapped twice


def test_a_facade_on_the_settings_lm_reads_it_as_a_request_lm_for_the_call_only():
    lm = SpyLM()
    facade = invocation()
    with dspy.context(lm=lm):
        assert facade_requests(facade.call)("p", {"question": "q"}) == {"answer": "hi there"}
        assert dspy.settings.lm is lm
    assert facade._lm is None and isinstance(lm.calls[-1][0], dspy.lm15.Request)


def test_a_sandbox_lm_is_left_as_it_is():
    lm = SpyLM()
    sandbox = SandboxLM(lm)
    facade = invocation(sandbox)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the SandboxLM's own messages= call
        facade_requests(facade.call)("p", {"question": "q"})
    assert facade._lm is sandbox
