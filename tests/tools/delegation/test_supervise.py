"""tools/delegation/supervise.py: what is refused before any kernel starts, and in which order outcomes come back
(running children in kernels: tests/tools/delegation/test_subagents.py)."""

from __future__ import annotations

from deepagent_magics import DeepAgent, ScriptedLM
from deepagent_magics.core.run.run import Run
from deepagent_magics.core.run.session import Session
from deepagent_magics.core.workspace.workspace import Workspace
from deepagent_magics.interpreters.pool import KernelPool
from deepagent_magics.tools.delegation.supervise import run_subagents
from deepagent_magics.tools.delegation.tree import Spec


def session(tmp_path, **settings):
    agent = DeepAgent(lm=ScriptedLM([]), workspace=tmp_path, pool=KernelPool(size=0), **settings)
    return Session(Run("root"), Workspace(tmp_path), agent=agent)


def test_refusals_come_back_in_order_and_start_nothing(tmp_path):
    made = session(tmp_path, max_subagents=1, max_depth=1)
    made.run.spend = None
    outcomes = run_subagents(made, ["Error: not a task", Spec("   "), Spec("x", agent="no-such-type"),
                                    Spec("x", agent="coder", profile="default")])
    texts = [outcome.text for outcome in outcomes]
    assert texts[0] == "Error: not a task" and texts[1] == "Error: the task is empty; say what the sub-agent should do"
    assert texts[2].startswith("Error: unknown sub-agent type 'no-such-type'") or texts[2].startswith("Error:")
    assert texts[3] == "Error: give agent='coder' or profile='default', not both"
    assert not any(outcome.ok for outcome in outcomes) and made.run.children == []


def test_past_the_depth_limit_nothing_starts(tmp_path):
    made = session(tmp_path, max_depth=0)
    [outcome] = run_subagents(made, [Spec("count")])
    assert outcome.text.startswith("Error: delegation depth limit reached (this agent is at depth 0 of max_depth 0)")


def test_a_run_without_an_agent_cannot_delegate(tmp_path):
    assert run_subagents(Session(Run("r"), Workspace(tmp_path)), [Spec("a"), Spec("b")])[1].text == (
        "Error: delegation needs a DeepAgent run")
