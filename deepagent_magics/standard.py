"""The standard capabilities: what every `DeepAgent` gets unless it is given others.

This is the one place the package lists its rooms' capabilities for the core
(``core.loop.capability``; each is built in its own room): the todo and file tools, delegation,
the live namespace as the root agent's REPL, the run record and event log, memory, the run's
history, skills, scrubbing of library logs while a run works, MCP tools in, and OpenTelemetry traces (when
the user configured a tracer provider); and threads read
back from run records after a kernel restart. Nothing is registered by importing a room.
"""

from __future__ import annotations

from .core.loop.extensions import Extensions
from .core.run import conversations
from .interpreters import ROOT_INTERPRETER
from .records import RECORDS
from .records.conversations import load_thread
from .records.log_scrubbing import LOG_SCRUBBING
from .tools import TODOS_AND_FILES
from .tools.delegation import DELEGATION
from .tools.history import HISTORY
from .tools.mcp_servers import MCP_TOOLS
from .tools.memory import MEMORY
from .tools.skills import SKILLS
from .tracing import TRACING

# In the order they are offered (each tool's place in the prompt is its capability's `ToolLine`).
STANDARD = (TODOS_AND_FILES, DELEGATION, ROOT_INTERPRETER, RECORDS, MEMORY, HISTORY, SKILLS, LOG_SCRUBBING, MCP_TOOLS,
            TRACING)


def standard_extensions() -> Extensions:
    """A fresh `Extensions` with every standard capability."""
    conversations.add_loader(load_thread)  # --continue after a kernel restart: threads from the run records
    return Extensions(*STANDARD)
