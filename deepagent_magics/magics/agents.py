"""``%%deepagent_agent`` and ``%deepagent_agents``: the user's own sub-agent types, and ``--tools``.

    %%deepagent_agent summarizer --description "summarises one document" --tools fetch_doc --lm cheap_lm
    You summarise one document in five bullet points. ...

The cell body is the type's instructions. A type is kept by name in the configured
`DeepAgentMagics` (``agent_types``) as the flags were written: its tools and its LM are looked up
again in the notebook for each ``%%deepagent`` cell (a redefined function is the one used), and
checked now, so a mistake is one `UsageError` line and nothing is registered.

``--tools f,g`` (here, on ``%%deepagent``, in ``%deepagent_config``) names notebook functions
(`notebook_tools`): each becomes a tool with its signature and docstring (`core.loop.notebook_tools`).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

from ..core.loop.capability import Capability
from ..core.loop.profiles import available_profiles
from ..settings import SETTINGS
from .inputs.flags import one_line, parse_flags, unquote, user_errors
from .configured import AgentMagicsBase

if TYPE_CHECKING:
    from ..core.loop.subagent_types import SubAgentType

OFF = ("off", "none", "")


@dataclass(frozen=True)
class TypeSpec:
    """A type as ``%%deepagent_agent`` was given it: names, looked up in the notebook when used."""

    name: str
    description: str
    instructions: str
    tools: tuple[str, ...] = ()
    lm: str | None = None
    max_iters: int | None = None
    original: str | None = None  # the instructions as defined, once %%deepagent_prompt has replaced them

    def build(self, namespace: dict[str, Any]) -> SubAgentType:
        """The `SubAgentType`, its tools and LM taken from the notebook now (a UsageError if gone)."""
        from ..core.loop.subagent_types import SubAgentType
        from ..core.model.lm import make_lm

        tools = notebook_tools(self.tools, namespace, f"sub-agent type {self.name!r}: --tools")
        try:
            lm = make_lm(self.lm, namespace) if self.lm is not None else None
            return SubAgentType(name=self.name, description=self.description, instructions=self.instructions,
                                tools=tools, lm=lm, max_iters=self.max_iters)
        except (ValueError, TypeError) as exc:
            raise UsageError(f"sub-agent type {self.name!r}: {one_line(exc)}") from None


def tool_names(value: Any) -> tuple[str, ...]:
    """``"f,g"`` (or a list of such) as names; ``off`` for none."""
    items = value if isinstance(value, (list, tuple)) else [value]
    names = [part.strip().strip("'\"").strip() for item in items for part in str(item or "").split(",")]
    names = [name for name in names if name]
    if [name.lower() for name in names] in ([], ["off"], ["none"]):
        return ()
    return tuple(dict.fromkeys(names))


def notebook_tools(names: Any, namespace: dict[str, Any], flag: str = "--tools") -> list:
    """The notebook functions ``names`` as agent tools; a name that is not one is a UsageError line."""
    from ..core.loop.notebook_tools import as_tool, taken_names

    builtin = taken_names()
    out = []
    for name in tool_names(names) if not isinstance(names, tuple) else names:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise UsageError(f"{flag} {name[:60]!r}: not a function name; give names like f,g")
        if name in builtin:
            raise UsageError(f"{flag} {name}: that is a built-in tool's name; rename your function")
        if name not in namespace:
            raise UsageError(f"{flag} {name}: there is no notebook variable {name!r}; define the function first")
        value = namespace[name]
        if not callable(value) or isinstance(value, type):
            raise UsageError(f"{flag} {name}: {name} is a {type(value).__name__}, not a function")
        try:
            out.append(as_tool(value, name))  # named as in the notebook (an alias too: h = helper)
        except ValueError as exc:
            raise UsageError(f"{flag} {name}: {one_line(exc)}") from None
    return out


def notebook_capabilities(names: Any, namespace: dict[str, Any], flag: str = "--extensions") -> list:
    """The notebook's `Capability` objects named ``names``; a name that is not one is a UsageError line."""
    out = []
    for name in tool_names(names) if not isinstance(names, tuple) else names:
        value = namespace.get(name, _MISSING)
        if value is _MISSING:
            raise UsageError(f"{flag} {name[:60]}: there is no notebook variable {name[:60]!r}; make the "
                             "Capability first")
        if not isinstance(value, Capability):
            raise UsageError(f"{flag} {name}: {name} is a {type(value).__name__}, not a deepagent_magics.Capability")
        out.append(value)
    return out


_MISSING = object()


def root_settings(core: Any, profile: str, namespace: dict[str, Any], max_depth: int, tools: list) -> dict:
    """``DeepAgent`` arguments for running (or tuning) the user's type ``profile`` as a root agent:
    its instructions, and its tools after the notebook tools (a type tool wins a name clash). {} for a profile."""
    spec = _types(core).get(profile)
    if spec is None:
        return {}
    kind = spec.build(namespace)
    mine = set(kind.tool_names)
    return {"instructions": kind.instructions_at(0, max_depth),
            "tools": [tool for tool in tools if tool.__name__ not in mine] + list(kind.tools)}


def is_type(core: Any, name: str | None) -> bool:
    return name is not None and name in _types(core)


def set_type_instructions(core: Any, name: str, text: str) -> None:
    """Hand-tuning a type (``%%deepagent_prompt --profile NAME``): its instructions, for root and sub-agents."""
    spec = _types(core)[name]
    _types(core)[name] = replace(spec, instructions=text, original=spec.original or spec.instructions)


def reset_type(core: Any, name: str) -> None:
    spec = _types(core)[name]
    _types(core)[name] = replace(spec, instructions=spec.original or spec.instructions, original=None)


