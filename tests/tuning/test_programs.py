"""tuning/programs.py: the active program of each profile: a tuned one applied to root agents, hand edits, reset."""

from __future__ import annotations

import pytest

from deepagent_magics import DeepAgent, ScriptedLM
from deepagent_magics.core.loop.profiles import UnknownProfile, available_profiles
from deepagent_magics.tuning import programs


@pytest.fixture(autouse=True)
def _clean():
    yield
    for profile in available_profiles():
        programs.reset(profile)


def tuned_agent(text="Tuned instructions."):
    agent = DeepAgent(lm=ScriptedLM([]))
    for _, predictor in agent.named_predictors():
        predictor.signature = predictor.signature.with_instructions(text)
        predictor.demos = [{"task": "x"}]
    return agent


def instructions(agent):
    return [predictor.signature.instructions for _, predictor in agent.named_predictors()]


def test_a_tuned_program_is_loaded_into_each_root_agent_of_its_profile_and_untuned_builds_without_it():
    programs.install("default", tuned_agent(), "optimized with gepa")
    assert set(instructions(programs.apply(DeepAgent(lm=ScriptedLM([]))))) == {"Tuned instructions."}
    with programs.untuned():
        assert "Tuned instructions." not in instructions(programs.apply(DeepAgent(lm=ScriptedLM([]))))
    assert "Tuned instructions." not in instructions(programs.apply(DeepAgent(lm=ScriptedLM([]), depth=1)))
    assert programs.describe("default").startswith("optimized with gepa") and "demos" in programs.describe("default")


def test_a_hand_edit_keeps_the_tuned_demos_and_takes_the_new_text_then_reset_undoes_both():
    programs.install("default", tuned_agent(), "optimized with gepa")
    programs.set_instructions("default", "Hand-written instructions.\n")
    agent = programs.apply(DeepAgent(lm=ScriptedLM([])))
    assert all("Hand-written instructions." in text for text in instructions(agent))
    assert all(predictor.demos for _, predictor in agent.named_predictors())
    assert "instructions edited by hand" in programs.describe("default")
    programs.reset("default")
    assert programs.tuned("default") is None and programs.describe("default") == "packaged (prompts/default.md)"
    with pytest.raises(UnknownProfile):
        programs.reset("no-such-profile")
