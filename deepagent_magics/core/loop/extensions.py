"""Where the rooms above the core plug into an agent: an `Extensions` object, handed to each agent.

The core knows the agent loop and the run, not what the agent works with. What an agent gets from
the rooms above it is one `Extensions` object (in the spirit of smolagents' per-agent callback
registry), passed as ``DeepAgent(extensions=...)``:

- tool sets (``add_tools``): the todo and file tools, delegation, memory, history, skills;
- the interpreter of a root agent (``use_root_interpreter``): the live namespace;
- run hooks (``add_run_hook``): called when a run starts, e.g. to keep its record;
- context providers (``add_context_provider``): text added to a run's ``context`` input, e.g. the
  memories that match the task;
- instruction providers (``add_instructions_provider``): text added to a run's action prompt, after
  the instructions and the tools, e.g. the sub-agent types and skills the agent may use;
- where ``DeepAgent(mcp_servers=...)`` gets its tools (``use_server_tools``): MCP tools in.

An agent built without ``extensions=`` takes the default set, which the package makes once, on first
use, with the one function it names here (``deepagent_magics.standard.standard_extensions``, set by
``use_default``). Importing a room registers nothing. So ``core`` imports none of ``tools``,
``interpreters``, ``records``: they import it, and the package wires them in one place.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

from ...errors import DeepAgentError
from ..run.run import Run

DeepAgent = Any  # core.loop.agent.DeepAgent, which imports this module (no cycle, not even for typing)
ToolSet = Callable[[], list[Callable[..., Any]]]
InterpreterMaker = Callable[..., Callable[[], Any]]  # (agent, session, namespace, shell) -> factory
RunHook = Callable[[DeepAgent, Run, dict[str, Any]], None]  # (agent, run, {"lm", "sub_lm"})
ContextProvider = Callable[[DeepAgent, str, Any, Any], str]  # (agent, task, namespace, workspace root) -> text
InstructionsProvider = Callable[[DeepAgent, Any], str]  # (agent, workspace root) -> text for the prompt
ServerTools = Callable[..., list[Callable[..., Any]]]  # (specs, taken=names) -> tools


class NoInterpreter(DeepAgentError, RuntimeError):
    """An agent whose extensions name no root interpreter was asked to run."""


class Extensions:
    """What the rooms above the core give one agent (see the module docstring)."""

    def __init__(self) -> None:
        self.tool_sets: list[ToolSet] = []
        self.root_interpreter_maker: InterpreterMaker | None = None
        self.run_hooks: list[RunHook] = []
        self.context_providers: list[ContextProvider] = []
        self.instruction_providers: list[InstructionsProvider] = []
        self.server_tools_maker: ServerTools | None = None

    # ------------------------------------------------------------ registering
    def add_tools(self, tool_set: ToolSet) -> "Extensions":
        """Offer the tools ``tool_set()`` returns (once per set)."""
        if tool_set not in self.tool_sets:
            self.tool_sets.append(tool_set)
        return self

    def use_root_interpreter(self, maker: InterpreterMaker) -> "Extensions":
        self.root_interpreter_maker = maker
        return self

    def add_run_hook(self, hook: RunHook) -> "Extensions":
        """Call ``hook(agent, run, lms)`` as each run starts (before its first event)."""
        if hook not in self.run_hooks:
            self.run_hooks.append(hook)
        return self

    def add_context_provider(self, provider: ContextProvider) -> "Extensions":
        """Add ``provider(agent, task, namespace, root)``'s text (if any) to each run's ``context``."""
        if provider not in self.context_providers:
            self.context_providers.append(provider)
        return self

    def add_instructions_provider(self, provider: InstructionsProvider) -> "Extensions":
        """Add ``provider(agent, root)``'s text (if any) to each run's action prompt."""
        if provider not in self.instruction_providers:
            self.instruction_providers.append(provider)
        return self

    def use_server_tools(self, maker: ServerTools) -> "Extensions":
        """``maker(specs, taken=names)`` turns tool-server specs (MCP) into tools."""
        self.server_tools_maker = maker
        return self

    # ------------------------------------------------------------ using
    def builtin_tools(self) -> list[Callable[..., Any]]:
        return [tool for tool_set in self.tool_sets for tool in tool_set()]

    def root_interpreter(self, agent: DeepAgent, session: Any = None, namespace: dict | None = None,
                         shell: Any = None) -> Callable[[], Any]:
        if self.root_interpreter_maker is None:
            raise NoInterpreter("this agent's extensions name no root interpreter: build it with "
                                "extensions=deepagent_magics.standard_extensions(), or your own")
        return self.root_interpreter_maker(agent, session, namespace, shell)

    def extra_context(self, agent: DeepAgent, task: str, namespace: Any, root: Any, context: str) -> str:
        """``context`` followed by every provider's text; a provider that fails adds nothing."""
        return _joined([context] if context else [], self.context_providers, agent, task, namespace, root)

    def extra_instructions(self, agent: DeepAgent, root: Any) -> str:
        """Every instruction provider's text for this run; a provider that fails adds nothing."""
        return _joined([], self.instruction_providers, agent, root)

    def server_tools(self, specs: list[str], taken: set[str] = frozenset()) -> list[Callable[..., Any]]:
        if not specs:
            return []
        if self.server_tools_maker is None:
            raise NoInterpreter("this agent's extensions have no tool-server support (MCP): build it with "
                                "extensions=deepagent_magics.standard_extensions()")
        return self.server_tools_maker(specs, taken=taken)


def _joined(parts: list[str], providers: list[Callable[..., str]], *args: Any) -> str:
    for provider in list(providers):
        try:
            text = provider(*args)
        except Exception:  # a broken provider never ends a run
            continue
        if text:
            parts.append(text)
    return "\n\n".join(parts)


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
