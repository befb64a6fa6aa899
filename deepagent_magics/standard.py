"""The standard extensions: what every `DeepAgent` gets unless it is given others.

This is the one place the package wires its rooms into the core (``core.loop.extensions``): the
tools (todos and files, delegation, memory, history, skills), the live namespace as the root
agent's REPL, the run record and event log as run hooks, scrubbing of library logs while a run
works, memories and sub-agent types and skills offered to the model, MCP tools in, and threads
read back from run records after a kernel restart. Nothing is registered by importing a room.
"""

from __future__ import annotations

from .core.loop.extensions import Extensions
from .core.run import conversations
from .interpreters.shell import ShellInterpreterFactory
from .records import log_root_run, log_scrubbing, record_root_run
from .records.conversations import load_thread
from .tools import base_tools
from .tools.delegation import delegation_tools, offer_subagent_types
from .tools.history import history_tools
from .tools.mcp_servers import mcp_tools
from .tools.memory import memory_tools, offer_memories
from .tools.skills import offer_skills, skill_tools


def standard_extensions() -> Extensions:
    """A fresh `Extensions` with everything the package offers, in the order the prompt lists it."""
    conversations.add_loader(load_thread)  # --continue after a kernel restart: threads from the run records
    return (Extensions()
            .add_tools(base_tools)  # write_todos, read_todos, ls, read_file, write_file, edit_file, glob, grep
            .add_tools(delegation_tools)  # delegate, delegate_batched, review
            .use_root_interpreter(ShellInterpreterFactory.for_agent)  # the live namespace
            .add_run_hook(record_root_run)  # <workspace>/.deepagent/runs/<id>.json
            .add_tools(memory_tools)  # remember, recall
            .add_tools(history_tools)  # history()
            .add_context_provider(offer_memories)  # the memories that match the task
            .add_instructions_provider(offer_subagent_types)  # the user's sub-agent types, listed
            .add_tools(skill_tools)  # list_skills, read_skill
            .add_instructions_provider(offer_skills)  # each skill's name and description, bounded
            .add_run_hook(log_root_run)  # <id>.events.jsonl
            .add_run_hook(log_scrubbing.scrub_library_logs)  # DSPy's, LiteLLM's, httpx's logs, while a run works
            .use_server_tools(mcp_tools))  # DeepAgent(mcp_servers=...)
