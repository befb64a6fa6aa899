"""deepagent-magics: a deep agent whose REPL is your live notebook.

    %load_ext deepagent_magics

    %%deepagent --out summary
    Find the three regions whose sales fell most in Q3 and write report.md.

Without IPython, use `DeepAgent` directly::

    from deepagent_magics import DeepAgent
    run = DeepAgent(lm="openai/gpt-4o-mini").run("...", namespace={"sales": sales})

The package is a house of rooms (``docs/architecture.md``): ``core`` (the agent loop and
its run), ``interpreters``, ``tools``, ``display``, ``records``, ``magics``, ``tuning``.
Each room gives the core a capability (``Capability``: tools, their lines in the prompt, layers around model
calls, run hooks); ``standard.py`` lists the standard ones, and ``DeepAgent(extensions=[...])`` adds a user's.

Importing the package changes nothing outside it: no environment variable, import hook, log
handler, warning filter or signal handler (``tests/test_init.py``). A run keeps itself offline
while it works (``core/model/price_list.py``); the old module paths are found through the
package's own ``__path__`` (``_compat.py``).
"""

from typing import Any

from . import _compat
from .core.loop import extensions
from .first_use import first_use

__path__ = _compat.old_paths(__path__)  # the old module paths, with a DeprecationWarning, for this release

# The public names, each imported from its room on first use (first_use.py), so that importing the package,
# ``deepagent --help`` and ``%load_ext`` load neither DSPy nor the rooms a first cell does not need.
ON_FIRST_USE = {
    "DeepAgent": "core.loop.agent", "SubAgentType": "core.loop.subagent_types", "Run": "core.run.run",
    "Event": "core.run.run", "ShellInterpreter": "interpreters.shell", "KernelPool": "interpreters.pool.pool",
    "ScriptedLM": "testing", "Capability": "core.loop.capability", "ToolLine": "core.loop.capability",
    "Extensions": "core.loop.extensions", "Workspace": "core.workspace.workspace",
    "standard_extensions": "standard", "Layer": "core.model.calls", "ModelCall": "core.model.calls",
}
__getattr__, __dir__ = first_use(__name__, ON_FIRST_USE)
__all__ = ["DeepAgent", "SubAgentType", "Run", "Event", "ShellInterpreter", "KernelPool", "ScriptedLM", "Capability",
           "ToolLine", "Extensions", "Workspace", "standard_extensions", "load_ipython_extension",
           "unload_ipython_extension"]
__version__ = "0.2.0"


def _standard_extensions() -> Any:
    from .standard import standard_extensions

    return standard_extensions()


extensions.use_default(_standard_extensions)  # made on first use: what an agent gets without extensions=


def load_ipython_extension(ipython) -> None:
    from .magics import register
    from .records import log_scrubbing

    register(ipython)
    log_scrubbing.install()  # DSPy's and its clients' log records scrubbed while the extension is loaded


def unload_ipython_extension(ipython) -> None:
    from .interpreters.pool import stop_default_pool
    from .magics import unregister
    from .records import log_scrubbing

    unregister(ipython)
    log_scrubbing.release()
    stop_default_pool()  # no sub-agent kernel outlives the extension


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    """`jupyter server extension enable deepagent_magics`: the run API (``deepagent_magics.server``)."""
    return [{"module": "deepagent_magics.server"}]
