"""Scripted stand-ins for the models in ``notebooks/04_optimize.ipynb``.

When ``DEEPAGENT_LM`` is unset the notebook runs offline: a `ScriptedLM` plays
the agent and another plays GEPA's reflection model. Their behaviour depends on
the prompt, as a model's would, so tuning has something to find:

- the agent joins the words of an item name with a dash (``'ab 12'`` ->
  ``ab-12``) and writes the code in capitals only when its instructions say
  catalogue codes are upper case;
- the reflection model reads the metric's feedback and, when it says the case is
  wrong, adds that rule to the instructions.

The optimisers themselves are tuning/optimize.py.
"""

from __future__ import annotations

import re

from ..testing import ScriptedLM, ScriptedRequest

NOTICE = ("No DEEPAGENT_LM set: scripted models play the agent and the reflection LM "
          "(no model is called); their answers depend on the prompt they receive.")
RULE = "Catalogue codes are always written in upper case, with a dash between the parts (AB-12)."


def _agent(request: ScriptedRequest) -> tuple[str, str]:
    upper = "upper case" in request.system.lower()
    if "[[ ## repl_history ## ]]\nStep 1." not in request.user:  # no step yet (core.model.compaction.Steps)
        return ("Find the item name in the task first.", "raw = task.split(\"'\")[1]\nprint(repr(raw))")
    if upper:
        return ("The instructions say catalogue codes are upper case.", "SUBMIT(result=raw.replace(' ', '-').upper())")
    return ("Join the parts with a dash.", "SUBMIT(result=raw.replace(' ', '-'))")


def _baselines(prompt: str) -> dict[str, str]:
    """ChainOfThought and ReAct answer in one go, without the rule."""
    match = re.search(r"'([^']+)'", prompt)
    guess = match.group(1).replace(" ", "-") if match else "?"
    return {"reasoning": "Join the parts with a dash.", "result": guess,
            "next_thought": "I can answer directly.", "next_tool_name": "finish", "next_tool_args": "{}"}


def _reflect(prompt: str) -> dict[str, str]:
    current = re.search(r"\[\[ ## current_instruction ## \]\]\n(.*?)\n\n\[\[ ## ", prompt, re.S)
    instruction = current.group(1) if current else ""
    if "upper case" in prompt and RULE not in instruction:
        instruction = f"{RULE}\n\n{instruction}"
    return {"new_instruction": instruction}


def scripted_models() -> tuple[ScriptedLM, ScriptedLM]:
    """(the agent's LM, the reflection LM)."""
    return (ScriptedLM(_agent, replies=_baselines, model="scripted/agent"),
            ScriptedLM([], replies=_reflect, model="scripted/reflection"))
