"""testing.py: `ScriptedLM`, a real ``dspy.LM`` whose answers are scripted steps, for users' tests and the demos."""

from __future__ import annotations

import copy

import dspy

from deepagent_magics import DeepAgent
from deepagent_magics.testing import EXHAUSTED, ScriptedLM, ScriptedRequest


def test_steps_play_in_order_through_a_real_agent_and_then_say_they_are_done(tmp_path):
    lm = ScriptedLM([("Look.", "x = 2"), "print(x * 21)"])
    run = DeepAgent(lm=lm, workspace=tmp_path, max_iters=3).run("Compute", namespace={})
    assert [step.code for step in run.steps][:2] == ["x = 2", "print(x * 21)"] and "42" in run.steps[1].output
    assert run.steps[2].code == EXHAUSTED and run.result == "[ScriptedLM: the script has no more steps]"
    assert len(lm.requests) == 3 and "Compute" in lm.requests[0]["user"]


def test_each_agent_plays_the_script_whose_fragment_its_task_holds_longest(tmp_path):
    lm = ScriptedLM(scripts={"": ["SUBMIT(result='parent')"], "count the words": ["SUBMIT(result='child')"],
                             "count": ["SUBMIT(result='shorter')"]})
    assert DeepAgent(lm=lm, workspace=tmp_path).run("Please count the words here", namespace={}).result == "child"
    assert DeepAgent(lm=lm, workspace=tmp_path).run("Something else", namespace={}).result == "parent"


def test_a_policy_sees_the_request_and_decides():
    seen = []

    def policy(request: ScriptedRequest):
        seen.append((request.task, request.demos))
        return ("Ready", "SUBMIT(result='Bonjour')" if "French" in request.system else "SUBMIT(result='Hello')")

    lm = ScriptedLM(policy)
    assert DeepAgent(lm=lm, instructions="Answer in French.").run("Greet", namespace={}).result == "Bonjour"
    assert seen == [("Greet", 0)]


def test_other_requests_get_the_replies_and_a_dict_fills_each_field():
    lm = ScriptedLM(replies={"capital": "Paris", "": "dunno"})
    with dspy.context(lm=lm):
        assert dspy.Predict("question -> answer")(question="The capital of France?").answer == "Paris"
    by_field = ScriptedLM(replies=lambda prompt: {"answer": "42", "confidence": "high"})
    with dspy.context(lm=by_field):
        result = dspy.Predict("question -> answer, confidence")(question="?")
    assert (result.answer, result.confidence) == ("42", "high")


def test_cost_and_tokens_are_reported_as_a_provider_would_and_copies_share_the_script(tmp_path):
    lm = ScriptedLM(["SUBMIT(result='ok')"], cost=0.25, tokens=(100, 10))
    run = DeepAgent(lm=lm, workspace=tmp_path).run("Do it", namespace={})
    assert run.usage.cost == 0.25 and run.usage.input_tokens == 100 and run.usage.output_tokens == 10
    assert copy.deepcopy(lm) is lm
