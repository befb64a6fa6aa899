"""A step's reply ends at the end marker (issue 27, part 1): every step's request asks the provider to stop at
``[[ ## completed ## ]]``, and nothing breaks where that goes wrong.

Against the local provider (`testing_provider.FakeProvider`, which ends a reply at the request's ``stop`` as
real providers do) and DSPy's real client: what a model writes after the marker is never generated, and the
run reads the cut replies exactly as it read the whole ones; ``llm_query`` prompts carry no stop; a model
family that rejects ``stop`` is never sent one; a provider that rejects it anyway is asked again without it,
and not sent one again; any other rejected request is not mistaken for that; a marker the model writes inside
its own code cuts the step, and the run goes on with nothing lost.
"""

from __future__ import annotations

import asyncio

import dspy
import pytest

from deepagent_magics import DeepAgent
from deepagent_magics.core.model import stop_sequences
from deepagent_magics.core.model.replies import COMPLETED
from deepagent_magics.core.model.retries import RetryPolicy
from deepagent_magics.testing_provider import FakeProvider, Reply, adapter_text

TASK = "Sum the list `numbers` and submit the total."
STEPS = [
    {"reasoning": "Look at the list first.", "code": "```python\nprint(numbers)\n```"},
    {"reasoning": "Ask the sub-model to say the word.", "code": "```python\nword = llm_query('Say ok.')\nprint(word)\n```"},
    {"reasoning": "Sum it and submit.", "code": "```python\nSUBMIT(result=str(sum(numbers)))\n```"},
]
# What the 1.5B local model writes after the marker until the token limit (tests/data/real_model_runs/): more
# fields, a made-up next turn. A provider that honours the stop never generates it.
RAMBLING = ("\n\n[[ ## reasoning ## ]]\nThe code above prints the list. Now I will also\n\n[[ ## code ## ]]\n"
            "```python\nnumbers.clear()\n```\n\n[[ ## completed ## ]]\nHuman: thanks!\n") * 3
UNSUPPORTED = "Unsupported parameter: 'stop' is not supported with this model."


def step_replies(rambling: bool = True) -> list[Reply]:
    """The steps as the model writes them (each followed by more text), and the llm_query answer."""
    replies = [Reply(content=adapter_text(step) + (RAMBLING if rambling else "")) for step in STEPS]
    return [*replies[:2], Reply(content="ok"), *replies[2:]]


def provider_lm(provider: FakeProvider, model: str = "openai/fake-model", **kwargs) -> dspy.LM:
    return dspy.LM(model, api_base=provider.url, api_key="sk-local", cache=False, num_retries=0, **kwargs)


def run_agent(lm, tmp_path, namespace, stream: bool = True):
    agent = DeepAgent(lm=lm, workspace=tmp_path, max_iters=6, max_depth=0, stream=stream)
    agent.retry_policy = RetryPolicy(base_delay=0.05, max_wait=1)
    return agent.run(TASK, namespace)


def is_step(request) -> bool:
    return "[[ ## iteration ## ]]" in str(request["body"].get("messages"))


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
def test_every_step_stops_at_the_marker_and_the_run_reads_the_cut_replies_as_the_whole_ones(tmp_path, stream):
    outcomes = {}
    for honours in (True, False):
        numbers = [1, 2, 3, 4]
        with FakeProvider(step_replies(), honours_stop=honours) as provider:
            run = run_agent(provider_lm(provider), tmp_path / str(honours), {"numbers": numbers}, stream)
        assert run.status == "finished", run.error
        outcomes[honours] = (run.result, [(step.reasoning, step.code, step.output) for step in run.steps])
        steps = [request for request in provider.requests if is_step(request)]
        assert len(steps) == len(STEPS)
        assert all(request["body"]["stop"] == [COMPLETED] for request in steps)
        queries = [request for request in provider.requests if not is_step(request)]
        assert len(queries) == 1 and "stop" not in queries[0]["body"]  # llm_query: the model's free text
        assert numbers == [1, 2, 3, 4]  # the code written after the marker never ran
    assert outcomes[True] == outcomes[False] and outcomes[True][0] == "10"


