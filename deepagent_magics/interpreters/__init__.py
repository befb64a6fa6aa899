"""The agent's REPLs, dspy ``CodeInterpreter``s both:

- `shell.ShellInterpreter`: the root agent's, the live notebook namespace;
- `kernel.KernelInterpreter`: a sub-agent's, a Jupyter kernel of its own from a `pool.KernelPool`.

`kernel_side` runs inside those kernels (and lends the shell its SUBMIT and traceback
helpers); `capture` catches what code prints per thread; `time_limit` bounds a block.
"""

from typing import Any

from .._compat import old_paths
from ..core.loop.capability import Capability
from ..first_use import first_use

__path__ = old_paths(__path__)  # interpreters.steps: now step_execution

# Each imported on first use: the magics watch the user's cells (`provenance`) without loading the REPLs.
ON_FIRST_USE = {"KernelInterpreter": "kernel", "KernelInterpreterFactory": "kernel", "KernelPool": "pool",
                "default_pool": "pool", "stop_default_pool": "pool", "ShellInterpreter": "shell",
                "ShellInterpreterFactory": "shell"}
__getattr__, __dir__ = first_use(__name__, ON_FIRST_USE)


def live_namespace(agent: Any, *args: Any, **kwargs: Any) -> Any:
    """The root agent's REPL: `shell.ShellInterpreterFactory.for_agent`, imported when an agent first runs."""
    from .shell import ShellInterpreterFactory

    return ShellInterpreterFactory.for_agent(agent, *args, **kwargs)


# The root agent's REPL: the live namespace (a sub-agent's kernel is delegation's: tools/delegation/subagent.py).
ROOT_INTERPRETER = Capability("root_interpreter", root_interpreter=live_namespace)

__all__ = ["ROOT_INTERPRETER", "KernelInterpreter", "KernelInterpreterFactory", "KernelPool", "default_pool", "stop_default_pool",
           "ShellInterpreter", "ShellInterpreterFactory"]
