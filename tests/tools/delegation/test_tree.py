"""tools/delegation/tree.py: one sub-agent budget per delegation tree, exact under concurrency; how a child ended."""

from __future__ import annotations

import threading

from deepagent_magics import DeepAgent, ScriptedLM
from deepagent_magics.core.run.run import Run
from deepagent_magics.core.run.session import Session
from deepagent_magics.core.workspace.workspace import Workspace
from deepagent_magics.interpreters.pool import KernelPool
from deepagent_magics.tools.delegation.tree import Budget, Outcome, Tree, tree_of


def test_the_budget_gives_exactly_its_limit_to_many_threads():
    budget = Budget(25)
    granted = []
    barrier = threading.Barrier(10)

    def take():
        barrier.wait()
        granted.extend(ok for ok in (budget.acquire() for _ in range(10)) if ok)

    threads = [threading.Thread(target=take) for _ in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(granted) == 25 and budget.used == 25 and budget.remaining == 0


def test_a_child_that_finished_gives_its_value_and_one_that_failed_its_error():
    assert Outcome(True, "{'a': 1}", {"a": 1}).result == {"a": 1}
    assert Outcome(False, "Error: it failed").result == "Error: it failed"


def test_the_tree_is_made_once_for_the_whole_run_tree(tmp_path):
    pool = KernelPool(size=0)
    agent = DeepAgent(lm=ScriptedLM([]), workspace=tmp_path, max_subagents=3, pool=pool)
    root = Run("root")
    session = Session(root, Workspace(tmp_path), agent=agent)
    tree = tree_of(session)
    assert isinstance(tree, Tree) and tree.root_run is root and tree.budget.limit == 3 and tree.pool is pool
    child_session = Session(root.add_child("sub"), Workspace(tmp_path), agent=agent)
    assert tree_of(child_session) is tree
    agent.tree = "given"
    assert tree_of(session) == "given"  # a sub-agent's own tree, handed down