def test_a_model_family_that_rejects_stop_is_never_sent_one(tmp_path):
    with FakeProvider(step_replies(rambling=False)) as provider:
        lm = provider_lm(provider, "openai/o3", temperature=1.0, max_tokens=16000)
        run = run_agent(lm, tmp_path, {"numbers": [1, 2]})
    assert run.status == "finished" and run.result == "3", run.error
    assert provider.requests and not any("stop" in request["body"] for request in provider.requests)


def test_the_users_own_stop_sequences_go_with_the_marker(tmp_path):
    with FakeProvider(step_replies()) as provider:
        run = run_agent(provider_lm(provider, stop=["<|eot|>"]), tmp_path, {"numbers": [5]})
    assert run.status == "finished" and run.result == "5", run.error
    assert [request["body"]["stop"] for request in provider.requests if is_step(request)] == [["<|eot|>", COMPLETED]] * 3


def test_a_provider_that_rejects_stop_is_asked_again_without_it_and_never_sent_one_again(tmp_path):
    script = [Reply.failure(400, UNSUPPORTED, error_code="unsupported_parameter"), *step_replies(rambling=False),
              *step_replies(rambling=False)]
    with FakeProvider(script) as provider:
        lm = provider_lm(provider, "openai/my-reasoning-deployment")  # a name no list can know
        first = run_agent(lm, tmp_path / "first", {"numbers": [1, 2]})
        second = run_agent(lm, tmp_path / "second", {"numbers": [3, 4]})  # the same LM, a new run
    assert first.status == second.status == "finished", (first.error, second.error)
    assert (first.result, second.result) == ("3", "7")
    with_stop = [index for index, request in enumerate(provider.requests) if "stop" in request["body"]]
    assert with_stop == [0]  # the one request the provider rejected; its step was asked again without it
    assert len(provider.requests) == 1 + 2 * len(step_replies())
    assert len(first.steps) == len(STEPS)  # the rejected request cost no step


def test_another_rejected_request_is_not_taken_for_a_rejected_stop(tmp_path):
    script = [Reply.failure(400, "Invalid value for 'temperature': must be between 0 and 2.")]
    with FakeProvider(script) as provider:
        lm = provider_lm(provider, "openai/fake-model")
        run = run_agent(lm, tmp_path, {"numbers": [1]})
    assert run.status == "failed" and "temperature" in run.error
    assert len(provider.requests) == 1  # not sent again without the stop
    assert stop_sequences.stop_for(lm) == [COMPLETED]  # and the LM still gets one


def test_a_marker_inside_the_models_code_cuts_that_step_and_the_run_goes_on_with_nothing_lost(tmp_path):
    hostile = {"reasoning": "Print the marker.", "code": f"```python\ntotal = 99\nprint('{COMPLETED}')\n```"}
    script = [Reply(content=adapter_text(hostile)), Reply(content=adapter_text(STEPS[2]))]
    numbers = [2, 3]
    namespace = {"numbers": numbers, "total": "kept"}
    with FakeProvider(script) as provider:
        run = run_agent(provider_lm(provider), tmp_path, namespace)
    assert run.status == "finished" and run.result == "5", run.error
    assert run.steps[0].code.rstrip().endswith("print('")  # the reply ended at the marker: the step is cut there
    assert "SyntaxError" in run.steps[0].output  # shown to the model like any error
    assert namespace["total"] == "kept" and namespace["numbers"] is numbers == [2, 3]  # nothing half-run


def test_the_async_path_sends_the_stop_and_takes_a_rejection_the_same_way():
    predict = dspy.Predict("question -> answer")
    script = [Reply.failure(400, UNSUPPORTED), Reply.fields(answer="4")]
    with FakeProvider(script) as provider, dspy.context(lm=provider_lm(provider, "openai/another-deployment")):
        lm = dspy.settings.lm
        prediction = asyncio.run(stop_sequences.acall_stopped(lm, {"question": "2+2?"},
                                                              lambda kwargs: predict.acall(**kwargs)))
    assert prediction.answer == "4"
    assert [("stop" in request["body"]) for request in provider.requests] == [True, False]
    assert stop_sequences.stop_for(lm) is None
