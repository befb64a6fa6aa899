"""core/model/failures.py: a failed run's one line, and an extracted answer the model could not have meant."""

from __future__ import annotations

import dspy
from dspy.utils.exceptions import AdapterParseError

from deepagent_magics.core.model.failures import EXTRACTED, made_up, produced_output, reason


class ContextWindowExceededError(Exception):
    pass


class LMRateLimitError(Exception):
    pass


class Policy:
    retries, max_wait = 3, 60.0


def test_each_kind_of_failure_reads_as_kind_cause_and_what_to_do():
    assert reason(ValueError("bad\nmore")) == "ValueError: bad more"
    assert reason(KeyError()) == "KeyError"
    assert "raise the limit" in reason(ContextWindowExceededError("too long"))
    parse = AdapterParseError(adapter_name="ChatAdapter", signature=dspy.Signature("q -> a"), lm_response="",
                              message="no")
    assert reason(parse) == "AdapterParseError: the model's reply could not be read (the reply was empty)"


def test_a_provider_error_after_retries_says_how_many_tries_and_the_policy():
    exc = LMRateLimitError("429 Too Many Requests\nplease slow down")
    exc.deepagent_attempts, exc.deepagent_policy = 3, Policy()
    assert reason(exc).startswith("LMRateLimitError: ") and reason(exc).endswith(
        "gave up after 3 attempts (RetryPolicy.retries=3)")
    exc.retry_after = 600
    assert "asks to wait longer than a run waits (RetryPolicy.max_wait=60 s)" in reason(exc)


def test_an_answer_extracted_from_steps_that_printed_only_errors_is_made_up():
    def prediction(outputs):
        return dspy.Prediction(final_reasoning=EXTRACTED, trajectory=[{"output": output} for output in outputs])

    assert "MaxItersExhausted: the agent used all 2 steps" in made_up(prediction(["[Error] x", ""]))
    assert made_up(prediction(["[Error] x", "42"])) is None
    assert made_up(dspy.Prediction(final_reasoning="done", trajectory=[])) is None
    assert produced_output({"output": "value"}) and not produced_output({"output": "Traceback (most recent ..."})
