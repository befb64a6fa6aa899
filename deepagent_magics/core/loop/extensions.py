"""What an agent is given by the rooms above the core: its capabilities, as one `Extensions` object.

The core knows the agent loop and the run, not what the agent works with. Each thing an agent can
do is a `core.loop.capability.Capability` (its tools and their lines in the prompt, its layers
around model calls, its settings and events, its run hooks and prompt text); an agent gets them as
one `Extensions`, passed as ``DeepAgent(extensions=...)``:

- ``DeepAgent(extensions=[mine, ...])``, a list: the standard capabilities, then these;
- ``DeepAgent(extensions=Extensions(a, b))``, an object: exactly these;
- without ``extensions=``: the default set, which the package makes once, on first use, with the
  one function it names here (``deepagent_magics.standard.standard_extensions``, set by
  ``use_default``). Importing a room registers nothing.

So ``core`` imports none of ``tools``, ``interpreters``, ``records``: they import it, each room
builds its capability, and the package lists them in one place (``standard.py``). The older way to
build the object, one callable at a time (``add_tools``, ``add_run_hook``, ...), still works: each
call adds a capability holding that one callable.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Iterable

from ...errors import DeepAgentError, InvalidType
from ..run.run import Run
from .capability import Capability, ToolLine

DeepAgent = Any  # core.loop.agent.DeepAgent, which imports this module (no cycle, not even for typing)
ToolSet = Callable[[], list[Callable[..., Any]]]
InterpreterMaker = Callable[..., Callable[[], Any]]  # (agent, session, namespace, shell) -> factory
RunHook = Callable[[DeepAgent, Run, dict[str, Any]], None]  # (agent, run, {"lm", "sub_lm"})
ContextProvider = Callable[[DeepAgent, str, Any, Any], str]  # (agent, task, namespace, workspace root) -> text
InstructionsProvider = Callable[[DeepAgent, Any], str]  # (agent, workspace root) -> text for the prompt
ServerTools = Callable[..., list[Callable[..., Any]]]  # (specs, taken=names) -> tools


class MissingCapability(DeepAgentError, RuntimeError):
    """An agent was asked for something none of its capabilities gives."""


class NoInterpreter(MissingCapability):
    """An agent whose capabilities name no root interpreter was asked to run."""


class NoToolServers(MissingCapability):
    """An agent whose capabilities take in no tool servers was given some (``mcp_servers=``)."""


class _ToolSet(Capability):
    """The tools of one tool set, asked for each time (`Extensions.add_tools`)."""

    def __init__(self, tool_set: ToolSet):
        super().__init__(getattr(tool_set, "__name__", ""))
        self.tool_set = tool_set

    def offered(self) -> list[Callable[..., Any]]:
        return list(self.tool_set())


class Extensions:
    """An agent's capabilities, in the order the prompt lists their tools (see the module docstring)."""

    def __init__(self, *capabilities: Capability) -> None:
        self.capabilities: list[Capability] = []
        self.add(*capabilities)

    # ------------------------------------------------------------ choosing
    def add(self, *capabilities: Capability) -> "Extensions":
        """Give the agent these capabilities too (each once), after the ones it has."""
        for capability in capabilities:
            if not isinstance(capability, Capability):
                raise InvalidType(f"extensions: {type(capability).__name__} is not a Capability "
                                  "(deepagent_magics.Capability)")
            if capability not in self.capabilities:
                self.capabilities.append(capability)
        return self

    def remove(self, capability: Capability) -> "Extensions":
        if capability in self.capabilities:
            self.capabilities.remove(capability)
        return self

    def copy(self) -> "Extensions":
        return Extensions(*self.capabilities)

    def __iter__(self):
        return iter(list(self.capabilities))

    # ------------------------------------------------------------ one callable at a time (the older way)
    def add_tools(self, tool_set: ToolSet) -> "Extensions":
        """Offer the tools ``tool_set()`` returns (once per set)."""
        if all(getattr(each, "tool_set", None) is not tool_set for each in self.capabilities):
            self.add(_ToolSet(tool_set))
        return self

    def use_root_interpreter(self, maker: InterpreterMaker) -> "Extensions":
        self.capabilities = [each for each in self.capabilities if each.root_interpreter is None]
        return self.add(Capability(root_interpreter=maker))

    def add_run_hook(self, hook: RunHook) -> "Extensions":
        """Call ``hook(agent, run, lms)`` as each run starts (before its first event)."""
        return self._once("on_run", hook)

    def add_context_provider(self, provider: ContextProvider) -> "Extensions":
        """Add ``provider(agent, task, namespace, root)``'s text (if any) to each run's ``context``."""
        return self._once("context", provider)

    def add_instructions_provider(self, provider: InstructionsProvider) -> "Extensions":
        """Add ``provider(agent, root)``'s text (if any) to each request of a run, after its inputs."""
        return self._once("instructions", provider)

    def use_server_tools(self, maker: ServerTools) -> "Extensions":
        """``maker(specs, taken=names)`` turns tool-server specs (MCP) into tools."""
        self.capabilities = [each for each in self.capabilities if each.server_tools is None]
        return self.add(Capability(server_tools=maker))

    def _once(self, hook: str, function: Callable[..., Any]) -> "Extensions":
        if all(vars(each).get(hook) is not function for each in self.capabilities):
            self.add(Capability(**{hook: function}))
        return self

    @property
    def run_hooks(self) -> list[RunHook]:
        """Each capability's ``on_run``, in order (read only: remove a capability to take one away)."""
        return [each.on_run for each in self.capabilities if _has(each, "on_run")]

    # ------------------------------------------------------------ using
    def builtin_tools(self) -> list[Callable[..., Any]]:
        return [tool for each in self.capabilities for tool in each.offered()]

    def tool_lines(self) -> dict[str, ToolLine]:
        """How the prompt shows each tool the capabilities give, by name."""
        return {name: line for each in self.capabilities for name, line in each.lines.items()}

    def note(self, place: str) -> str:
        """The capabilities' notes for one place the core keeps for them (`Capability.notes`), joined."""
        return "; ".join(each.notes[place] for each in self.capabilities if each.notes.get(place))

    def layers(self) -> list[Any]:
        """The capabilities' layers around model calls, in order (`core.loop.pipeline`)."""
        return [layer for each in self.capabilities for layer in each.layers]

    def start_run(self, agent: DeepAgent, run: Run, lms: dict[str, Any]) -> None:
        """Every capability's ``on_run``, in order (a hook that raises ends the run: it may be its record)."""
        for hook in self.run_hooks:
            hook(agent, run, lms)

    def root_interpreter(self, agent: DeepAgent, session: Any = None, namespace: dict | None = None,
                         shell: Any = None) -> Callable[[], Any]:
        maker = next((each.root_interpreter for each in self.capabilities if each.root_interpreter), None)
        if maker is None:
            raise NoInterpreter("this agent's extensions name no root interpreter: build it with "
                                "extensions=deepagent_magics.standard_extensions(), or your own")
        return maker(agent, session, namespace, shell)

    def extra_context(self, agent: DeepAgent, task: str, namespace: Any, root: Any, context: str) -> str:
        """``context`` followed by every capability's context text; one that fails adds nothing."""
        providers = [each.context for each in self.capabilities if _has(each, "context")]
        return _joined([context] if context else [], providers, agent, task, namespace, root)

    def extra_instructions(self, agent: DeepAgent, root: Any) -> str:
        """Every capability's text for this run's prompt; one that fails adds nothing."""
        providers = [each.instructions for each in self.capabilities if _has(each, "instructions")]
        return _joined([], providers, agent, root)

    def around_tool(self, session: Any, name: str, call: Callable[..., Any]) -> Callable[..., Any]:
        """Tool ``name`` as ``session``'s code calls it, through every capability's ``around_tool`` (the first
        outermost); ``call`` itself when none wraps it."""
        for each in reversed([each for each in self.capabilities if _has(each, "around_tool")]):
            call = each.around_tool(session, name, call)
        return call

    def server_tools(self, specs: list[str], taken: Iterable[str] = frozenset()) -> list[Callable[..., Any]]:
        if not specs:
            return []
        maker = next((each.server_tools for each in self.capabilities if each.server_tools), None)
        if maker is None:
            raise NoToolServers("this agent's extensions take in no tool servers (MCP): build it with "
                                "extensions=deepagent_magics.standard_extensions()")
        return maker(specs, taken=taken)


