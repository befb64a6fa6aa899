"""deepagent-magics: a deep agent whose REPL is your live notebook.

    %load_ext deepagent_magics

    %%deepagent --out summary
    Find the three regions whose sales fell most in Q3 and write report.md.

Without IPython, use `DeepAgent` directly::

    from deepagent_magics import DeepAgent
    run = DeepAgent(lm="openai/gpt-4o-mini").run("...", namespace={"sales": sales})

The package is a house of rooms (``docs/architecture.md``): ``core`` (the agent loop and
its run), ``interpreters``, ``tools``, ``display``, ``records``, ``magics``, ``tuning``.
This file wires them together: the rooms above the core plug into it here.

It also keeps a run offline unless the user asks otherwise: LiteLLM (when it is imported) and
DSPy's model metadata (on first use) fetch a price list from GitHub, and offline they warn and
retry for about 8 s before each first request. ``LITELLM_LOCAL_MODEL_COST_MAP=True``, set here
before either can look, makes both use the list bundled with them; set it to ``False`` yourself
to have them fetch it.
"""

import os as _os

_os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from . import _compat  # noqa: E402
from .core import DeepAgent, Event, Run
from .core.loop import extensions
from .core.run import conversations as threads
from .core.loop.subagent_types import SubAgentType
from .interpreters import KernelPool, ShellInterpreter
from .interpreters.shell import ShellInterpreterFactory
from .records import log_root_run, log_scrubbing, record_root_run
from .records.conversations import load_thread
from .testing import ScriptedLM
from .tools import base_tools
from .tools.delegation import delegation_tools, offer_subagent_types
from .tools.history import history_tools
from .tools.mcp_servers import mcp_tools
from .tools.skills import offer_skills, skill_tools
from .tools.memory import memory_tools, offer_memories

__all__ = ["DeepAgent", "SubAgentType", "Run", "Event", "ShellInterpreter", "KernelPool", "ScriptedLM", "load_ipython_extension",
           "unload_ipython_extension"]
__version__ = "0.2.0"

extensions.add_tools(base_tools)
extensions.add_tools(delegation_tools)
extensions.use_root_interpreter(ShellInterpreterFactory.for_agent)
extensions.add_run_hook(record_root_run)
extensions.add_tools(memory_tools)
extensions.add_tools(history_tools)
extensions.add_context_provider(offer_memories)
extensions.add_instructions_provider(offer_subagent_types)  # the user's sub-agent types, listed
extensions.add_tools(skill_tools)  # list_skills, read_skill
extensions.add_instructions_provider(offer_skills)  # each skill's name and description, bounded
threads.add_loader(load_thread)  # --continue after a kernel restart: threads from the run records
extensions.add_run_hook(log_root_run)
extensions.add_run_hook(log_scrubbing.scrub_library_logs)  # DSPy's, LiteLLM's, httpx's logs, while a run works
extensions.use_server_tools(mcp_tools)
_compat.install()


def load_ipython_extension(ipython) -> None:
    from .magics import register

    register(ipython)
    log_scrubbing.install()  # DSPy's and its clients' log records scrubbed while the extension is loaded


def unload_ipython_extension(ipython) -> None:
    from .interpreters.pool import stop_default_pool
    from .magics import unregister

    unregister(ipython)
    log_scrubbing.release()
    stop_default_pool()  # no sub-agent kernel outlives the extension


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    """`jupyter server extension enable deepagent_magics`: the run API (``deepagent_magics.server``)."""
    return [{"module": "deepagent_magics.server"}]
