"""Where the rooms above the core plug into it.

The core knows the agent loop and the run, not what the agent works with. The
package's ``__init__`` registers, once, what every `DeepAgent` gets by default:

- tool sets (``add_tools``): the todo and file tools, delegation;
- the interpreter of a root agent (``use_root_interpreter``): the live namespace;
- run hooks (``add_run_hook``): called when a run starts, e.g. to keep its record;
- context providers (``add_context_provider``): text added to a run's ``context`` input,
  e.g. the memories that match the task.
- where ``DeepAgent(mcp_servers=...)`` gets its tools (``use_server_tools``): MCP tools in.
- instruction providers (``add_instructions_provider``): text added to a run's action prompt,
  after the instructions and the tools, e.g. the sub-agent types and skills the agent may use (the
  ``context`` is shown whole up to a budget; what belongs to the instructions goes here).

So ``core`` imports none of ``tools``, ``interpreters``, ``records``: they import it.
"""

from __future__ import annotations

from typing import Any, Callable

from ..run.run import Run

DeepAgent = Any  # core.loop.agent.DeepAgent, which imports this module (no cycle, not even for typing)

ToolSet = Callable[[], list[Callable[..., Any]]]
InterpreterMaker = Callable[..., Callable[[], Any]]  # (agent, session, namespace, shell) -> factory
RunHook = Callable[[DeepAgent, Run, dict[str, Any]], None]  # (agent, run, {"lm", "sub_lm"})

_tool_sets: list[ToolSet] = []
_root_interpreter: InterpreterMaker | None = None
_run_hooks: list[RunHook] = []
ContextProvider = Callable[[DeepAgent, str, Any, Any], str]  # (agent, task, namespace, workspace root) -> text
_context_providers: list[ContextProvider] = []
_server_tools: Callable[..., list[Callable[..., Any]]] | None = None


def add_tools(tool_set: ToolSet) -> None:
    """Offer the tools ``tool_set()`` returns to every agent (once per set)."""
    if tool_set not in _tool_sets:
        _tool_sets.append(tool_set)


def builtin_tools() -> list[Callable[..., Any]]:
    return [tool for tool_set in _tool_sets for tool in tool_set()]


def use_root_interpreter(maker: InterpreterMaker) -> None:
    global _root_interpreter
    _root_interpreter = maker


def root_interpreter(agent: DeepAgent, session: Any = None, namespace: dict | None = None,
                     shell: Any = None) -> Callable[[], Any]:
    if _root_interpreter is None:
        raise RuntimeError("no root interpreter registered: import deepagent_magics, not only its core")
    return _root_interpreter(agent, session, namespace, shell)


def add_run_hook(hook: RunHook) -> None:
    """Call ``hook(agent, run, lms)`` as each run starts (before its first event)."""
    if hook not in _run_hooks:
        _run_hooks.append(hook)


def run_hooks() -> list[RunHook]:
    return list(_run_hooks)


def add_context_provider(provider: ContextProvider) -> None:
    """Add ``provider(agent, task, namespace, root)``'s text (if any) to each run's ``context``."""
    if provider not in _context_providers:
        _context_providers.append(provider)


def extra_context(agent: DeepAgent, task: str, namespace: Any, root: Any, context: str) -> str:
    """``context`` followed by every provider's text; a provider that fails adds nothing."""
    parts = [context] if context else []
    for provider in list(_context_providers):
        try:
            text = provider(agent, task, namespace, root)
        except Exception:  # a broken provider never ends a run
            continue
        if text:
            parts.append(text)
    return "\n\n".join(parts)
InstructionsProvider = Callable[[DeepAgent, Any], str]  # (agent, workspace root) -> text for the prompt
_instruction_providers: list[InstructionsProvider] = []


def add_instructions_provider(provider: InstructionsProvider) -> None:
    """Add ``provider(agent, root)``'s text (if any) to each run's action prompt (its REPL guidance)."""
    if provider not in _instruction_providers:
        _instruction_providers.append(provider)


def extra_instructions(agent: DeepAgent, root: Any) -> str:
    """Every instruction provider's text for this run; a provider that fails adds nothing."""
    parts = []
    for provider in list(_instruction_providers):
        try:
            text = provider(agent, root)
        except Exception:  # a broken provider never ends a run
            continue
        if text:
            parts.append(text)
    return "\n\n".join(parts)


def use_server_tools(maker: Callable[..., list[Callable[..., Any]]]) -> None:
    """``maker(specs, taken=names)`` turns tool-server specs (MCP) into tools."""
    global _server_tools
    _server_tools = maker


def server_tools(specs: list[str], taken: set[str] = frozenset()) -> list[Callable[..., Any]]:
    if not specs:
        return []
    if _server_tools is None:
        raise RuntimeError("no tool-server support registered: import deepagent_magics, not only its core")
    return _server_tools(specs, taken=taken)
