"""core/run/run_tree.py: what a run tree shares is one object, reached from any run in one step."""

from __future__ import annotations

import threading

from deepagent_magics.core.model import streaming as step_streaming
from deepagent_magics.core.policy import approval, spend, steering
from deepagent_magics.core.run.run import Run


def test_every_run_of_a_tree_holds_the_roots_tree():
    root = Run("root")
    child = root.add_child("child")
    grandchild = child.add_child("grandchild")
    assert child.tree is root.tree and grandchild.tree is root.tree
    assert Run("another root").tree is not root.tree


def test_each_policy_reads_the_tree_not_the_runs_own_attributes():
    root = Run("root")
    leaf = root.add_child("a").add_child("b")
    root.spend = budget = spend.SpendBudget(max_tokens=5, run=root)
    assert spend.budget_of(leaf) is budget and root.tree.spend is budget
    inbox = steering.steering_of(leaf, create=True)
    assert steering.steering_of(root) is inbox is root.tree.steering
    approver = approval.Approver("always", None, ask=None)
    approval.attach(root, approver)
    assert approval.approver_of(leaf) is approver
    assert step_streaming.wanted(leaf)
    step_streaming.opt_out(root)
    assert not step_streaming.wanted(leaf) and not root.tree.stream


def test_a_trees_state_is_made_once_when_many_threads_ask_at_once():
    root = Run("root")
    made: list[object] = []
    barrier = threading.Barrier(8)

    def make():
        made.append(object())
        return made[-1]

    def ask():
        barrier.wait()
        root.tree.setdefault("delegation", make)

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(made) == 1 and root.tree.delegation is made[0]
