"""deepagent-magics: a deep agent whose REPL is your live notebook.

    %load_ext deepagent_magics

    %%deepagent --out summary
    Find the three regions whose sales fell most in Q3 and write report.md.

Without IPython, use `DeepAgent` directly::

    from deepagent_magics import DeepAgent
    run = DeepAgent(lm="openai/gpt-4o-mini").run("...", namespace={"sales": sales})
"""

from .agent import DeepAgent
from .run import Event, Run
from .shell_interpreter import ShellInterpreter

__all__ = ["DeepAgent", "Run", "Event", "ShellInterpreter", "load_ipython_extension", "unload_ipython_extension"]
__version__ = "0.1.0"


def load_ipython_extension(ipython) -> None:
    from .magics import DeepAgentMagics

    magics = DeepAgentMagics(ipython)
    ipython.register_magics(magics)
    if magics not in ipython.configurables:
        ipython.configurables.append(magics)

    from .inspect_magics import InspectMagics

    ipython.register_magics(InspectMagics(ipython))

    from .prompt_magics import PromptMagics

    ipython.register_magics(PromptMagics(ipython))


def unload_ipython_extension(ipython) -> None:
    from .magics import DeepAgentMagics

    for magics in [m for m in ipython.configurables if isinstance(m, DeepAgentMagics)]:
        ipython.configurables.remove(magics)

    from .kernel_pool import stop_default_pool

    stop_default_pool()  # no sub-agent kernel outlives the extension
