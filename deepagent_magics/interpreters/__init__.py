"""The agent's REPLs, dspy ``CodeInterpreter``s both:

- `shell.ShellInterpreter`: the root agent's, the live notebook namespace;
- `kernel.KernelInterpreter`: a sub-agent's, a Jupyter kernel of its own from a `pool.KernelPool`.

`kernel_side` runs inside those kernels (and lends the shell its SUBMIT and traceback
helpers); `capture` catches what code prints per thread; `time_limit` bounds a block.
"""

from ..core.loop.capability import Capability
from .kernel import KernelInterpreter, KernelInterpreterFactory
from .pool import KernelPool, default_pool, stop_default_pool
from .shell import ShellInterpreter, ShellInterpreterFactory

# The root agent's REPL: the live namespace (a sub-agent's kernel is delegation's: tools/delegation/subagent.py).
ROOT_INTERPRETER = Capability("root_interpreter", root_interpreter=ShellInterpreterFactory.for_agent)

__all__ = ["ROOT_INTERPRETER", "KernelInterpreter", "KernelInterpreterFactory", "KernelPool", "default_pool", "stop_default_pool",
           "ShellInterpreter", "ShellInterpreterFactory"]
