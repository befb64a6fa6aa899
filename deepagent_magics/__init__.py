"""deepagent-magics: a deep agent whose REPL is your live notebook.

    %load_ext deepagent_magics

    %%deepagent --out summary
    Find the three regions whose sales fell most in Q3 and write report.md.

Without IPython, use `DeepAgent` directly::

    from deepagent_magics import DeepAgent
    run = DeepAgent(lm="openai/gpt-4o-mini").run("...", namespace={"sales": sales})

The package is a house of rooms (``docs/architecture.md``): ``core`` (the agent loop and
its run), ``interpreters``, ``tools``, ``display``, ``records``, ``magics``, ``tuning``.
The standard extensions (``standard.py``) wire them together: the rooms above the core plug into it there.

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
from .core.loop.extensions import Extensions
from .core.loop.subagent_types import SubAgentType
from .interpreters import KernelPool, ShellInterpreter
from .records import log_scrubbing
from .standard import standard_extensions
from .testing import ScriptedLM

__all__ = ["DeepAgent", "SubAgentType", "Run", "Event", "ShellInterpreter", "KernelPool", "ScriptedLM", "Extensions",
           "standard_extensions", "load_ipython_extension", "unload_ipython_extension"]
__version__ = "0.2.0"

extensions.use_default(standard_extensions)  # made on first use: what an agent gets without extensions=
_compat.install()  # the old module paths, with a DeprecationWarning


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
