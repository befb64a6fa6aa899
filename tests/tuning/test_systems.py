"""tuning/systems.py: the systems an evaluation compares, each example in a fresh namespace and workspace, on one LM."""

from __future__ import annotations

import dspy
import pytest

from deepagent_magics import DeepAgent, ScriptedLM
from deepagent_magics.core.run.run import Run, Usage
from deepagent_magics.tuning.systems import (
    DEEP_AGENT,
    OPTIMIZED,
    STEP_TEXT,
    CoTSystem,
    DeepAgentSystem,
    IsolatedAgent,
    ReActSystem,
    RLMSystem,
    priced,
    set_up_example,
    steps_of,
    systems_for,
)


def prepare(folder):
    (folder / "data.csv").write_text("a,b\n1,2\n")
    return {"rows": [1, 2]}


def test_an_example_sets_up_its_files_and_starting_variables(tmp_path):
    assert set_up_example(dspy.Example(task="t", prepare=prepare), str(tmp_path)) == {"rows": [1, 2]}
    assert (tmp_path / "data.csv").is_file()
    assert set_up_example(dspy.Example(task="t"), str(tmp_path)) == {} and set_up_example(None, str(tmp_path)) == {}


def test_the_deep_agent_runs_each_example_in_its_own_workspace_with_its_variables():
    lm = ScriptedLM([("Read.", "import os\nfiles = [f for f in sorted(os.listdir('.')) if not f.startswith('.')]\n"
                               "SUBMIT(result=f'{files} {sum(rows)}')")])
    outcome = DeepAgentSystem(DeepAgent(lm=lm))(dspy.Example(task="Sum the rows", prepare=prepare).with_inputs("task"))
    assert outcome.pred.result == "['data.csv'] 3" and outcome.steps == 1 and outcome.error is None
    assert IsolatedAgent(DeepAgent(lm=lm)).agent.ask is None  # no one answers approval in an evaluation


def test_the_baselines_answer_on_the_same_lm():
    lm = ScriptedLM(["finished"], replies=lambda prompt: {"reasoning": "think", "result": "cot says 4",
                                                           "next_thought": "done", "next_tool_name": "finish",
                                                           "next_tool_args": "{}"})
    example = dspy.Example(task="Double 2").with_inputs("task")
    assert CoTSystem(lm)(example).pred.result == "cot says 4"
    agent = DeepAgent(lm=lm)
    react = ReActSystem(agent, lm)(example)
    assert react.pred.result == "cot says 4" and react.steps == 1
    systems = systems_for(agent, ["cot", "react", "rlm"], optimized=agent, lm=lm)
    assert list(systems) == ["cot", "react", "rlm", DEEP_AGENT, OPTIMIZED] and isinstance(systems["rlm"], RLMSystem)
    with pytest.raises(ValueError, match="unknown baseline 'gpt'"):
        systems_for(agent, ["gpt"], lm=lm)


def test_what_each_system_did_is_kept_step_by_step_bounded():
    run = Run("t")
    run.begin_step("r", "print('x' * 10**5)")
    run.end_step("x" * 100_000)
    steps = steps_of(dspy.Prediction(run=run))
    assert steps[0]["code"] == "print('x' * 10**5)" and len(steps[0]["output"]) < STEP_TEXT + 60
    react = steps_of(dspy.Prediction(trajectory={"thought_0": "t", "tool_name_0": "ls", "tool_args_0": {"path": "."},
                                                 "observation_0": "a.csv"}))
    assert react == [{"reasoning": "t", "code": 'ls({"path": "."})', "output": "a.csv"}]
    assert steps_of(None) == [] and steps_of(dspy.Prediction(result=1)) == []


def test_a_cost_no_call_had_is_unknown_not_zero():
    usage = Usage()
    usage.add(1, 1, None)
    assert priced(usage) is None
    usage.add(1, 1, 0.5)
    assert priced(usage) == 0.5
    from types import SimpleNamespace

    assert priced(SimpleNamespace(lm_calls=2, unpriced_calls=2, cost=0.0)) is None  # a made-up $0 is not a price


def test_each_system_counts_the_tokens_it_read_and_wrote_apart_and_says_how_its_answer_came():
    """Every call reports 100 tokens read and 10 written: one call for CoT, the deep agent and RLM when they submit at
    once, two for ReAct (its finish, then its extract); RLM out of steps answers by its extract step."""
    replies = {"reasoning": "r", "result": "4", "next_thought": "done", "next_tool_name": "finish",
               "next_tool_args": "{}"}
    lm = ScriptedLM(["SUBMIT(result='4')"], replies=lambda prompt: replies, tokens=(100, 10))
    example = dspy.Example(task="Double 2").with_inputs("task")
    agent = DeepAgent(lm=lm)
    made = {name: system(example) for name, system in systems_for(agent, ["cot", "react", "rlm"], lm=lm).items()}
    assert {name: (each.prompt_tokens, each.completion_tokens, each.tokens) for name, each in made.items()} == {
        "cot": (100, 10, 110), "react": (200, 20, 220), "rlm": (100, 10, 110), DEEP_AGENT: (100, 10, 110)}
    assert {name: each.ending for name, each in made.items()} == {
        "cot": None, "react": "SUBMIT", "rlm": "SUBMIT", DEEP_AGENT: "SUBMIT"}
    wanders = ScriptedLM(["print(1)"] * 3, replies=lambda prompt: {**replies, "next_tool_name": "ls",
                                                                   "next_tool_args": '{"path": "."}'})
    slow = DeepAgent(lm=wanders, max_iters=2)
    assert RLMSystem(slow, wanders)(example).ending == "extraction"
    assert ReActSystem(slow, wanders)(example).ending == "extraction"


@pytest.mark.parametrize("model, stopped", [("openai/fake", True), ("openai/o3-mini", False)])
def test_the_baselines_requests_end_at_the_marker_as_the_agents_steps_do(model, stopped):
    """Each baseline's requests carry the stop sequence a deep-agent step carries, through DSPy's real client
    to a real server (without it, a small model wrote on past the answer in the baselines only: the table
    measured a request flag); a model family that refuses ``stop`` gets none, as the agent's steps do."""
    from deepagent_magics.core.model.replies import COMPLETED
    from deepagent_magics.testing_provider import FakeProvider, Reply

    with FakeProvider() as provider:
        provider.add(Reply.fields(reasoning="r", result="4"),  # cot
                     Reply.fields(next_thought="t", next_tool_name="finish", next_tool_args="{}"),  # react
                     Reply.fields(reasoning="r", result="4"),  # react's extract step
                     Reply.fields(reasoning="r", code="SUBMIT(result='4')"))  # rlm
        lm = dspy.LM(model, api_base=provider.url, api_key="sk-local", cache=False,
                     **({"temperature": 1.0, "max_tokens": 16_000} if not stopped else {}))
        systems = systems_for(DeepAgent(lm=lm), ["cot", "react", "rlm"], lm=lm)
        example = dspy.Example(task="Double 2").with_inputs("task")
        answers = [systems[name](example).pred.result for name in ("cot", "react", "rlm")]
    assert answers == ["4", "4", "4"]
    stops = [request["body"].get("stop") for request in provider.requests]
    assert len(stops) == 4 and all(stop == ([COMPLETED] if stopped else None) for stop in stops), stops
    assert "stop" not in lm.kwargs  # the caller's LM is not changed
