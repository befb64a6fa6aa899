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
from ...settings import AGENT, at
from ...settings import inherited as taken_from
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

    It takes from its parent what the settings table says a sub-agent takes (``settings.inherited``: each
    setting's ``subagent``), so a new setting is inherited, or not, where it is declared. A sub-agent type
    (``delegate(agent="NAME")``) gives its instructions, its LM, its step limit and its tools, which only it
    gets: its own sub-agents inherit its parent's tools, not those."""
    types = getattr(parent, "subagents", None) or {}
    name = kind_name(parent, child.spec)
    kind = types.get(name)
    inherited = tuple(tool for tool in parent.extra_tools if tool not in getattr(parent, "type_tools", ()))
    own = tuple(kind.tools) if kind is not None else ()
    mine = {tool.__name__ for tool in own}
    depth = parent.depth + 1
    settings = taken_from(parent)
    lm, sub_lm = settings.pop("lm", None), settings.pop("sub_lm", None)
    if kind is not None and kind.max_iters:
        settings["max_iters"] = kind.max_iters
    agent = copy.copy(_template(
        profile=name,
        depth=depth,
        tools=() if name == REVIEWER_PROFILE else tuple(tool for tool in inherited if tool.__name__ not in mine) + own,
        sub_lm=sub_lm,
        instructions=kind.instructions_at(depth, parent.max_depth) if kind is not None else None,
        extensions=parent.extensions,
        **settings,
    ))
    agent.tree, agent.child, agent.pool = tree, child, tree.pool
    agent.subagents, agent.type_tools = types, own
    agent.lm = kind.lm if kind is not None and kind.lm is not None else (lm if lm is not None else dspy.settings.lm)
    agent.workspace = Path(session.workspace.root)  # its own: the run's (an evaluation's task has one of its own)
    agent.retry_policy = parent.retry_policy  # not a setting: how the parent's runs retry, kept for the tree
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
    # Every agent setting the template holds, given or its default: a setting the table gained (or whose
    # default changed) since a template was built makes another one, never a template without it.
    values = {s.name: s.to_agent(s.default) for s in at(AGENT)} | settings
    key = (instructions, profile, depth, max_depth, tools, lm_key, id(extensions),
           tuple(sorted((name, _frozen(value)) for name, value in values.items())))
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


def _frozen(value: Any) -> Any:
    """A setting's value as part of a template's key (a list or dict setting, hashable)."""
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(item) for item in value)
    if isinstance(value, dict):
        return tuple(sorted((key, _frozen(item)) for key, item in value.items()))
    return value
