"""The sandbox facade's LM calls use DSPy 3.4's Request API, not the deprecated ``messages=``.

Agent code (a sub-agent in its kernel, or the root agent in the notebook) may build
``dspy.Predict(...)`` through DSPy's sandbox facade; the predictor runs on the host, on DSPy's
``SandboxLM`` over the host LM. DSPy 3.4.1 warns (DeprecationWarning, removed in 3.5) when the
host LM is called with ``messages=``: these tests record every warning and fail on that one,
and read from the LM's history that the call went out as a ``dspy.lm15.Request`` carrying the
predictor's generation settings. Scripted LMs (`ScriptedLM`, DSPy's `DummyLM`) keep working;
what a Request cannot carry (n > 1 completions) keeps the old call and still works.
"""

from __future__ import annotations

import contextlib
import textwrap
import warnings

import dspy
import pytest
from dspy.utils import DummyLM

from deepagent_magics import DeepAgent, ScriptedLM
from deepagent_magics.interpreters.kernel import KernelInterpreterFactory
from deepagent_magics.interpreters.pool import KernelPool

DEPRECATED = "through messages= is deprecated"


@pytest.fixture(scope="module")
def pool():
    pool = KernelPool(size=1).warm()
    yield pool
    pool.stop()


@contextlib.contextmanager
def no_messages_warning():
    """Every warning recorded (not only the first per place); none may be DSPy's messages= one."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield caught
    deprecated = [str(w.message) for w in caught if DEPRECATED in str(w.message)]
    assert not deprecated, deprecated[0]


class SpyLM(ScriptedLM):
    """A ScriptedLM that notes how each call reached it: a ``Request`` or ``messages=``."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls: list[tuple[str, object]] = []

    def __call__(self, prompt=None, *args, messages=None, **kwargs):
        if isinstance(prompt, dspy.lm15.Request):
            self.calls.append(("request", prompt))
        elif messages is not None:
            self.calls.append(("messages", messages))
        return super().__call__(prompt, *args, messages=messages, **kwargs)


def facade_calls(lm: SpyLM) -> list[tuple[str, object]]:
    """The calls a facade-built predictor made (not the agent's own steps)."""
    def is_facade(text: str) -> bool:
        return "1. `question`" in text and "`answer`" in text and "`code`" not in text and "Q-MARK" in text

    return [(kind, value) for kind, value in lm.calls if is_facade(str(value))]


PREDICT = textwrap.dedent("""
    import dspy
    qa = dspy.Predict('question -> answer')
    cot = dspy.ChainOfThought('question -> answer', temperature=0.3, max_tokens=77)
    report = repr([qa(question='Q-MARK 2+2?').answer, cot(question='Q-MARK capital?').answer])
    print(report)
""")
REPLIES = {"2+2": {"answer": "4", "reasoning": "r"}, "capital": {"answer": "Paris", "reasoning": "r"}}


def replies(prompt: str):
    return next((value for key, value in REPLIES.items() if key in prompt), "(none)")


def assert_requests(lm) -> None:
    calls = facade_calls(lm)
    assert [kind for kind, _ in calls] == ["request", "request"], calls  # the Request API, not messages=
    config = calls[1][1].config
    assert (config.temperature, config.max_tokens) == (0.3, 77)  # the predictor's settings went with it


# --------------------------------------------------------------------------- a sub-agent's kernel
@pytest.mark.kernel
def test_a_kernel_facade_call_makes_a_request_not_a_messages_call(pool):
    lm = SpyLM([("Predict.", PREDICT), ("Done.", "SUBMIT(result=report)")], replies=replies)
    rlm = dspy.RLM("question -> result", max_iters=4, interpreter_factory=KernelInterpreterFactory(pool=pool, timeout=60))
    with no_messages_warning(), dspy.context(lm=lm):
        prediction = rlm(question="q")
    assert prediction.result == "['4', 'Paris']", prediction.trajectory
    assert_requests(lm)


@pytest.mark.kernel
def test_a_delegated_sub_agent_facade_call_makes_a_request(pool, tmp_path):
    lm = SpyLM(scripts={
        "FC-ROOT": [("Delegate.", "r = delegate('FC-CHILD: predict')\nprint(r)"), ("Done.", "SUBMIT(result=r)")],
        "FC-CHILD": [("Predict.", PREDICT), ("Report.", "SUBMIT(result=report)")],
    }, replies=replies)
    with no_messages_warning():
        run = DeepAgent(lm=lm, workspace=tmp_path, pool=pool, timeout=60).run("FC-ROOT: go", namespace={})
    assert run.status == "finished", run.error
    assert run.result == "['4', 'Paris']"
    assert_requests(lm)


# --------------------------------------------------------------------------- the root agent's REPL
def test_the_root_agents_facade_call_makes_a_request(tmp_path):
    lm = SpyLM([("Predict.", PREDICT), ("Done.", "SUBMIT(result=report)")], replies=replies)
    with no_messages_warning():
        run = DeepAgent(lm=lm, workspace=tmp_path).run("predict", namespace={})
    assert run.status == "finished", run.error
    assert run.result == "['4', 'Paris']"
    assert_requests(lm)


