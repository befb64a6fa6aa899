"""The loop room (the top of the core): `DeepAgent` around ``dspy.RLM`` (`agent`), the step pipeline
around each model call (`pipeline`, `attempts`), how a run ends early (`ending`), the profiles and
their prompt files (`profiles`, ``prompts/``), what the model reads (`rlm_seam`: the one seam over
RLM's prompt; `instructions`, `inputs_view`) and the variables view (`variables`), how agent code calls
a tool (`tool_binding`), notebook functions as tools, sub-agent types, and where the rooms above the
core plug in (`extensions`). Imports every core room below it."""
