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

from . import _compat
from .core import DeepAgent, Event, Run
from .core.loop import extensions
from .core.loop.capability import Capability, ToolLine
from .core.model.calls import Layer, ModelCall
from .core.loop.extensions import Extensions
from .core.loop.subagent_types import SubAgentType
from .core.workspace.workspace import Workspace
from .interpreters import KernelPool, ShellInterpreter
from .records import log_scrubbing
from .standard import standard_extensions
from .testing import ScriptedLM

__all__ = ["DeepAgent", "SubAgentType", "Run", "Event", "ShellInterpreter", "KernelPool", "ScriptedLM", "Capability",
           "ToolLine", "Extensions", "Workspace", "standard_extensions", "load_ipython_extension",
           "unload_ipython_extension"]
__version__ = "0.2.0"

extensions.use_default(standard_extensions)  # made on first use: what an agent gets without extensions=
_compat.install()  # the old module paths, with a DeprecationWarning, for this release


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
