"""core/loop/rlm_seam.py: the one seam over dspy.RLM's prompt: our instructions, one text of the inputs, the code as it
runs (what it relies on in DSPy: tests/core/test_dspy_contract.py)."""

from __future__ import annotations

import dspy

from deepagent_magics import DeepAgent, ScriptedLM
from deepagent_magics.core.loop.rlm_seam import Code, Rendered, as_run, one_text


def test_the_models_code_runs_without_its_fences_and_rlm_leaves_it_so():
    code = as_run("Here it is:\n```python\nx = 1\nprint('```')\n```")
    assert isinstance(code, Code) and code == "x = 1\nprint('```')"
    assert code.strip() is code and "```" not in code and "print" in code
    assert as_run("```bash\nls\n```") == "```bash\nls\n```"  # not Python: left for RLM to say so
    assert as_run(code) is code and as_run(None) is None


def test_the_inputs_are_one_text():
    assert Rendered("the view").format() == "the view"
    assert one_text({"variables_info": ["a", "b"], "iteration": 1}) == {"variables_info": "a\n\nb", "iteration": 1}
    assert one_text({"variables_info": "kept"}) == {"variables_info": "kept"}


def test_the_request_carries_our_instructions_and_never_rlms_own_template(tmp_path):
    lm = ScriptedLM(["SUBMIT(result='ok')"])
    DeepAgent(lm=lm, workspace=tmp_path).run("Count the rows", namespace={"rows": [1, 2]})
    system, user = lm.requests[0]["system"], lm.requests[0]["user"]
    assert "## Tools" in system and "## Your REPL" in system and str(tmp_path) not in system
    assert f"Workspace: {tmp_path.resolve()}" in user  # what the run has: in its request, not the system message
    assert "dspy.Predict" not in system  # RLM's sub-agent advice is never added
    assert "Task (`task`):\nCount the rows" in user and "rows" in user


def test_llm_query_goes_through_the_agents_pipeline_and_is_counted(tmp_path):
    lm = ScriptedLM(["answer = llm_query('What is 2+2?')\nSUBMIT(result=answer)"], replies="four")
    run = DeepAgent(lm=lm, workspace=tmp_path).run("Ask", namespace={})
    assert run.result == "four" and run.usage.lm_calls == 2
    assert isinstance(dspy.RLM, type)
