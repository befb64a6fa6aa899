"""Sub-agent types: the packaged profiles and the user's own kinds of sub-agent.

A `SubAgentType` is what LangChain's deep agents call a sub-agent: a name the parent
delegates to (``delegate(task, agent="NAME")``), a one-line description the parent's
prompt lists, instructions (the same depth sections as a profile may be used), and,
optionally, tools offered to it and to nobody else, its own LM and its own step limit.

The packaged profiles are types too (delegation describes them: tools/delegation/tools.py); a user
type may not take one of their names. Everything is checked when the type is made (`check_tool`,
`SubAgentType.__post_init__`): a mistake is one `ValueError` line, nothing half made.
"""

from __future__ import annotations

import keyword
from dataclasses import dataclass, field
from typing import Any, Iterable

from ...errors import InvalidValue
from ...settings import SETTINGS, Setting
from ..model.local_server import is_local
from .notebook_tools import as_tool, check_tool
from .profiles import Profile, available_profiles

MAX_DESCRIPTION = 300


def check_type_name(name: Any) -> str:
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name) or len(name) > 64:
        raise InvalidValue(f"sub-agent type name {str(name)[:80]!r} is not an identifier "
                         "(letters, digits and '_', not starting with a digit, at most 64)")
    if name in available_profiles():
        raise InvalidValue(f"sub-agent type name {name!r} is a packaged profile; choose another name "
                         f"(packaged: {', '.join(available_profiles())})")
    return name


@dataclass(frozen=True)
class SubAgentType:
    """A kind of sub-agent the parent may delegate to by name.

    Args:
        name: an identifier, not a packaged profile's name.
        description: one line: what it is for (the parent's prompt lists it).
        instructions: its prompt (a profile's depth sections may be used).
        tools: documented callables offered to this sub-agent only; they run on the host.
        lm: its loop's LM (an LM object or a model id); default: its parent's.
        max_iters: the most code steps it may take; default: the parent's ``subagent_max_iters``.
    """

    name: str
    description: str
    instructions: str
    tools: tuple = field(default=())
    lm: Any = None
    max_iters: int | None = None

    def __post_init__(self) -> None:
        check_type_name(self.name)
        if not isinstance(self.description, str) or not " ".join(self.description.split()):
            raise InvalidValue(f"sub-agent type {self.name!r} needs a description (one line: what it is for)")
        if len(self.description) > MAX_DESCRIPTION:
            raise InvalidValue(f"sub-agent type {self.name!r}: the description is {len(self.description)} "
                             f"characters; keep it to one line of at most {MAX_DESCRIPTION}")
        if not isinstance(self.instructions, str) or not self.instructions.strip():
            raise InvalidValue(f"sub-agent type {self.name!r} needs instructions (its prompt)")
        if isinstance(self.tools, (str, bytes)) or not isinstance(self.tools, Iterable):
            raise InvalidValue(f"sub-agent type {self.name!r}: tools must be a list of functions")
        tools = tuple(self.tools)
        names = [check_tool(tool, f"sub-agent type {self.name!r}: tool").__name__ for tool in tools]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise InvalidValue(f"sub-agent type {self.name!r}: two tools named {twice[0]!r}")
        if self.max_iters is not None and (isinstance(self.max_iters, bool) or not isinstance(self.max_iters, int)
                                           or not _within(SETTINGS["subagent_max_iters"], self.max_iters)):
            raise InvalidValue(f"sub-agent type {self.name!r}: max_iters must be a positive integer, "
                             f"got {self.max_iters!r}")
        if self.lm is not None and not isinstance(self.lm, str) and not hasattr(self.lm, "forward"):
            raise InvalidValue(f"sub-agent type {self.name!r}: lm must be an LM or a model id, "
                             f"not {type(self.lm).__name__}")
        if isinstance(self.lm, str) and "/" not in self.lm.strip("/") and not is_local(self.lm):
            raise InvalidValue(f"sub-agent type {self.name!r}: lm {self.lm[:80]!r} is not a model id like "
                             "'openai/gpt-4o-mini'")
        object.__setattr__(self, "description", " ".join(self.description.split()))
        object.__setattr__(self, "tools", tuple(as_tool(tool) for tool in tools))  # awaited, errors as text

    def instructions_at(self, depth: int, max_depth: int) -> str:
        return Profile(self.name, self.instructions).instructions(depth=depth, max_depth=max_depth)

    @property
    def tool_names(self) -> list[str]:
        return [tool.__name__ for tool in self.tools]


def _within(setting: Setting, value: Any) -> bool:
    """Whether ``value`` is within ``setting``'s bounds (the table's: a type's step limit is a sub-agent's)."""
    try:
        setting.check(value)
    except InvalidValue:
        return False
    return True


def check_types(types: Iterable[Any]) -> dict[str, SubAgentType]:
    """``types`` by name; a non-type or a name given twice is a `ValueError`."""
    if isinstance(types, (str, bytes, SubAgentType)) or not isinstance(types, Iterable):
        raise InvalidValue("subagents must be a list of SubAgentType")
    out: dict[str, SubAgentType] = {}
    for item in types:
        if not isinstance(item, SubAgentType):
            raise InvalidValue(f"subagents: {type(item).__name__} is not a SubAgentType")
        if item.name in out:
            raise InvalidValue(f"subagents: two types named {item.name!r}")
        out[item.name] = item
    return out


def known_names(types: dict[str, SubAgentType]) -> list[str]:
    return available_profiles() + list(types)
