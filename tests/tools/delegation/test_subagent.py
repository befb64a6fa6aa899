"""tools/delegation/subagent.py: a child takes from its parent what the settings table says a sub-agent takes,
so a setting added to the table is inherited (or not) where it is declared, and nowhere else."""

from __future__ import annotations

import dataclasses

import pytest

from deepagent_magics import DeepAgent, SubAgentType, settings
from deepagent_magics.core.run.run import Run
from deepagent_magics.core.run.session import Session
from deepagent_magics.core.workspace.workspace import Workspace
from deepagent_magics.settings import AGENT, OWN, ROOT, SAME, SETTINGS, TREE
from deepagent_magics.testing import ScriptedLM
from deepagent_magics.tools.delegation.child import Child
from deepagent_magics.tools.delegation.subagent import child_agent
from deepagent_magics.tools.delegation.tree import Budget, Spec, Tree


def a_child(parent: DeepAgent, tmp_path, agent: str | None = None) -> DeepAgent:
    run = Run("parent's task")
    session = Session(run, Workspace(tmp_path / "run-workspace"), agent=parent)
    return child_agent(parent, session, Tree(run, Budget(16), None), Child(Spec("a task", agent=agent), 0))


def test_a_child_takes_its_parents_values_where_the_table_says_same(tmp_path):
    lm = ScriptedLM([])
    parent = DeepAgent(lm=lm, sub_lm="openai/small", workspace=tmp_path, timeout=33.0, max_llm_calls=7,
                       max_subagents=3, subagent_max_iters=4, subagent_timeout=55.0, max_parallel=2,
                       skills_dir=str(tmp_path / "skills"), subagent_skills=True, compact_at=0.25, undo_limit=5,
                       max_cost=1.0, approve="always", stream=False, profile="coder")
    child, fresh = a_child(parent, tmp_path), DeepAgent(lm=lm, workspace=tmp_path)
    for setting in settings.at(AGENT):
        value = getattr(child, setting.name)
        if setting.subagent == SAME:
            assert value == getattr(parent, setting.name), setting.name
        elif setting.subagent in (TREE, ROOT):  # the tree holds it (caps, approval, streaming), or the root alone
            assert value == getattr(fresh, setting.name), setting.name
    assert child.max_iters == 4  # FROM subagent_max_iters
    assert child.lm is lm and child.sub_lm == "openai/small" and child.depth == 1
    assert child.workspace == tmp_path / "run-workspace" and child.profile == "coder"  # OWN: its run's, its kind's


def test_a_sub_agent_type_s_own_limit_and_lm_win(tmp_path):
    kind = SubAgentType("analyst", "fits models", "Fit it.", lm="openai/other", max_iters=3)
    parent = DeepAgent(lm=ScriptedLM([]), workspace=tmp_path, subagents=[kind], subagent_max_iters=9)
    child = a_child(parent, tmp_path, agent="analyst")
    assert child.max_iters == 3 and child.lm == "openai/other" and child.profile == "analyst"


@pytest.mark.parametrize("how, inherited", [(SAME, True), (OWN, False), (TREE, False)])
def test_a_setting_added_to_the_table_is_inherited_as_it_declares(monkeypatch, tmp_path, how, inherited):
    """A new limit needs no change in delegation: its entry says whether a sub-agent takes it (also when a
    sub-agent with the same settings was built before the table had it: built sub-agents are reused)."""
    a_child(DeepAgent(lm=ScriptedLM([]), workspace=tmp_path), tmp_path)
    new = settings.setting("subagent_widgets", int, 8, {AGENT}, subagent=how, help="widgets per agent")
    monkeypatch.setitem(SETTINGS, new.name, new)
    parent = DeepAgent(lm=ScriptedLM([]), workspace=tmp_path, subagent_widgets=3)
    assert a_child(parent, tmp_path).subagent_widgets == (3 if inherited else 8)


def test_every_setting_says_how_a_sub_agent_takes_it():
    agent_names = {s.name for s in settings.at(AGENT)}
    for s in SETTINGS.values():
        assert s.subagent in (SAME, TREE, ROOT, OWN) or s.subagent.startswith(settings.FROM), s.name
        if s.subagent == SAME or s.subagent.startswith(settings.FROM):  # read from the parent: an agent's attribute
            assert s.name in agent_names and s.subagent.removeprefix(settings.FROM) in agent_names | {SAME}, s.name


def test_a_gateway_s_kernels_take_only_what_the_table_says():
    values = {"subagent_network": True, "require_sandbox": True, "pool_size": 5, "kernel_name": "py", "max_depth": 1}
    here = settings.for_kernels(values, on_gateway=False)
    assert here == {"subagent_network": True, "require_sandbox": True, "pool_size": 5, "kernel_name": "py"}
    there = settings.for_kernels(values, on_gateway=True)
    assert there == {"subagent_network": False, "require_sandbox": False, "pool_size": 5, "kernel_name": "py"}
    assert dataclasses.replace(SETTINGS["pool_size"], on_gateway=None).on_gateway is None  # not a kernel's: left out


def test_an_environment_default_is_read_from_the_table(monkeypatch):
    monkeypatch.setenv("JUPYTER_GATEWAY_URL", "http://gateway.example:8888")
    assert SETTINGS["gateway_url"].or_env(None) == "http://gateway.example:8888"
    assert SETTINGS["gateway_url"].or_env("http://mine:1") == "http://mine:1"
    monkeypatch.delenv("JUPYTER_GATEWAY_URL")
    assert SETTINGS["gateway_url"].or_env(None) is None
