"""demos/optimize.py: the offline optimisation demo's models answer as the prompt they receive says, so tuning has
something to find (the notebook itself: tests/end_to_end/test_notebooks.py)."""

from __future__ import annotations

from deepagent_magics import DeepAgent
from deepagent_magics.demos.optimize import RULE, _reflect, scripted_models


def test_the_agent_writes_capitals_only_when_its_instructions_say_so(tmp_path):
    agent_lm, _ = scripted_models()
    plain = DeepAgent(lm=agent_lm, workspace=tmp_path).run("Code for 'ab 12'", namespace={})
    ruled = DeepAgent(lm=agent_lm, workspace=tmp_path, instructions=RULE).run("Code for 'ab 12'", namespace={})
    assert (plain.result, ruled.result) == ("ab-12", "AB-12")


def test_the_reflection_model_adds_the_rule_when_the_feedback_asks_for_upper_case():
    prompt = "[[ ## current_instruction ## ]]\nWrite the code.\n\n[[ ## feedback ## ]]\nwrong: use upper case"
    assert _reflect(prompt)["new_instruction"] == f"{RULE}\n\nWrite the code."
    already = f"[[ ## current_instruction ## ]]\n{RULE}\n\n[[ ## feedback ## ]]\nupper case"
    assert _reflect(already)["new_instruction"] == RULE