def type_texts(core: Any, name: str) -> tuple[str, str]:
    """(as defined, as now) instructions of the user's type ``name``."""
    spec = _types(core)[name]
    return spec.original or spec.instructions, spec.instructions


def saved_types(core: Any) -> list[dict[str, Any]]:
    """The user's types as plain data, saved beside a tuned program (``%deepagent_prompt --save``)."""
    return [asdict(spec) for spec in _types(core).values()]


def load_types(core: Any, data: Any, namespace: dict[str, Any], flag: str) -> list[str]:
    """Register the types saved by `saved_types`, all or none (each is checked first); their names."""
    if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
        raise UsageError(f"{flag}: the saved sub-agent types are not a list of objects")
    from ..core.loop.subagent_types import check_type_name

    specs = []
    for item in data:
        try:
            spec = TypeSpec(**{**item, "tools": tuple(item.get("tools") or ())})
            check_type_name(spec.name)
        except (TypeError, ValueError) as exc:
            raise UsageError(f"{flag}: a saved sub-agent type is not readable ({one_line(exc)})") from None
        spec.build(namespace)  # its tools and LM must be in this notebook
        specs.append(spec)
    for spec in specs:
        _types(core)[spec.name] = spec
    return [spec.name for spec in specs]


def type_list(core: Any, namespace: dict[str, Any]) -> list[SubAgentType]:
    """Every type the user defined, built now (for ``DeepAgent(subagents=...)``)."""
    return [spec.build(namespace) for spec in getattr(core, "agent_types", {}).values()]


@magics_class
class AgentTypeMagics(AgentMagicsBase):
    """Define, list and remove sub-agent types."""

    @magic_arguments()
    @argument("name", nargs="?", help="the type's name (an identifier; not a packaged profile's)")
    @argument("--description", help="one line: what this sub-agent is for (the parent's prompt lists it)")
    @argument("--tools", help="notebook functions offered to this type only: f,g")
    @argument("--lm", help="its LM: a model id or a notebook variable holding an LM (default: its parent's)")
    @argument("--max-iters", dest="max_iters", type=int, help="most code steps it may take")
    @cell_magic
    def deepagent_agent(self, line: str, cell: str) -> None:
        """Define a sub-agent type: the cell body is its instructions."""
        from ..core.loop.subagent_types import check_type_name
        from ..core.model.lm import make_lm

        args = parse_flags(self.deepagent_agent, line)
        core = self._core()
        if not args.name:
            raise UsageError("give the type a name: %%deepagent_agent NAME --description TEXT")
        try:
            check_type_name(args.name)
        except ValueError as exc:
            raise UsageError(one_line(exc)) from None
        description = unquote(" ".join(str(args.description or "").split()))
        if not description:
            raise UsageError(f"sub-agent type {args.name!r} needs --description TEXT (one line: what it is for)")
        if not cell.strip():
            raise UsageError(f"sub-agent type {args.name!r}: the cell is empty; write its instructions in the cell body")
        with user_errors():  # the bounds of a sub-agent's step limit, as the table has them
            SETTINGS["subagent_max_iters"].check(args.max_iters, "--max-iters")
        lm = unquote(args.lm.strip()) if args.lm else None
        spec = TypeSpec(args.name, description, cell.strip() + "\n", tool_names(args.tools), lm, args.max_iters)
        if lm is not None:
            try:
                make_lm(lm, self.shell.user_ns)
            except (ValueError, TypeError) as exc:
                raise UsageError(f"--lm {lm}: {one_line(exc)}") from None
        built = spec.build(self.shell.user_ns)  # every check; nothing is kept if one fails
        types = _types(core)
        replaced = args.name in types
        types[args.name] = spec
        tools = f"; tools: {', '.join(built.tool_names)}" if built.tools else ""
        print(f"deepagent_agent: {'replaced' if replaced else 'defined'} sub-agent type {args.name!r}{tools} "
              f"(delegate(task, agent={args.name!r}); %deepagent_agents lists them)")

    @magic_arguments()
    @argument("--remove", metavar="NAME", help="remove the sub-agent type NAME")
    @line_magic
    def deepagent_agents(self, line: str) -> None:
        """List the sub-agent types (packaged and yours), or remove one of yours."""
        from ..tuning import programs

        args = parse_flags(self.deepagent_agents, line)
        types = _types(self._core())
        if args.remove is not None:
            name = unquote(args.remove.strip())
            if name in available_profiles():
                raise UsageError(f"{name!r} is a packaged profile; only your own types can be removed")
            if name not in types:
                known = ", ".join(types) or "none defined"
                raise UsageError(f"there is no sub-agent type {name!r} to remove (yours: {known})")
            if self._core().profile == name:
                raise UsageError(f"{name!r} is the configured --profile; set another with %deepagent_config --profile first")
            del types[name]
            programs.drop(name)  # a tuned program of the type goes with it
            print(f"deepagent_agents: removed sub-agent type {name!r}")
            return
        print(describe(types))


def describe(types: dict[str, TypeSpec]) -> str:
    from ..tools.delegation.tools import PACKAGED_DESCRIPTIONS

    rows = [("name", "kind", "tools", "lm", "max-iters", "description")]
    for name in available_profiles():
        rows.append((name, "packaged", "-", "-", "-", PACKAGED_DESCRIPTIONS.get(name, "")))
    for spec in types.values():
        rows.append((spec.name, "yours", ",".join(spec.tools) or "-", spec.lm or "-",
                     str(spec.max_iters or "-"), spec.description))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[-1] for row in rows)


def _types(core: Any) -> dict[str, TypeSpec]:
    if not isinstance(getattr(core, "agent_types", None), dict):
        core.agent_types = {}
    return core.agent_types


__all__ = ["AgentTypeMagics", "TypeSpec", "notebook_capabilities", "notebook_tools", "tool_names", "type_list"]
