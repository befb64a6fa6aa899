"""Delegation: sub-agents with a fresh context, each in a kernel of its own.

``delegate``, ``delegate_batched`` and ``review`` run a child `DeepAgent` one level
deeper whose REPL is a fresh kernel from the pool: the child cannot see its parent's
variables, both share the workspace directory, and the parent sees only the child's result.

- `tree`: what a delegation tree shares (budget, pool, root run)
- `child`: one child as its parent supervises it
- `subagent`: the child's agent (`SubAgent`)
- `supervise`: running children in parallel, with limits, interruptibly
- `tools`: the three tools; `verdict`: reading a reviewer's verdict
"""

from .child import Child
from .subagent import SubAgent
from .supervise import run_subagents
from .tools import (
           DEFAULT_CRITERIA,
           DELEGATION,
           REVIEWER_PROFILE,
           delegate,
           delegate_batched,
           delegation_tools,
           offer_subagent_types,
           review,
)
from .tree import Budget, Outcome, Spec, Tree, tree_of
from .verdict import VERDICTS, parse_verdict

__all__ = ["Child", "SubAgent", "run_subagents", "DEFAULT_CRITERIA", "DELEGATION", "REVIEWER_PROFILE", "delegate",
           "delegate_batched", "delegation_tools", "offer_subagent_types", "review", "Budget", "Outcome", "Spec", "Tree", "tree_of",
           "VERDICTS", "parse_verdict"]
