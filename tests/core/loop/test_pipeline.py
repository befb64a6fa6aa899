"""core/loop/pipeline.py: one ordered list of what wraps every model call (a step's, a query's, each request's),
shared by the sync and async paths, each layer built only when the call uses it."""

from __future__ import annotations

import asyncio

import dspy
import pytest

from deepagent_magics.core.loop import pipeline
from deepagent_magics.core.loop.pipeline import PIPELINE, STEP_PIPELINE, Layer, Step, compose
from deepagent_magics.core.model.calls import QUERY, REQUEST, STEP
from deepagent_magics.core.policy.spend import SpendBudget
from deepagent_magics.core.policy.steering import steering_of
from deepagent_magics.core.run.run import Run
from deepagent_magics.core.run.session import Session
from deepagent_magics.core.workspace.workspace import Workspace

ORDER = ["remember inputs", "stop check", "stall check", "spend admission", "usage", "attempts", "compaction",
         "user notes", "capabilities", "kept for --last", "end marker as stop", "cache marks", "streaming", "retries"]


def _step(tmp_path, *, is_async=False, lm=None, run=None) -> Step:
    run = run or Run("t")
    session = Session(run, Workspace(tmp_path))
    return Step(predictor=None, session=session, inputs={}, lm=lm or dspy.LM("openai/x", api_key="k"),
                is_async=is_async)


def test_the_layers_are_in_the_documented_order_each_with_its_reason():
    assert [layer.name for layer in PIPELINE] == ORDER and STEP_PIPELINE is PIPELINE
    assert all(len(layer.why) > 20 for layer in PIPELINE)
    assert pipeline.describe().splitlines()[0].startswith("1. remember inputs (step): ")
    assert "streaming (step, query): " in pipeline.describe() and "retries (request): " in pipeline.describe()


def test_a_step_and_a_query_compose_the_same_layers_where_they_apply_to_both():
    both = [layer.name for layer in PIPELINE if {STEP, QUERY} <= layer.kinds]
    assert both == ["capabilities", "streaming"]
    assert pipeline.layers_for(REQUEST) == (pipeline.RETRIES,)  # what a run's LM makes each request through


def test_a_run_pays_only_for_the_layers_it_uses(tmp_path):
    run = Run("t")
    step = _step(tmp_path, run=run)
    step.lm = dspy.LM("openai/x", api_key="k")
    run.tree.stream = False
    used = [layer.name for layer in PIPELINE if layer.applies_to(step)]
    assert used == ["remember inputs", "attempts", "compaction", "kept for --last", "end marker as stop"]  # no caps,
    # steering, stream, cache marks
    step.lm = dspy.LM("openai/o3", api_key="k", temperature=1.0, max_tokens=16000)  # refuses a stop sequence
    assert "end marker as stop" not in [layer.name for layer in PIPELINE if layer.applies_to(step)]

    run.spend = SpendBudget(max_tokens=1000, run=run)
    steering_of(run, create=True)
    used = [layer.name for layer in PIPELINE if layer.applies_to(step)]
    assert used == ["remember inputs", "stop check", "spend admission", "attempts", "compaction", "user notes",
                    "kept for --last"]  # (o3: no stop sequence)


def test_a_sub_agent_step_sees_its_trees_caps_in_one_step(tmp_path):
    root = Run("root")
    root.spend = SpendBudget(max_tokens=10, run=root)
    child = root.add_child("child")
    names = [layer.name for layer in PIPELINE if layer.applies_to(_step(tmp_path, run=child))]
    assert "spend admission" in names


def _recording_layers(seen: list[str]) -> tuple[Layer, ...]:
    def layer(name: str) -> Layer:
        def wrap(step, call):
            def run(**inputs):
                seen.append(name)
                return call(**{**inputs, "path": inputs.get("path", "") + name})
            return run
        return Layer(name, "recorded", lambda step: name != "skipped", wrap)
    return tuple(layer(name) for name in ("outer", "skipped", "middle", "inner"))


@pytest.mark.parametrize("is_async", [False, True])
def test_sync_and_async_calls_go_through_the_same_list_outermost_first(tmp_path, is_async):
    seen: list[str] = []
    step = _step(tmp_path, is_async=is_async)
    if is_async:
        async def leaf(**inputs):
            return inputs["path"]
        result = asyncio.run(compose(step, leaf, _recording_layers(seen))(path=""))
    else:
        result = compose(step, lambda **inputs: inputs["path"], _recording_layers(seen))(path="")
    assert seen == ["outer", "middle", "inner"] and result == "outermiddleinner"


def test_the_agents_predictor_calls_through_the_pipeline(tmp_path, monkeypatch):
    """StepPredict really goes through PIPELINE: a layer added to it sees every step."""
    from deepagent_magics import DeepAgent
    from deepagent_magics.testing import ScriptedLM

    seen: list[str] = []

    def spy(step, call):
        def run(**inputs):
            seen.append(step.run.task)
            return call(**inputs)
        return run

    monkeypatch.setattr(pipeline, "PIPELINE", (Layer("spy", "test", lambda step: True, spy), *PIPELINE))
    lm = ScriptedLM([("Look.", "x = 1"), ("Answer.", "SUBMIT(result='done')")])
    agent = DeepAgent(lm=lm, workspace=tmp_path)
    agent.record_runs = False
    run = agent.run("two steps", namespace={})
    assert run.status == "finished" and seen == ["two steps", "two steps"]
