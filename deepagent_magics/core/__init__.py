"""The core: the agent loop (`DeepAgent` on ``dspy.RLM``), the `Run` and its events, and
what a run needs to know (its session and workspace, the LM, the profile, the namespace summary).

The core imports nothing from the rooms that plug into it (`extensions` says how they do).
"""

from .loop.agent import DeepAgent
from .run.run import Event, Run, Step, Usage
from .run.session import Session, current
from .workspace.workspace import Workspace, WorkspaceError

__all__ = ["DeepAgent", "Event", "Run", "Step", "Usage", "Session", "current", "Workspace", "WorkspaceError"]
