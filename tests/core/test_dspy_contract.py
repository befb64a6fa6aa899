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


# ------------------------------------------------------------------ the prompt seam (core/loop/rlm_seam.py)
def test_rlm_builds_its_action_signature_with_build_signatures_and_uses_it_as_is(workspace):
    """rlm_seam: the action prompt is ours because RLM takes its action signature from `_build_signatures`
    (at construction) and, per call, from `_action_signature_for_current_factory`."""
    from dspy.predict.rlm import RLM

    from deepagent_magics.core.loop.rlm_seam import AgentRLM

    for method in ("_build_signatures", "_action_signature_for_current_factory", "_build_variables",
                   "_get_execution_instructions"):
        assert method in vars(RLM), f"dspy.RLM no longer has {method}: core/loop/rlm_seam.py must change"
    lm = ScriptedLM([("Done.", "SUBMIT(result='ok')")])
    agent = DeepAgent(lm=lm, workspace=workspace, max_depth=0)
    assert isinstance(agent.rlm, AgentRLM)
    assert agent.rlm.generate_action.signature.instructions == agent.prompt_instructions
    agent.run("anything", {})
    system = lm.requests[0]["system"]
    assert agent.prompt_instructions in system  # what was built is what was sent ...
    # ... and what this run has (its workspace) is said in its request, so the system message is the agent's alone
    assert f"Workspace: {workspace.resolve()}" in lm.requests[0]["user"] and str(workspace.resolve()) not in system
    assert "You are tasked with producing" not in system and "Additional tools available" not in system


def test_rlm_shows_the_variables_build_variables_returns_formatted_as_the_action_input(workspace):
    """rlm_seam.Rendered: RLM calls `_build_variables(**inputs)` and hands `[v.format() for v in ...]` to the
    action predictor as ``variables_info`` (the pipeline joins that one-item list into the text)."""
    lm = ScriptedLM([("Done.", "SUBMIT(result='ok')")])
    DeepAgent(lm=lm, workspace=workspace, max_depth=0).run("TASK-TEXT", {"x": 1})
    user = lm.requests[0]["user"]
    assert user.startswith("[[ ## variables_info ## ]]\nTask (`task`):\nTASK-TEXT\n\nVariables in scope")
    assert "«" not in user and "Variable: `" not in user  # neither DSPy's list blobs nor RLM's previews


def test_rlm_runs_a_code_string_as_it_is_even_with_fences_inside(workspace):
    """rlm_seam.Code: RLM's own fence stripping (`_strip_code_fences`) returns a `Code` unchanged, so a step that
    builds a Markdown report with a fenced block in a string runs whole (RLM alone would run the block)."""
    from dspy.predict.rlm import _strip_code_fences

    from deepagent_magics.core.loop.rlm_seam import Code

    code = 'report = """\n```python\nx = 1\n```\n"""\nprint(len(report))'
    assert _strip_code_fences(Code(code)) == code
    assert _strip_code_fences(code) != code  # what the seam protects against
    lm = ScriptedLM([("Report.", "```python\n" + code + "\n```"), ("Done.", "SUBMIT(result='ok')")])
    run = DeepAgent(lm=lm, workspace=workspace, max_depth=0).run("report", {})
    assert run.steps[0].code == code and run.steps[0].output == "21"


def test_a_sub_agents_result_keeps_its_type_through_rlms_output_parsing():
    """core.loop.agent.JSONValue: RLM parses SUBMIT values with `parse_value(value, annotation)`; for this union a
    dict stays a dict, a list a list, and a string that looks like a number stays a string."""
    from dspy.adapters.utils import parse_value

    from deepagent_magics.core.loop.agent import JSONValue

    for value in ({"a": 1.5, "b": [1, "x"]}, [1, 2], "3", '{"a": 1}', 2.5, 7, True, None, ""):
        parsed = parse_value(value, JSONValue)
        assert parsed == value and type(parsed) is type(value), value


def test_rlms_llm_tools_call_the_sub_lm_they_are_given_once_per_prompt():
    """core.loop.rlm_seam.AgentRLM._make_llm_tools: RLM builds ``llm_query`` and ``llm_query_batched`` over the
    ``sub_lm`` (and ``max_llm_calls``) of what it is handed, calling it once per prompt with the prompt alone; so a
    `QueryLM` there puts every prompt through the pipeline (a query)."""
    from types import SimpleNamespace

    import dspy

    prompts = []

    def sub_lm(prompt):
        prompts.append(prompt)
        return [f"answer to {prompt}"]

    tools = dspy.RLM._make_llm_tools(SimpleNamespace(max_llm_calls=5, sub_lm=sub_lm), None, 4)
    assert tools["llm_query"]("one") == "answer to one"
    assert tools["llm_query_batched"](["two", "three"]) == ["answer to two", "answer to three"]
    assert sorted(prompts) == ["one", "three", "two"]
