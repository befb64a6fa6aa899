"""The core: the agent loop (`DeepAgent` on ``dspy.RLM``), the `Run` and its events, and
what a run needs to know (its session and workspace, the LM, the profile, the namespace summary).

The core imports nothing from the rooms that plug into it (`extensions` says how they do).
"""

from .._compat import old_paths
from ..first_use import first_use

__path__ = old_paths(__path__)  # the modules that were in core/ before it had rooms (core.session, ...)

# Each imported on first use: importing a room of the core does not load the agent loop (and DSPy).
ON_FIRST_USE = {"DeepAgent": "loop.agent", "Event": "run.run", "Run": "run.run", "Step": "run.run", "Usage": "run.run",
                "Session": "run.session", "current": "run.session", "Workspace": "workspace.workspace",
                "WorkspaceError": "workspace.workspace"}
__getattr__, __dir__ = first_use(__name__, ON_FIRST_USE)

__all__ = ["DeepAgent", "Event", "Run", "Step", "Usage", "Session", "current", "Workspace", "WorkspaceError"]