def test_a_sub_lm_given_to_the_facade_is_called_with_a_request_too(pool, tmp_path):
    """``DeepAgent(sub_lm=...)``: DSPy hands the facade that LM itself (not dspy.settings.lm)."""
    lm = SpyLM(scripts={"": [("Predict.", PREDICT), ("Done.", "SUBMIT(result=report)")]})
    sub = SpyLM(replies=replies, model="scripted/sub")
    with no_messages_warning():
        run = DeepAgent(lm=lm, sub_lm=sub, workspace=tmp_path).run("predict", namespace={})
    assert run.status == "finished", run.error
    assert run.result == "['4', 'Paris']"
    assert_requests(sub)
    assert not facade_calls(lm)


def test_dspy_dummy_lm_still_answers_facade_calls(tmp_path):
    lm = SpyLM([("Predict.", "import dspy\nreport = dspy.Predict('question -> answer')(question='Q-MARK x').answer\n"
                                  "print(report)"), ("Done.", "SUBMIT(result=report)")])
    dummy = DummyLM([{"answer": "from dummy"}])
    with no_messages_warning():
        run = DeepAgent(lm=lm, sub_lm=dummy, workspace=tmp_path).run("predict", namespace={})
    assert run.status == "finished", run.error
    assert run.result == "from dummy"
    assert any(isinstance(entry.get("request"), dspy.lm15.Request) for entry in dummy.history)


def test_what_a_request_cannot_carry_keeps_the_old_call_and_works(tmp_path):
    """n=2 completions: an explicit Request returns exactly one Response, so the old call is kept."""
    lm = SpyLM([("Predict.", "import dspy\nqa = dspy.Predict('question -> answer', n=2)\n"
                                  "report = qa(question='Q-MARK 2+2?').answer\nprint(report)"),
                     ("Done.", "SUBMIT(result=report)")], replies=replies)
    run = DeepAgent(lm=lm, workspace=tmp_path).run("predict", namespace={})
    assert run.status == "finished", run.error
    assert run.result == "4", run.trajectory
    assert [kind for kind, _ in facade_calls(lm)] == ["messages"]  # the old call, kept


def test_a_user_s_own_dspy_call_outside_the_facade_is_untouched(tmp_path):
    """Only the facade's calls are rerouted: the user's LM object and settings are not replaced."""
    lm = SpyLM([("Predict.", PREDICT), ("Done.", "SUBMIT(result=report)")], replies=replies)
    with dspy.context(lm=lm):
        DeepAgent(lm=lm, workspace=tmp_path).run("predict", namespace={})
        assert dspy.settings.lm is lm
        assert dspy.Predict("question -> answer")(question="Q-MARK 2+2?").answer == "4"


# --------------------------------------------------------------------------- the host LM, called directly
MESSAGES = [{"role": "system", "content": "Answer."}, {"role": "user", "content": "Q-MARK 2+2?"}]


def test_the_async_call_goes_out_as_a_request_too():
    import asyncio

    from deepagent_magics.core.model.facade_requests import RequestLM

    lm = DummyLM([{"answer": "4"}])  # a ScriptedLM has no async engine
    with no_messages_warning():
        outputs = asyncio.run(RequestLM(lm).acall(messages=MESSAGES, temperature=0.2))
    assert "4" in outputs[0]
    assert lm.history[-1]["request"].config.temperature == 0.2


def test_the_lm_s_own_settings_go_into_the_request_but_not_its_client_settings():
    from deepagent_magics.core.model.facade_requests import RequestLM

    lm = DummyLM([{"answer": "4"}])
    lm.kwargs.update(temperature=0.4, max_tokens=33, api_key="sk-should-not-travel-1234567890")
    with no_messages_warning():
        outputs = RequestLM(lm)(messages=MESSAGES, max_tokens=55)
    assert "4" in outputs[0]
    request = lm.history[-1]["request"]
    assert (request.config.temperature, request.config.max_tokens) == (0.4, 55)  # the call's setting wins
    assert "sk-should-not-travel" not in repr(request)


def test_structured_output_and_tools_travel_in_the_request():
    """What JSONAdapter and native function calling add to a call (a pydantic format, tools) is carried."""
    import pydantic

    from deepagent_magics.core.model.facade_requests import RequestLM

    class Out(pydantic.BaseModel):
        answer: str

    lm = DummyLM([{"answer": "4"}, {"answer": "5"}])
    tool = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object", "properties": {}}}}
    with no_messages_warning():
        RequestLM(lm)(messages=MESSAGES, response_format=Out)
        schema = lm.history[-1]["request"].config.response_format
        RequestLM(lm)(messages=MESSAGES, tools=[tool])
    assert schema["name"] == "Out" and schema["schema"]["required"] == ["answer"]
    assert [t.name for t in lm.history[-1]["request"].tools] == ["lookup"]
