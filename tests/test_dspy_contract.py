"""What this package relies on in dspy.RLM and DSPy beyond their documented surface.

Each test names one assumption; if DSPy changes it, the test fails here, loudly, instead of
the agent silently losing its steps or its usage.
"""

from __future__ import annotations

import dspy

from deepagent_magics import DeepAgent, ScriptedLM
from deepagent_magics.core.loop.pipeline import StepPredict
from deepagent_magics.core.model.usage_sink import UsageSink
from deepagent_magics.core.run.run import Run


def test_rlm_calls_its_action_predictor_once_per_iteration_and_runs_the_code_it_returns(workspace):
    """core/loop/pipeline.py: StepPredict reports steps because RLM calls `generate_action` once per iteration."""
    steps = [("Look.", "x = 2\nprint(x)"), ("Double.", "y = x * 2\nprint(y)"), ("Done.", "SUBMIT(result=str(y))")]
    agent = DeepAgent(lm=ScriptedLM(steps), workspace=workspace)
    run = agent.run("double two", {})
    assert type(agent.rlm.generate_action) is StepPredict
    assert run.status == "finished" and run.result == "4"
    assert [(s.reasoning, s.code) for s in run.steps] == steps
    assert [s.output for s in run.steps][:2] == ["2", "4"]


def test_a_swapped_predictor_keeps_its_state_and_saves_like_a_predict(workspace, tmp_path):
    agent = DeepAgent(lm=ScriptedLM([("Done.", "SUBMIT(result='ok')")]), workspace=workspace)
    before = agent.dump_state()
    agent.run("anything", {})
    assert agent.dump_state() == before
    agent.save(str(tmp_path / "agent.json"))
    fresh = DeepAgent(lm=ScriptedLM([]), workspace=workspace)
    fresh.load(str(tmp_path / "agent.json"))
    assert fresh.prompt_hash == agent.prompt_hash
    assert [name for name, _ in agent.named_predictors()] == ["rlm.generate_action", "rlm.extract"]


def test_dspy_appends_each_lm_call_to_the_caller_modules_history(workspace):
    """core/model/usage_sink.py: UsageSink counts usage because DSPy appends each call's history entry
    (model, usage, cost) to every module in ``settings.caller_modules``."""
    run = Run("t")
    lm = ScriptedLM([], replies="hello")
    with dspy.context(lm=lm, caller_modules=[UsageSink(run)]):
        dspy.Predict("question -> answer")(question="hi")
        lm("a plain call")
    assert run.usage.lm_calls == 2
    assert run.usage.input_tokens > 0 and run.usage.output_tokens > 0


def test_usage_is_counted_once_per_lm_call_and_per_run(workspace):
    steps = [("Ask.", "a = llm_query('hi')\nprint(a)"), ("Done.", "SUBMIT(result=a)")]
    lm = ScriptedLM(steps, replies="hello")
    run = DeepAgent(lm=lm, workspace=workspace).run("ask", {})
    assert run.status == "finished" and run.result == "hello"
    assert run.usage.lm_calls == len(lm.requests) == 3  # two steps and one llm_query


def test_the_global_history_holds_the_same_entry_dicts_the_caller_modules_see(workspace):
    """core/model/usage_sink.py: the sink trims a long run's memory by stripping, in place, the heavy fields of the
    entry dicts it is handed; that bounds DSPy's GLOBAL_HISTORY only if DSPy appends the same objects
    there, with those fields, and honours ``max_history_size`` (>= 1) for each LM and caller module."""
    from dspy.clients import base_lm

    from deepagent_magics.core.model.usage_sink import HEAVY_FIELDS, strip_entry

    seen = []

    class Catcher:
        history = type("H", (list,), {"append": lambda self, entry: seen.append(entry)})()

    lm = ScriptedLM([], replies="hello")
    with dspy.context(lm=lm, caller_modules=[Catcher()], max_history_size=2):
        for _ in range(4):
            lm("a plain call")
    assert len(seen) == 4 and seen[-1] is base_lm.GLOBAL_HISTORY[-1]
    assert all(any(entry is kept for kept in base_lm.GLOBAL_HISTORY) for entry in seen)
    assert {"messages", "prompt", "response", "outputs", "usage", "model"} <= set(seen[-1])
    assert set(HEAVY_FIELDS) - {"request"} <= set(seen[-1])
    assert len(lm.history) == 2  # max_history_size bounds each LM's own history
    strip_entry(seen[0])
    dspy.inspect_history(n=4)  # a stripped entry still prints
