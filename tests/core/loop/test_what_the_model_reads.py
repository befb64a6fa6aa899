"""What the model reads: one prompt we own, per role, each tool once, and the request's own view of the inputs.

Every request here is a real DSPy request (a real DeepAgent on dspy.RLM, the real adapter) answered by a
ScriptedLM, which records the system and user messages exactly as a provider would receive them.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from deepagent_magics import DeepAgent, SubAgentType
from deepagent_magics.core.loop import inputs_view
from deepagent_magics.testing import ScriptedLM
from deepagent_magics.tools.delegation.subagent import SubAgent

RLM_TEXT = ["You are tasked with producing the following outputs", "Additional tools available",
            "Sub-agents (dspy)", "dspy.ReActV2", "~500K char capacity", "EXPLORE FIRST", "SUBMIT ONLY AFTER",
            "- {result}", "{status}", "# note:", "Variable: `task` (access it in your code)", "Total length:",
            "cannot cross to the host", "In adhering to this structure"]
ROOT_TOOLS = ["write_todos", "read_todos", "ls", "glob", "read_file", "write_file", "edit_file", "grep", "llm_query",
              "llm_query_batched", "delegate", "delegate_batched", "review", "remember", "recall", "SUBMIT"]
# history() is named where it is of use (a compacted history's head), read_skill and list_skills with a run's skills
DIABETES = ["age", "sex", "bmi", "bp", "s1", "s2", "s3", "s4", "s5", "s6", "target"]
WINE = ["alcohol", "malic_acid", "ash", "alcalinity_of_ash", "magnesium", "total_phenols", "flavanoids",
        "nonflavanoid_phenols", "proanthocyanins", "color_intensity", "hue", "od280/od315_of_diluted_wines",
        "proline"]


def frames() -> dict:
    rng = np.random.default_rng(0)
    wine = pd.DataFrame(rng.normal(size=(178, 13)), columns=WINE).assign(target=rng.integers(0, 3, 178))
    return {"diabetes": pd.DataFrame(rng.normal(size=(442, 11)), columns=DIABETES), "wine": wine}


def first_request(tmp_path, task="Which three features of `diabetes` are most associated with `target`?", **kwargs):
    lm = ScriptedLM([("Done.", "SUBMIT(result='ok')")])
    namespace = kwargs.pop("namespace", None) or frames()
    run = DeepAgent(lm=lm, workspace=tmp_path, **kwargs).run(task, namespace)
    assert run.status == "finished", run.error
    return lm.requests[0]


def documented(system: str) -> list[str]:
    """The tools the prompt documents, in the order it does (each `name(` that opens a tool's description)."""
    tools = system.split("## Tools", 1)[1].split("\n\n", 1)[0]
    return [name for line in tools.splitlines() if line.startswith("- `")
            for name in re.findall(r"(?:^- |; )`(\w+)\(", line)]


def test_the_root_reads_one_prompt_each_tool_once_and_nothing_of_rlms_template(tmp_path):
    request = first_request(tmp_path)
    system, user = request["system"], request["user"]
    for text in RLM_TEXT:
        assert text not in system + user, text
    assert sorted(documented(system)) == sorted(ROOT_TOOLS)  # every offered tool, once
    assert system.count("## Workflow") == 1 and system.count("## Tools") == 1
    assert "- `write_file(path, content)`:" in system  # as a caller writes it, no JSON-schema types
    assert "`help(name)` shows a tool in full" in system and "Error: ..." in system


def test_the_first_request_with_two_data_frames_stays_within_six_thousand_characters(tmp_path):
    request = first_request(tmp_path)
    assert len(request["system"]) + len(request["user"]) <= 6000
    for column in WINE + DIABETES:  # every column, with its dtype, of both frames (wine's proline too)
        assert column in request["user"]
    assert "float64: alcohol, malic_acid" in request["user"] and "; int64: target" in request["user"]


def test_the_root_is_told_the_sub_agent_types_and_where_sub_agents_work(tmp_path):
    analyst = SubAgentType("analyst", "fits models and reports their errors", "Fit the model the task names.")
    request = first_request(tmp_path, subagents=[analyst])
    system, user = request["system"], request["user"]
    assert "its own kernel (your files, not your variables)" in system  # delegate's line, once
    block = user.split("Sub-agent types for `agent=`:", 1)[1]  # what this run has: after the inputs
    assert "- coder: " in block and "- researcher: " in block and "- analyst: fits models and reports their errors" in block
    assert "- default: " not in block and "- reviewer" not in block  # itself; review() reaches the reviewer
    assert f"Workspace (working directory): {tmp_path.resolve()}" in user or f"Workspace: {tmp_path.resolve()}" in user
    assert "analyst" not in system and str(tmp_path.resolve()) not in system  # the same system message for every run


def test_without_delegation_nothing_is_said_about_it(tmp_path):
    request = first_request(tmp_path, max_depth=0)
    system = request["system"]
    for text in ("delegate", "review", "Sub-agent", "sub-agent"):
        assert text not in system + request["user"], text
    assert "write_file" in documented(system)


def test_a_sub_agent_reads_its_own_role_no_notebook_and_how_its_result_travels():
    agent = SubAgent(profile="default", depth=1, max_depth=2)
    text = agent.prompt_instructions
    assert "## You are a sub-agent" in text and "## You are the root agent" not in text
    assert "Jupyter kernel of your own, in the shared workspace" in text
    assert "as data (a dict stays a dict" in text
    assert "notebook_variables" not in text and "live Jupyter kernel" not in text and "their notebook" not in text
    rendered = agent.render_inputs({"task": "T", "context": "", "notebook_variables": "- x: int = 1"})
    assert rendered == f"{inputs_view.TASK_HEAD}\nT"  # no notebook, no empty context


def test_the_deepest_sub_agent_is_not_offered_delegation():
    text = SubAgent(profile="default", depth=2, max_depth=2).prompt_instructions
    assert "deepest level" in text and "delegate" not in documented(text) and "review" not in documented(text)


def test_the_reviewer_is_offered_only_tools_that_read():
    text = SubAgent(profile="reviewer", depth=1, max_depth=2).prompt_instructions
    tools = documented(text)
    assert set(tools) == {"ls", "glob", "read_file", "grep", "llm_query", "llm_query_batched", "recall", "SUBMIT"}
    # history() and the skills' tools are said where they are of use (a compacted history, the run's skills)
    assert "SUBMIT(status=..., issues=..., suggestions=...)" in text and "result" not in tools
    assert "## Sub-agents" not in text


def test_a_custom_type_reads_its_instructions_and_its_tools_only():
    def fit_model(formula: str) -> str:
        """Fit an OLS model for `formula` and return its summary."""
        return formula

    kind = SubAgentType("analyst", "fits models", "ANALYST-ONLY: fit the model the task names, then report.",
                        tools=[fit_model])
    agent = SubAgent(profile="analyst", depth=1, max_depth=2, instructions=kind.instructions_at(1, 2),
                     tools=kind.tools)
    text = agent.prompt_instructions
    assert text.startswith("ANALYST-ONLY") and "## Workflow" not in text  # not the default profile's text
    assert "- `fit_model(formula)`: Fit an OLS model for `formula` and return its summary." in text


def test_the_task_and_context_are_shown_whole_and_marked_where_cut(tmp_path):
    cells = "\n".join(f"cell line {n}: " + "v" * 60 for n in range(200))
    lm = ScriptedLM([("Done.", "SUBMIT(result='ok')")])
    DeepAgent(lm=lm, workspace=tmp_path, max_depth=0).run("Use {braces} and {} as written.", {}, context=cells)
    user = lm.requests[0]["user"]
    assert "Use {braces} and {} as written." in user
    shown = user.split(inputs_view.CONTEXT_HEAD + "\n", 1)[1].split("\n\n", 1)[0].splitlines()
    at = next(n for n, line in enumerate(shown) if line.startswith("[... "))
    begin, end = map(int, re.search(r"print\(context\[(\d+):(\d+)\]\)", shown[at]).groups())
    assert "\n".join(shown[:at]) + "\n" == cells[:begin]  # whole lines before the marker ...
    assert "\n".join(shown[at + 1:]) == cells[end:]  # ... and after it; its slice is exactly what is left out
    assert f"{len(cells[begin:end].splitlines())} lines ({end - begin:,} chars) left out" in shown[at]
    assert len(user) < inputs_view.CONTEXT_CHARS + 1500


def test_the_scripted_model_finds_the_task_by_the_views_own_section_heads():
    from deepagent_magics import testing

    assert testing.SECTION_HEADS == (inputs_view.TASK_HEAD, inputs_view.CONTEXT_HEAD, inputs_view.VARIABLES_HEAD)


@pytest.mark.parametrize("profile", ["default", "coder", "researcher"])
def test_no_heading_of_any_role_stands_empty(tmp_path, profile):
    """A heading with nothing under it ("## You are the root agent", then the next heading) is text the model
    reads for nothing: every heading of every role's prompt has a body."""
    texts = [first_request(tmp_path, profile=profile)["system"]]
    texts += [DeepAgent(profile=profile, depth=depth).instructions for depth in (1, 2)]
    for text in texts:
        blocks = re.split(r"\n(?=## )", text)
        empty = [block.strip() for block in blocks if block.startswith("## ") and "\n" not in block.strip()]
        assert empty == [], empty
