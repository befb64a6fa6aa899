"""tools/delegation/tools.py: ``delegate``, ``delegate_batched`` and ``review`` as the agent calls them; what the
prompt says about sub-agents (with real kernels: tests/tools/delegation/test_subagents.py)."""

from __future__ import annotations

import pytest

from deepagent_magics import DeepAgent, ScriptedLM
from deepagent_magics.core.loop.subagent_types import SubAgentType
from deepagent_magics.tools.delegation.tools import (
    DEFAULT_CRITERIA,
    SUBAGENTS_HEAD,
    _criteria,
    _spec,
    _task_list,
    delegate,
    describe_types,
)
from deepagent_magics.tools.delegation.tree import Spec


def test_batched_tasks_are_strings_or_task_dicts_and_a_bad_one_is_its_own_error():
    assert _task_list('["a", {"task": "b"}]') == ["a", {"task": "b"}]
    with pytest.raises(ValueError):
        _task_list({"task": "a"})
    assert _spec("a") == Spec("a")
    assert _spec({"task": "b", "context": "c", "agent": "coder"}) == Spec("b", "c", None, "coder")
    assert _spec({"task": "b", "color": "red"}).startswith("Error: unknown keys ['color']")
    assert _spec(3).startswith("Error: 3 is not a task")


def test_criteria_are_a_list_a_text_of_lines_or_the_defaults():
    assert _criteria(None) == DEFAULT_CRITERIA and _criteria([]) == DEFAULT_CRITERIA
    assert _criteria("- correct\n* complete\n\n") == ["correct", "complete"]
    assert _criteria(["one", 2]) == ["one", "2"]
    with pytest.raises(ValueError):
        _criteria(3)


def test_the_prompt_lists_every_type_but_the_agents_own_and_the_reviewer():
    def fetch(url: str) -> str:
        """Fetch."""
        return url

    text = describe_types({"reader": SubAgentType("reader", "reads documents", "Read.", tools=[fetch])}, own="default")
    assert text.startswith(SUBAGENTS_HEAD)
    assert "- coder: " in text and "- default:" not in text and "- reviewer:" not in text
    assert "- reader: reads documents (tools: fetch)" in text


def test_past_the_depth_limit_delegate_is_an_error_the_agent_reads_and_no_kernel_starts(tmp_path):
    lm = ScriptedLM([("Delegate.", "print(delegate('count the words'))"), ("Done.", "SUBMIT(result='ok')")])
    run = DeepAgent(lm=lm, workspace=tmp_path, max_depth=0).run("Try to delegate.", namespace={})
    assert "Error: delegation depth limit reached" in run.steps[0].output and run.children == []
    assert delegate.starts_subagents and delegate.writes and delegate.risk_rule == "subagents"
