"""What real models send, one level down: a sub-agent (in a kernel of its own) whose model misbehaves.

The sub-agent recovers exactly as a root agent does, or fails with its one-line reason, which
its parent reads as the result of ``delegate`` and works around; the parent's run is unharmed.
Same local OpenAI-compatible server and real DSPy client as `test_what_models_send.py`.
"""

from __future__ import annotations

import pytest
from tests.adversarial.reply_corpus import ANSWER, PROSE, SUBMIT, TASK, F, text
from tests.adversarial.test_what_models_send import lm_for

from deepagent_magics import DeepAgent
from deepagent_magics.core.model.retries import PROVIDER_RETRY, RetryPolicy
from deepagent_magics.interpreters.pool import KernelPool
from deepagent_magics.testing_provider import FakeProvider, Reply

pytestmark = pytest.mark.kernel

DELEGATE = F(reasoning="Delegate.", code="answer = delegate('CHILD: compute 6 times 7')\nprint(answer)")


@pytest.fixture(scope="module")
def pool():
    pool = KernelPool(size=1).warm()
    yield pool
    pool.stop()


def play(child_script, root_last, tmp_path, pool, **kwargs):
    events = []
    with FakeProvider([DELEGATE, *child_script, root_last]) as provider:
        agent = DeepAgent(lm=lm_for(provider), workspace=tmp_path, pool=pool, timeout=60, **kwargs)
        agent.retry_policy = RetryPolicy(base_delay=0.05, max_wait=5)
        run = agent.run(TASK, {}, listeners=[events.append])
        assert len(provider.requests) == 2 + len(child_script)
    child = run.steps[0].children[0]
    return run, child, events


def test_a_sub_agent_whose_replies_cannot_be_read_fails_in_one_line_and_the_parent_goes_on(tmp_path, pool):
    run, child, _ = play([text(PROSE)] * 6, F(reasoning="The child failed; I do it.", code=SUBMIT), tmp_path, pool)
    assert child.status == "failed" and child.error.startswith("UnreadableReply:") and "\n" not in child.error
    assert "the sub-agent failed: UnreadableReply" in run.steps[0].output
    assert run.status == "finished" and run.result == ANSWER, run.error


def test_a_sub_agent_rate_limited_once_waits_and_recovers(tmp_path, pool):
    child_script = [Reply.failure(429, "Rate limit reached", headers={"Retry-After": "0.2"},
                                  error_type="rate_limit_error"),
                    F(reasoning="Compute.", code="SUBMIT(result=str(6 * 7))")]
    run, child, events = play(child_script, F(reasoning="Done.", code="SUBMIT(result=answer)"), tmp_path, pool)
    assert child.status == "finished" and child.result == ANSWER, child.error
    assert [(event.run is child, event.data["wait"]) for event in events if event.kind == PROVIDER_RETRY] == [(True, 0.2)]
    assert run.status == "finished" and run.result == ANSWER


def test_a_sub_agent_with_an_empty_reply_is_asked_again(tmp_path, pool):
    child_script = [text(""), text(""), F(reasoning="Compute.", code="SUBMIT(result=str(6 * 7))")]
    run, child, _events = play(child_script, F(reasoning="Done.", code="SUBMIT(result=answer)"), tmp_path, pool)
    assert child.status == "finished" and child.result == ANSWER and len(child.steps) == 1, child.error
    assert run.status == "finished" and run.result == ANSWER


def test_a_sub_agent_that_only_errors_until_max_iters_does_not_hand_up_a_made_up_answer(tmp_path, pool):
    child_script = [F(reasoning="Try.", code="print(undefined_name)")] * 2 + [F(reasoning="Guess.", result="1337")]
    run, child, _ = play(child_script, F(reasoning="The child failed; I do it.", code=SUBMIT), tmp_path, pool,
                         subagent_max_iters=2)
    assert child.status == "failed" and child.error.startswith("MaxItersExhausted") and child.result is None
    assert "1337" not in run.steps[0].output and "MaxItersExhausted" in run.steps[0].output
    assert run.status == "finished" and run.result == ANSWER
