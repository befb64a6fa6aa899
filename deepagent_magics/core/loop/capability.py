"""A capability: one thing an agent can do, as one object the agent is given.

Todos and files, delegation, memory, skills, MCP tools in, the run record, the live namespace as
the root's REPL, a user's own: each is one `Capability` carrying everything of it, in the spirit of
deepagents' ``AgentMiddleware`` (tools, prompt text and model-call hooks in one object):

- ``tools``: the callables the agent may call (typed, with docstrings: RLM offers them);
- ``lines``: how the prompt's tool list shows each of them, by name (`ToolLine`: where its line
  goes, the tool whose line it shares, the tool it is of no use without, whether its optional
  parameters are left to ``help``, whether the list leaves it to the capability's own text); a tool
  without one gets its own line after the core's;
- ``layers``: what it adds around every model call, a step's and an ``llm_query``'s alike
  (`core.loop.pipeline`: each a ``Layer``, at the place the pipeline keeps for capabilities);
- ``notes``: short texts for places the core keeps for them, by the place's name (``"compacted"``:
  where the steps a compacted history summarises can still be read, `core.model.compaction`);
- ``settings``: the names of ``settings.py`` it reads from the agent: the table says which are whose
  (a `Setting`'s ``owner`` is a capability's ``name``), so a new setting is named in one file;
- ``events``: the event kinds it emits (``core/run/event_kinds.py`` declares the package's);
- ``on_run(agent, run, lms)``: called as each root or sub-agent run starts, before its first
  event (the run record subscribes here);
- ``context(agent, task, namespace, root)``: text added to a run's ``context`` input (memories);
- ``instructions(agent, root)``: text each request of a run shows after its inputs, what the run has (the
  sub-agent types, the skills);
- ``around_tool(session, name, call)``: each tool as the run's code calls it, wrapped (or ``call`` itself:
  asked once per tool and run, so a capability that leaves it as it is costs nothing per call; tracing);
- ``root_interpreter(agent, session, namespace, shell)``: the REPL factory of a root agent;
- ``server_tools(specs, taken=names)``: tools from tool servers (``DeepAgent(mcp_servers=...)``).

Build one with keywords (``Capability("shout", tools=[shout])``) or subclass it and override what it
does (a hook is a method; a value, a class attribute). An agent gets its capabilities as one
`core.loop.extensions.Extensions`; the core knows this protocol, never a tool's name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from ...settings import SETTINGS

UNPLACED = 50.0  # where a tool without a line goes, in the order offered: after the often used ones, before the rare


@dataclass(frozen=True)
class ToolLine:
    """How the prompt's tool list shows one tool (`core.loop.instructions`).

    Args:
        order: where its line goes, lower first; tools of equal order keep the order they are offered in.
            The core's ``llm_query`` is at 30, the standard tools used often below 50, those used rarely
            above; a tool with no line of its own is at `UNPLACED` (50).
        beside: the tool on whose line it is shown (``read_todos`` beside ``write_todos``); alone, when that
            tool is not offered, it gets a line of its own after all the others.
        needs: the tool it is of no use without: not offered when that one is not.
        brief: its optional parameters are left to ``help(name)`` (``remember(text, ...)``).
        listed: False when the tool list leaves it out because its capability says it where it is of use
            (``read_skill`` with the skills a run has; ``history`` in the head of a compacted history).
    """

    order: float = UNPLACED
    beside: str = ""
    needs: str = ""
    brief: bool = False
    listed: bool = True


class Capability:
    """One thing an agent can do: its tools, their lines in the prompt, its layers, settings and events, and the
    hooks it needs (see the module docstring). Every part is optional."""

    name: str = ""
    tools: Sequence[Callable[..., Any]] = ()
    lines: Mapping[str, ToolLine] = {}
    layers: Sequence[Any] = ()  # core.loop.pipeline.Layer
    notes: Mapping[str, str] = {}
    events: Sequence[str] = ()
    root_interpreter: Callable[..., Callable[[], Any]] | None = None  # (agent, session, namespace, shell) -> factory
    server_tools: Callable[..., list[Callable[..., Any]]] | None = None  # (specs, taken=names) -> tools

    def __init__(self, name: str | None = None, *, tools: Sequence[Callable[..., Any]] | None = None,
                 lines: Mapping[str, ToolLine] | None = None, layers: Sequence[Any] | None = None,
                 notes: Mapping[str, str] | None = None,
                 settings: Sequence[str] | None = None, events: Sequence[str] | None = None,
                 on_run: Callable[..., None] | None = None, context: Callable[..., str] | None = None,
                 instructions: Callable[..., str] | None = None,
                 root_interpreter: Callable[..., Callable[[], Any]] | None = None,
                 server_tools: Callable[..., list[Callable[..., Any]]] | None = None):
        given = dict(name=name, tools=tools, lines=lines, layers=layers, notes=notes, settings=settings, events=events,
                     on_run=on_run, context=context, instructions=instructions, root_interpreter=root_interpreter,
                     server_tools=server_tools)
        for key, value in given.items():
            if value is not None:  # a keyword given replaces the class's value (or method) for this object
                key = "_settings" if key == "settings" else key
                setattr(self, key, tuple(value) if key in ("tools", "layers", "_settings", "events") else value)

    # ------------------------------------------------------------ hooks (a subclass overrides what it needs)
    def on_run(self, agent: Any, run: Any, lms: dict[str, Any]) -> None:
        """As each run starts, before its first event: ``lms`` is ``{"lm", "sub_lm"}``."""

    def context(self, agent: Any, task: str, namespace: Any, root: Any) -> str:
        """Text for the run's ``context`` input ("" for none)."""
        return ""

    def instructions(self, agent: Any, root: Any) -> str:
        """Text each request of the run shows after its inputs: what the run has ("" for none)."""
        return ""

    def around_tool(self, session: Any, name: str, call: Callable[..., Any]) -> Callable[..., Any]:
        """Tool ``name`` as ``session``'s code calls it: ``call`` itself, or a wrapper that calls it."""
        return call

    @property
    def settings(self) -> tuple[str, ...]:
        """The settings it reads: those the table gives it (``owner``), or the names it was built with."""
        given = vars(self).get("_settings")
        return given if given is not None else tuple(s.name for s in SETTINGS.values() if s.owner == self.name)

    def offered(self) -> list[Callable[..., Any]]:
        """The tools, as a list (a subclass may compute ``tools`` as a property)."""
        return list(self.tools)

    def __repr__(self) -> str:
        return f"Capability({self.name!r})" if self.name else f"<{type(self).__name__}>"
