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

from ...core.loop.agent import DeepAgent
from ...core.loop.profiles import UnknownProfile, load_profile
from ...core.loop.subagent_types import known_names
from ...core.run.session import Session
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
            self.rlm = self.make_rlm(verdict_signature(rlm.signature.instructions), VerdictRLM,
                                     max_iters=rlm.max_iters, max_llm_calls=rlm.max_llm_calls,
                                     max_output_chars=rlm.max_output_chars)

    @property
    def read_only(self) -> bool:
        """A reviewer's tools only read: it is told of no other, and a writing call is refused (tools/tool_call)."""
        return getattr(self, "profile", None) == REVIEWER_PROFILE

    def interpreter_factory(self, session=None, namespace=None, shell=None):
        tree, child = getattr(self, "tree", None), getattr(self, "child", None)
        return KernelInterpreterFactory(
            session,
            pool=tree.pool if tree is not None else None,
            timeout=self.timeout,
            on_start=child.attach if child is not None else None,
        )


def kind_name(parent: Any, spec: Any) -> str:
    """The kind of sub-agent ``spec`` asks for: ``agent=``, else ``profile=``, else the parent's own."""
    return spec.agent or spec.profile or parent.profile


def kind_refusal(parent: Any, spec: Any) -> str | None:
    """The ``Error:`` for a sub-agent kind that does not exist (it lists the known ones), else None."""
    types = getattr(parent, "subagents", None) or {}
    if spec.agent is not None and spec.profile is not None and spec.agent != spec.profile:
        return f"Error: give agent={spec.agent!r} or profile={spec.profile!r}, not both"
    name = kind_name(parent, spec)
    if isinstance(name, str) and name in types:
        return None
    try:
        load_profile(name)
    except UnknownProfile as exc:
        if spec.agent is None and not types:
            return f"Error: {exc}"
        return f"Error: unknown sub-agent type {str(name)[:80]!r}; the known ones are: {', '.join(known_names(types))}"
    return None


def child_agent(parent: Any, session: Session, tree: Tree, child: Child) -> SubAgent:
    """The child's agent: a copy of a built template, with this child's own settings.

    A sub-agent type (``delegate(agent="NAME")``) gives its instructions, its LM, its step limit
    and its tools, which only it gets: its own sub-agents inherit its parent's tools, not those."""
    types = getattr(parent, "subagents", None) or {}
    name = kind_name(parent, child.spec)
    kind = types.get(name)
    inherited = tuple(tool for tool in parent.extra_tools if tool not in getattr(parent, "type_tools", ()))
    own = tuple(kind.tools) if kind is not None else ()
    mine = {tool.__name__ for tool in own}
    depth = parent.depth + 1
    agent = copy.copy(_template(
        profile=name,
        depth=depth,
        max_depth=parent.max_depth,
        max_iters=(kind.max_iters if kind is not None and kind.max_iters else parent.subagent_max_iters),
        max_llm_calls=parent.max_llm_calls,
        timeout=parent.timeout,
        tools=() if name == REVIEWER_PROFILE else tuple(tool for tool in inherited if tool.__name__ not in mine) + own,
        sub_lm=parent.sub_lm,
        instructions=kind.instructions_at(depth, parent.max_depth) if kind is not None else None,
        extensions=parent.extensions,
    ))
    agent.tree, agent.child, agent.pool = tree, child, tree.pool
    agent.subagents, agent.type_tools = types, own
    if kind is not None and kind.lm is not None:
        agent.lm = kind.lm
    else:
        agent.lm = parent.lm if parent.lm is not None else dspy.settings.lm
    agent.workspace = Path(session.workspace.root)
    for name in ("max_subagents", "subagent_max_iters", "subagent_timeout", "max_parallel", "skills_dir", "subagent_skills",
                 "retry_policy"):
        if hasattr(parent, name):
            setattr(agent, name, getattr(parent, name))
    return agent


_templates: "OrderedDict[tuple, SubAgent]" = OrderedDict()
_templates_lock = threading.Lock()
TEMPLATES_KEPT = 32


def _template(*, profile: str, depth: int, max_depth: int, tools: tuple, sub_lm: Any, extensions: Any,
              instructions: str | None = None, **settings: Any) -> SubAgent:
    """A built sub-agent for these settings. Building a dspy.RLM takes ~10 ms (its signatures are
    pydantic models) and an RLM keeps each call's state in the call, so every child with the same
    settings shares one RLM (DeepAgent.run writes only these settings to it)."""
    if instructions is None:
        instructions = load_profile(profile).instructions(depth=depth, max_depth=max_depth)
    lm_key = sub_lm if sub_lm is None or isinstance(sub_lm, str) else id(sub_lm)  # the template keeps it alive
    key = (instructions, profile, depth, max_depth, tools, lm_key, id(extensions), tuple(sorted(settings.items())))
    with _templates_lock:
        template = _templates.get(key)
        if template is None:
            template = _templates[key] = SubAgent(profile=profile, depth=depth, max_depth=max_depth, tools=tools,
                                                  sub_lm=sub_lm, instructions=instructions,
                                                  extensions=extensions, **settings)
            while len(_templates) > TEMPLATES_KEPT:
                _templates.popitem(last=False)
        _templates.move_to_end(key)
        return template
