"""The sub-agent: a `DeepAgent` one level down the tree whose REPL is a fresh kernel from the tree's pool.

Children with the same settings share one built template (building a ``dspy.RLM``
takes ~10 ms); each child is a shallow copy with its own tree, child, LM and workspace.
"""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

import dspy

from ...core.agent import DeepAgent
from ...core.profiles import load_profile
from ...core.session import Session
from ...interpreters.kernel import KernelInterpreterFactory
from .child import Child
from .tree import Tree
from .verdict import REVIEWER_PROFILE, VerdictRLM, verdict_signature


class SubAgent(DeepAgent):
    """A `DeepAgent` one level down the tree: its REPL is a fresh kernel from the tree's pool.

    A reviewer (profile `REVIEWER_PROFILE`) answers with typed verdict fields instead of a
    free-text result (`verdict.VerdictRLM`): its verdict is what it submits, never text it quotes."""

    def __init__(self, *, tree: Tree | None = None, child: Child | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.tree = tree
        self.child = child
        if self.profile == REVIEWER_PROFILE:
            rlm = self.rlm
            self.rlm = VerdictRLM(verdict_signature(rlm.signature.instructions), max_iters=rlm.max_iters,
                                  max_llm_calls=rlm.max_llm_calls, max_output_chars=rlm.max_output_chars,
                                  tools=self.builtin_tools() + self.extra_tools,
                                  interpreter_factory=self.interpreter_factory())

    def interpreter_factory(self, session=None, namespace=None, shell=None):
        tree, child = getattr(self, "tree", None), getattr(self, "child", None)
        return KernelInterpreterFactory(
            session,
            pool=tree.pool if tree is not None else None,
            timeout=self.timeout,
            on_start=child.attach if child is not None else None,
        )


def child_agent(parent: Any, session: Session, tree: Tree, child: Child) -> SubAgent:
    """The child's agent: a copy of a built template, with this child's own settings."""
    agent = copy.copy(_template(
        profile=child.spec.profile or parent.profile,
        depth=parent.depth + 1,
        max_depth=parent.max_depth,
        max_iters=parent.subagent_max_iters,
        max_llm_calls=parent.max_llm_calls,
        timeout=parent.timeout,
        tools=tuple(parent.extra_tools),
        sub_lm=parent.sub_lm,
    ))
    agent.tree, agent.child, agent.pool = tree, child, tree.pool
    agent.lm = parent.lm if parent.lm is not None else dspy.settings.lm
    agent.workspace = Path(session.workspace.root)
    for name in ("max_subagents", "subagent_max_iters", "subagent_timeout", "max_parallel", "retry_policy"):
        setattr(agent, name, getattr(parent, name))
    return agent


_templates: "OrderedDict[tuple, SubAgent]" = OrderedDict()
_templates_lock = threading.Lock()
TEMPLATES_KEPT = 32


def _template(*, profile: str, depth: int, max_depth: int, tools: tuple, sub_lm: Any, **settings: Any) -> SubAgent:
    """A built sub-agent for these settings. Building a dspy.RLM takes ~10 ms (its signatures are
    pydantic models) and an RLM keeps each call's state in the call, so every child with the same
    settings shares one RLM (DeepAgent.run writes only these settings to it)."""
    instructions = load_profile(profile).instructions(depth=depth, max_depth=max_depth)
    lm_key = sub_lm if sub_lm is None or isinstance(sub_lm, str) else id(sub_lm)  # the template keeps it alive
    key = (instructions, profile, depth, max_depth, tools, lm_key, tuple(sorted(settings.items())))
    with _templates_lock:
        template = _templates.get(key)
        if template is None:
            template = _templates[key] = SubAgent(profile=profile, depth=depth, max_depth=max_depth, tools=tools,
                                                  sub_lm=sub_lm, instructions=instructions, **settings)
            while len(_templates) > TEMPLATES_KEPT:
                _templates.popitem(last=False)
        _templates.move_to_end(key)
        return template