def _has(capability: Capability, hook: str) -> bool:
    """Whether ``capability`` does something for ``hook`` (given as a keyword, or a subclass's own method)."""
    return hook in vars(capability) or getattr(type(capability), hook) is not getattr(Capability, hook)


def _joined(parts: list[str], providers: list[Callable[..., str]], *args: Any) -> str:
    for provider in providers:
        try:
            text = provider(*args)
        except Exception:  # noqa: BLE001 - a provider is the user's or a room's code: a broken one never ends a run
            continue
        if text:
            parts.append(text)
    return "\n\n".join(parts)


def given(extensions: Any) -> "Extensions":
    """What ``DeepAgent(extensions=...)`` means: None, the default set; a list, the default set and those; an
    `Extensions`, exactly that."""
    if extensions is None:
        return default()
    if isinstance(extensions, Extensions):
        return extensions
    if isinstance(extensions, Capability):
        extensions = [extensions]
    if isinstance(extensions, (list, tuple)):
        return default().copy().add(*extensions)
    raise InvalidType(f"extensions must be a list of Capability objects or an Extensions, "
                      f"not {type(extensions).__name__}")


_default_maker: Callable[[], Extensions] | None = None
_default: Extensions | None = None
_lock = threading.Lock()


def use_default(maker: Callable[[], Extensions]) -> None:
    """Name the function that makes the default extensions (the package's ``standard_extensions``)."""
    global _default_maker, _default
    with _lock:
        if maker is not _default_maker:
            _default_maker, _default = maker, None


def default() -> Extensions:
    """The extensions an agent built without ``extensions=`` gets: made once, on first use."""
    global _default
    with _lock:
        if _default is None:
            _default = _default_maker() if _default_maker is not None else Extensions()
        return _default
