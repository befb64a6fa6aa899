"""A long run keeps a bounded LM history (issue 10, item 16).

Each step's prompt carries the whole REPL history, so prompts grow with the steps; DSPy
keeps every request in each LM's and module's history and in its global history
(``dspy.clients.base_lm.GLOBAL_HISTORY``): memory grows with the square of the steps.
A 200-step scripted run whose prompts grow must keep only a bounded amount, while its
usage stays exact and ``dspy.inspect_history`` still works.
"""

from __future__ import annotations

import io
import json

import dspy
from dspy.clients import base_lm

from deepagent_magics import DeepAgent
from deepagent_magics.testing import ScriptedLM

STEPS = 200
PRINTED = 600  # characters each step prints: the REPL history in the prompt grows by this much a step


def heavy_size(entry):
    return sum(len(json.dumps(entry.get(name), default=str)) for name in ("messages", "prompt", "response", "outputs"))


def test_a_200_step_run_keeps_a_bounded_history(tmp_path):
    steps = [(f"Step {i}.", f"print('{i:03d}' + 'x' * {PRINTED})") for i in range(STEPS)]
    steps.append(("Done.", "SUBMIT(result='done')"))
    lm = ScriptedLM(steps)
    agent = DeepAgent(lm=lm, workspace=tmp_path, max_iters=STEPS + 1, max_llm_calls=10)
    seen = {id(entry) for entry in base_lm.GLOBAL_HISTORY}

    run = agent.run("a long task", {})

    assert run.status == "finished" and run.result == "done"
    assert len(run.steps) == STEPS + 1
    assert run.usage.lm_calls == STEPS + 1  # usage still counts every call
    ours = [entry for entry in base_lm.GLOBAL_HISTORY if id(entry) not in seen]
    assert len(ours) == STEPS + 1
    prompts = [len(request["system"]) + len(request["user"]) for request in lm.requests]
    assert prompts[-1] > 50 * prompts[0] // 10  # the prompts did grow (the REPL history)
    kept = sum(heavy_size(entry) for entry in ours)
    total = sum(prompts)
    # Unbounded, the run keeps every prompt (here > 10 MB); bounded, a few whole entries and small stubs.
    assert total > 10_000_000
    assert kept < 8 * max(prompts) + 2_000 * len(ours), (kept, total)
    assert len(lm.history) <= 3
    for name, module in agent.named_sub_modules():
        assert len(getattr(module, "history", [])) <= 3, name
    last = ours[-1]
    assert last["messages"] and "SUBMIT(result='done')" in json.dumps(last["outputs"], default=str)
    assert all(entry.get("usage") for entry in ours)  # usage and cost stay on every entry
    out = io.StringIO()
    dspy.inspect_history(n=10, file=out)  # stripped entries still print
    assert "trimmed" in out.getvalue()
