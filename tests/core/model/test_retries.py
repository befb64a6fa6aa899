"""core/model/retries.py: how long a provider fault waits, what it is called, and the run's LM copy that retries.

Through a whole run (a provider that fails, its events on the dashboard, the caps) see
``tests/adversarial/test_caps_through_retries.py`` and ``tests/adversarial/test_retry_display.py``.
"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import dspy
import pytest
from dspy.clients.call_context import stream_emitted
from dspy.utils.exceptions import (LMAuthError, LMError, LMRateLimitError, LMServerError, LMTimeoutError,
                                   LMTransportError)

from deepagent_magics.core.model import retries
from deepagent_magics.core.model.calls import REQUEST, STEP, Layer, ModelCall
from deepagent_magics.core.model.retries import (RETRIES, RetryPolicy, RunLM, cause, policy_of, retried,
                                                 with_retries)
from deepagent_magics.core.policy.spend import WAIT_SLICE, CapReached, SpendBudget
from deepagent_magics.core.run.event_kinds import PROVIDER_RETRY
from deepagent_magics.core.run.run import Run
from deepagent_magics.testing import ScriptedLM


# --------------------------------------------------------------------------- RetryPolicy.delay
def test_without_a_retry_count_nothing_is_retried():
    assert RetryPolicy().delay(LMServerError("boom"), 1) is None


def test_the_backoff_doubles_from_the_base_delay_until_the_retries_are_spent():
    policy = RetryPolicy(retries=3, base_delay=0.5)
    assert [policy.delay(LMServerError("boom"), n) for n in (1, 2, 3, 4)] == [0.5, 1.0, 2.0, None]


def test_the_backoff_never_waits_longer_than_max_wait():
    assert RetryPolicy(retries=5, base_delay=10, max_wait=15).delay(LMTimeoutError("slow"), 2) == 15


def test_a_retry_after_hint_is_waited_as_given_when_it_is_short_enough():
    policy = RetryPolicy(retries=2, base_delay=1, max_wait=60)
    assert policy.delay(LMRateLimitError("slow down", retry_after=7), 1) == 7.0
    assert policy.delay(LMRateLimitError("slow down", retry_after=0), 1) == 0.0


def test_a_retry_after_longer_than_max_wait_fails_at_once():
    assert RetryPolicy(retries=2, max_wait=60).delay(LMRateLimitError("later", retry_after=3600), 1) is None


def test_a_negative_retry_after_is_ignored_for_the_backoff():
    assert RetryPolicy(retries=2, base_delay=1).delay(LMRateLimitError("x", retry_after=-5), 1) == 1.0


def test_a_fault_that_is_not_transient_is_never_retried():
    policy = RetryPolicy(retries=5)
    assert policy.delay(LMAuthError("bad key"), 1) is None
    assert policy.delay(ValueError("not a provider fault"), 1) is None


# --------------------------------------------------------------------------- cause
@pytest.mark.parametrize(("exc", "said"), [
    (LMRateLimitError("too many", status=429, retry_after=2), "rate limited (429, Retry-After 2 s)"),
    (LMRateLimitError("too many"), "rate limited (429)"),
    (LMServerError("boom\nand a trace", status=503), "server error (503): boom"),
    (LMServerError("boom"), "server error (5xx): boom"),
    (LMTimeoutError("whatever"), "the provider did not answer in time (timeout)"),
    (LMError("Request timed out"), "the provider did not answer in time (timeout)"),
    (LMTransportError("Connection reset by peer"), "connection failed: Connection reset by peer"),
    (ValueError("ValueError: odd"), "ValueError: odd"),
])
def test_a_fault_is_said_in_a_few_words(exc, said):
    assert cause(exc) == said


def test_a_long_detail_is_cut_to_two_hundred_characters():
    said = cause(LMServerError("x" * 500, status=500))
    assert said == "server error (500): " + "x" * 199 + "…"


# --------------------------------------------------------------------------- retried (the RETRIES layer's wrap)
class Flaky:
    """A request that fails with each of ``faults`` in turn, then answers."""

    def __init__(self, *faults: BaseException, answer: str = "reply", shown: bool = False):
        self.faults, self.answer, self.shown, self.calls = list(faults), answer, shown, 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        if self.faults:
            if self.shown:
                stream_emitted()  # a streamed reply already showed something
            raise self.faults.pop(0)
        return self.answer

    async def acall(self, *args, **kwargs):
        return self(*args, **kwargs)


def request(policy: RetryPolicy, run=None, is_async: bool = False) -> tuple[ModelCall, list]:
    run = run or Run("t")
    events: list = []
    run.subscribe(lambda event: events.append(event) if event.kind == PROVIDER_RETRY else None)
    lm = SimpleNamespace(_deepagent_policy=policy, _deepagent_run=run)
    return ModelCall(None, None, {}, lm, is_async, REQUEST, run), events


def test_a_transient_fault_is_asked_again_and_each_wait_is_announced_on_the_run():
    call, events = request(RetryPolicy(retries=3, base_delay=0))
    flaky = Flaky(LMServerError("boom", status=500), LMRateLimitError("slow", retry_after=0))
    assert retried(call, flaky)("hello") == "reply"
    assert flaky.calls == 3
    assert [e.data for e in events] == [
        {"attempt": 1, "wait": 0.0, "cause": "server error (500): boom", "retries": 3},
        {"attempt": 2, "wait": 0.0, "cause": "rate limited (429, Retry-After 0 s)", "retries": 3},
    ]


def test_when_the_retries_are_spent_the_fault_is_raised_saying_how_many_attempts_were_made():
    policy = RetryPolicy(retries=1, base_delay=0)
    call, events = request(policy)
    flaky = Flaky(*[LMServerError("boom")] * 5)
    with pytest.raises(LMServerError) as caught:
        retried(call, flaky)()
    assert flaky.calls == 2 and len(events) == 1
    assert caught.value.deepagent_attempts == 2 and caught.value.deepagent_policy is policy


def test_a_fault_that_is_not_transient_is_raised_at_once_without_an_attempt_count():
    call, events = request(RetryPolicy(retries=5, base_delay=0))
    flaky = Flaky(LMAuthError("bad key"))
    with pytest.raises(LMAuthError) as caught:
        retried(call, flaky)()
    assert flaky.calls == 1 and not events
    assert not hasattr(caught.value, "deepagent_attempts")


def test_an_error_that_is_not_a_provider_fault_is_not_touched():
    call, events = request(RetryPolicy(retries=5, base_delay=0))
    flaky = Flaky(KeyError("x"))
    with pytest.raises(KeyError):
        retried(call, flaky)()
    assert flaky.calls == 1 and not events


def test_a_request_whose_streamed_reply_was_shown_is_never_asked_again():
    call, events = request(RetryPolicy(retries=5, base_delay=0))
    flaky = Flaky(LMServerError("cut off"), shown=True)
    with pytest.raises(LMServerError):
        retried(call, flaky)()
    assert flaky.calls == 1 and not events


def test_the_async_request_is_retried_the_same_way():
    call, events = request(RetryPolicy(retries=2, base_delay=0), is_async=True)
    flaky = Flaky(LMTransportError("reset"))
    assert asyncio.run(retried(call, flaky.acall)("hi")) == "reply"
    assert flaky.calls == 2 and [e.data["attempt"] for e in events] == [1]


def test_the_async_request_whose_streamed_reply_was_shown_is_not_asked_again():
    call, _ = request(RetryPolicy(retries=2, base_delay=0), is_async=True)
    flaky = Flaky(LMTransportError("reset"), shown=True)
    with pytest.raises(LMTransportError):
        asyncio.run(retried(call, flaky.acall)())
    assert flaky.calls == 1


def test_a_retry_is_refused_when_the_tree_has_reached_a_cap():
    run = Run("t")
    run.spend = SpendBudget(max_tokens=100, run=run)
    call, _ = request(RetryPolicy(retries=5, base_delay=0), run=run)

    def spend_then_fail():
        run.spend.add(150, None)  # the first request (already admitted) spent past the cap
        raise LMServerError("boom")

    with pytest.raises(CapReached, match="150 of 100 tokens"):
        retried(call, spend_then_fail)()


# --------------------------------------------------------------------------- _pauses
def test_without_caps_a_wait_is_one_sleep():
    assert next(retries._pauses(Run("t"), 3.0)) == pytest.approx(3.0, abs=0.05)


def test_with_caps_a_wait_is_cut_into_slices_between_which_the_caps_are_looked_at():
    run = Run("t")
    run.spend = SpendBudget(max_tokens=100, run=run)
    pauses = retries._pauses(run, 3.0)
    assert next(pauses) == WAIT_SLICE
    run.spend.add(100, None)
    with pytest.raises(CapReached):
        next(pauses)


def test_a_wait_of_nothing_does_not_sleep():
    assert list(retries._pauses(Run("t"), 0.0)) == []


# --------------------------------------------------------------------------- with_retries and RunLM
class Answering(dspy.LM):
    """A dspy.LM whose requests fail with ``faults`` in turn and then answer, without a provider."""

    faults: list

    def __call__(self, *args, **kwargs):
        if self.faults:
            raise self.faults.pop(0)
        return ["the answer"]


def test_no_policy_or_an_lm_with_its_own_engine_is_used_as_it_is():
    lm = dspy.LM("openai/x", api_key="k")
    assert with_retries(lm, Run("t"), None) is lm
    scripted = ScriptedLM([("s", "x = 1")])
    assert with_retries(scripted, Run("t"), RetryPolicy(retries=2)) is scripted


def test_the_run_gets_a_copy_with_dspys_retries_off_and_the_users_lm_is_untouched():
    lm = dspy.LM("openai/x", api_key="k", num_retries=7)
    run = Run("t")
    copy = with_retries(lm, run, RetryPolicy())
    assert copy is not lm and isinstance(copy, RunLM) and isinstance(copy, dspy.LM)
    assert type(copy).__name__ == "LM" and type(copy).__module__ == dspy.LM.__module__
    assert copy.num_retries == 0 and copy._deepagent_run is run and copy._deepagent_origin is lm
    assert policy_of(copy).retries == 7  # no count in the policy: the LM's own
    assert type(lm) is dspy.LM and lm.num_retries == 7 and policy_of(lm) is None


def test_a_policy_with_a_count_overrides_the_lms_own():
    lm = dspy.LM("openai/x", api_key="k", num_retries=7)
    assert policy_of(with_retries(lm, Run("t"), RetryPolicy(retries=2))).retries == 2


def test_a_sub_agents_copy_wraps_what_the_parents_copy_wraps():
    lm = dspy.LM("openai/x", api_key="k", num_retries=4)
    parent = with_retries(lm, Run("parent"), RetryPolicy())
    child_run = Run("child")
    child = with_retries(parent, child_run, RetryPolicy())
    assert type(child) is type(parent)  # one class per LM class, RunLM not mixed in twice
    assert type(child).__mro__.count(RunLM) == 1
    assert child._deepagent_run is child_run and child._deepagent_origin is lm
    assert policy_of(child).retries == 4  # the parent's count, not the copy's num_retries=0


def test_the_copys_requests_go_through_its_layers():
    seen = []
    layer = Layer("seen", "records each request", lambda call: True,
                  lambda call, next_call: lambda *a, **k: seen.append((call.kind, call.run)) or next_call(*a, **k),
                  frozenset({REQUEST}))
    not_for_requests = Layer("steps only", "never wraps a request", lambda call: True,
                             lambda call, next_call: pytest.fail("a step layer wrapped a request"), frozenset({STEP}))
    run = Run("t")
    copy = with_retries(Answering("openai/x", api_key="k"), run, RetryPolicy(), layers=(layer, not_for_requests))
    copy.faults = []
    assert copy("hi") == ["the answer"]
    assert seen == [(REQUEST, run)]


def test_by_default_the_copy_retries_a_provider_fault():
    run = Run("t")
    events = []
    run.subscribe(lambda event: events.append(event.kind))
    copy = with_retries(Answering("openai/x", api_key="k"), run, RetryPolicy(retries=2, base_delay=0))
    assert copy._deepagent_layers == (RETRIES,)
    copy.faults = [LMServerError("boom"), LMTimeoutError("slow")]
    assert copy("hi") == ["the answer"]
    assert events.count(PROVIDER_RETRY) == 2
