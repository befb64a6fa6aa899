"""Spend caps hold through the retries inside one step (issue 11 follow-up).

A step is admitted once (`core.loop.pipeline`), but it may make many requests: a reply nothing can
read is asked for again (`core/loop/attempts.py`), a provider fault is retried (`core/model/retries.py`). Before
each retry request the caps are checked as a step's admission checks them, so a model that never
sends a readable reply, or a provider that keeps failing, cannot carry a run past its cap: at most the
one request that crossed it. The run then ends as a cap at a step boundary ends it, with the same
one-line reason.

Every count is exact: a scripted LM (or the local provider) reports fixed usage per call.
"""

from __future__ import annotations

import asyncio
import threading
import time

import dspy
import pytest

from deepagent_magics import DeepAgent
from deepagent_magics.core.loop import attempts
from deepagent_magics.core.model.usage_sink import UsageSink
from deepagent_magics.core.model.retries import RetryPolicy, with_retries
from deepagent_magics.core.run.run import Run
from deepagent_magics.core.run.session import Session
from deepagent_magics.core.policy.spend import CapReached, SpendBudget
from deepagent_magics.core.workspace.workspace import Workspace
from deepagent_magics.testing import ScriptedLM
from deepagent_magics.testing_provider import FakeProvider, Reply

STEP = 100  # tokens each scripted call reports
UNREADABLE = ("Thinking it over.", "")  # a reply with no code: asked for again, never run
NO_CODE = Reply.fields(reasoning="Thinking it over.", code="")  # the same from the local provider (120 tokens)
RATE_LIMITED = Reply.failure(429, "Rate limit reached", headers={"Retry-After": "0.2"}, error_type="rate_limit_error")
SERVER_ERROR = Reply.failure(500, "boom", error_type="server_error")
MANY = 20  # retries a step may make: far more than any cap here allows


@pytest.fixture
def many_retries(monkeypatch):
    monkeypatch.setattr(attempts, "FORMAT_RETRIES", MANY)


def provider_lm(provider: FakeProvider) -> dspy.LM:
    return dspy.LM("openai/fake-model", api_base=provider.url, api_key="sk-local", cache=False, num_retries=0,
                   timeout=10)


def step_boundary_error(tmp_path, calls: int, **caps) -> str:
    """The error a run gets when the same spend is reached by readable steps (the cap at a step boundary)."""
    steps = [(f"Step {i}.", f"v{i} = {i}") for i in range(calls + 3)]
    run = DeepAgent(lm=ScriptedLM(steps, replies="", tokens=(STEP, 0), cost=caps.pop("cost", None)),
                    workspace=tmp_path / "boundary", **caps).run("count", namespace={})
    return run.error


# --------------------------------------------------------------------------- unreadable replies (attempts.py)
def test_unreadable_replies_stop_at_the_token_cap(tmp_path, many_retries):
    lm = ScriptedLM([UNREADABLE] * (MANY + 5), replies="", tokens=(STEP, 0))
    run = DeepAgent(lm=lm, workspace=tmp_path, max_tokens=150).run("think", namespace={})
    step_requests = len(lm.requests) - 1  # the last is the final answer a reached cap allows
    assert step_requests == 2  # 0 and 100 spent before them: under 150; at 200 the third is refused
    assert run.status == "budget_exhausted" and not run.steps
    assert run.error == "spend cap: the token cap is reached: 200 of 150 tokens spent; no further LM call starts"
    assert run.error == step_boundary_error(tmp_path, 2, max_tokens=150)  # the same reason as at a step boundary


def test_unreadable_replies_stop_at_the_cost_cap(tmp_path, many_retries):
    lm = ScriptedLM([UNREADABLE] * (MANY + 5), replies="", tokens=(1, 1), cost=0.01)
    run = DeepAgent(lm=lm, workspace=tmp_path, max_cost=0.025).run("think", namespace={})
    assert len(lm.requests) - 1 == 3  # $0, $0.01, $0.02 < $0.025
    assert run.status == "budget_exhausted" and "cost cap is reached" in run.error
    assert run.usage.cost == pytest.approx(0.04)  # three requests and the final answer: never more


def test_a_cap_reached_by_the_first_request_allows_no_retry(tmp_path, many_retries):
    lm = ScriptedLM([UNREADABLE] * (MANY + 5), replies="", tokens=(STEP, 0))
    run = DeepAgent(lm=lm, workspace=tmp_path, max_tokens=50).run("think", namespace={})
    assert len(lm.requests) == 2  # the one request, then the final answer
    assert run.status == "budget_exhausted" and "100 of 50 tokens" in run.error


def test_the_cap_holds_when_readable_steps_come_first(tmp_path, many_retries):
    steps = [("One.", "a = 1"), ("Two.", "b = 2")] + [UNREADABLE] * (MANY + 5)
    lm = ScriptedLM(steps, replies="Two steps done.", tokens=(STEP, 0))
    namespace: dict = {}
    run = DeepAgent(lm=lm, workspace=tmp_path, max_tokens=350).run("think", namespace=namespace)
    assert len(lm.requests) - 1 == 4  # two steps, then two asks of the third: 300 < 350, then 400
    assert run.status == "finished" and run.result == "Two steps done."  # answered from what it had
    assert namespace["a"] == 1 and namespace["b"] == 2  # the steps that ran are kept
    assert "token cap is reached" in run.config["spend"]["reached"] and len(run.steps) == 2


@pytest.mark.kernel
def test_a_sub_agent_s_unreadable_replies_stop_at_the_tree_s_cap(tmp_path, many_retries):
    parent = [("Delegate.", "out = delegate('count the words')\nprint(out)"), ("More.", "x = 1")]
    lm = ScriptedLM(scripts={"": parent, "count the words": [UNREADABLE] * (MANY + 5)}, replies="",
                    tokens=(STEP, 0))
    run = DeepAgent(lm=lm, workspace=tmp_path, max_tokens=350, max_depth=1).run("delegate", namespace={})
    child_requests = [r for r in lm.requests if UNREADABLE[0] in r["response"]]
    assert len(child_requests) == 3  # after the parent's step: 100, 200, 300 < 350; at 400 no request starts
    assert run.status in ("budget_exhausted", "finished") and "token cap is reached" in run.config["spend"]["reached"]


def test_unreadable_replies_from_a_real_provider_stop_at_the_cap(tmp_path, many_retries):
    with FakeProvider([NO_CODE] * (MANY + 5)) as provider:
        agent = DeepAgent(lm=provider_lm(provider), workspace=tmp_path, max_tokens=200)
        agent.retry_policy = RetryPolicy(retries=0)
        run = agent.run("think", namespace={})
        steps = [r for r in provider.requests if "[[ ## code ## ]]" in r["body"]["messages"][0]["content"]]
        assert len(steps) == 2  # 0 and 120 spent before them; at 240 the third is refused
        assert len(provider.requests) - len(steps) <= 2  # the final answer (its reply read twice: DSPy's fallback)
    assert run.status == "budget_exhausted" and "240 of 200 tokens" in run.error
    assert "\n" not in run.error  # the final answer's failure too is said in one line


def test_the_async_step_is_held_to_the_cap_too(tmp_path, many_retries):
    run = Run("think")
    run.spend = SpendBudget(max_tokens=200, run=run)
    session = Session(run, Workspace(tmp_path))
    predict = dspy.Predict("question -> reasoning, code")
    with FakeProvider([NO_CODE] * (MANY + 5)) as provider, \
            dspy.context(lm=provider_lm(provider), caller_modules=[UsageSink(run)]):
        with pytest.raises(CapReached, match="240 of 200 tokens"):
            asyncio.run(attempts.apredict_step(predict.aforward, session, {"question": "think"}))
        assert len(provider.requests) == 2


# --------------------------------------------------------------------------- provider faults (retries.py)
def test_a_provider_retry_is_refused_once_another_call_reached_the_cap(tmp_path):
    run = Run("t")
    run.spend = budget = SpendBudget(max_tokens=100, run=run)
    with FakeProvider([SERVER_ERROR] * 25) as provider:
        lm = with_retries(provider_lm(provider), run, RetryPolicy(retries=20, base_delay=0.01))
        budget.add(150, None)  # a parallel call (a sub-agent's) spent past the cap while this one was admitted
        with pytest.raises(CapReached) as caught:
            lm("hello")
        assert len(provider.requests) == 1
    assert str(caught.value) == "spend cap: the token cap is reached: 150 of 100 tokens spent; no further LM call starts"


def test_a_provider_retry_waiting_out_a_rate_limit_is_refused_when_the_cap_is_reached_meanwhile(tmp_path):
    run = Run("t")
    run.spend = budget = SpendBudget(max_tokens=100, run=run)
    long_wait = Reply.failure(429, "Rate limit reached", headers={"Retry-After": "5"}, error_type="rate_limit_error")
    with FakeProvider([long_wait] * 10) as provider:
        lm = with_retries(provider_lm(provider), run, RetryPolicy(retries=5, max_wait=10))
        timer = threading.Timer(0.3, budget.add, (150, None))  # spent by another call during the wait
        timer.start()
        started = time.monotonic()
        with pytest.raises(CapReached, match="token cap is reached"):
            lm("hello")
        assert time.monotonic() - started < 4.5  # did not sit out the 5 s wait for a retry that may not start
        assert len(provider.requests) == 1


def test_provider_retries_stop_at_the_time_cap(tmp_path):
    with FakeProvider([RATE_LIMITED] * 200) as provider:
        agent = DeepAgent(lm=provider_lm(provider), workspace=tmp_path, max_time=1.0)
        agent.retry_policy = RetryPolicy(retries=100, max_wait=5)
        started = time.monotonic()
        run = agent.run("wait", namespace={})
        elapsed = time.monotonic() - started
        requests = len(provider.requests)
    assert run.status == "budget_exhausted" and run.error.startswith("spend cap: the time cap is reached")
    assert requests <= 10  # about five in the second the cap allows, and the final answer's one: never 100
    assert elapsed < 10


def test_llm_query_s_provider_retries_stop_at_the_time_cap(tmp_path):
    ask = Reply.fields(reasoning="Ask.", code="reply = llm_query('say 42')\nprint(reply)")
    with FakeProvider([ask] + [RATE_LIMITED] * 200) as provider:
        agent = DeepAgent(lm=provider_lm(provider), workspace=tmp_path, max_time=1.0)
        agent.retry_policy = RetryPolicy(retries=100, max_wait=5)
        run = agent.run("ask", namespace={})
        requests = len(provider.requests)
    assert requests <= 11
    assert run.status == "budget_exhausted" and "time cap is reached" in run.error
    assert len(run.steps) == 1 and "spend cap" in run.steps[0].output  # the agent's code read it as an error
