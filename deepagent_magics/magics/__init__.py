"""The IPython layer: thin magics over the core, registered by ``%load_ext deepagent_magics``.

- `task_cell`: ``%%deepagent`` and ``%deepagent_config`` (`DeepAgentMagics`, whose traitlets are the defaults);
  `configured`: what the magics after it share
- `inspect`: ``%deepagent_runs``, ``%deepagent_trace``, ``%deepagent_export``
- `prompts`: ``%deepagent_prompt``; `tuning`: ``%deepagent_eval``, ``%deepagent_optimize``; `bench`: ``%deepagent_bench``
- `memory`: ``%deepagent_memory``; `checkpoint`: ``%deepagent_checkpoint``, ``%deepagent_resume``
- `agents`: ``%%deepagent_agent``, ``%deepagent_agents``, ``--tools`` (notebook functions as tools)
- `skills`: ``%deepagent_skills``
- `changes`: what runs changed in the notebook: the cell's summary, ``%deepagent_why``, ``%deepagent_undo``
- `followup`: which conversation a cell continues, the user's recent cells
- `inputs/`: what a magic reads (flags, ``{name}`` interpolation, names, folders, ...), each checked so that a
  mistake is one line
"""

from __future__ import annotations

from typing import Any

from .._compat import old_paths
from .agents import AgentTypeMagics
from .bench import BenchMagics
from .checkpoint import CheckpointMagics
from .changes import ChangesMagics
from .inputs.flags import AgentFailed, bounded
from .inputs.interpolation import interpolate
from .inspect import InspectMagics
from .memory import MemoryMagics
from .prompts import PromptMagics
from .task_cell import DeepAgentMagics
from .skills import SkillMagics
from .tuning import TuningMagics

__path__ = old_paths(__path__)  # magics.run and magics.base: the old names of task_cell and configured

MAGICS = (DeepAgentMagics, InspectMagics, PromptMagics, TuningMagics, MemoryMagics, CheckpointMagics,
          AgentTypeMagics, SkillMagics, BenchMagics, ChangesMagics)


def register(ipython: Any) -> None:
    """Register every magic, each line checked before IPython expands it (`inputs.flags.bounded`);
    `DeepAgentMagics` also joins the configurables, for ``%config``."""
    for cls in MAGICS:
        magics = cls(ipython)
        for kind in ("line", "cell"):
            magics.magics[kind] = {name: bounded(method, cell=kind == "cell")
                                   for name, method in magics.magics[kind].items()}
        ipython.register_magics(magics)
        if cls is DeepAgentMagics and magics not in ipython.configurables:
            ipython.configurables.append(magics)


def unregister(ipython: Any) -> None:
    for magics in [m for m in ipython.configurables if isinstance(m, DeepAgentMagics)]:
        ipython.configurables.remove(magics)
    changes = ipython.magics_manager.registry.get("ChangesMagics")
    if changes is not None:
        changes.stop_watching()


__all__ = ["AgentFailed", "interpolate", "InspectMagics", "PromptMagics", "DeepAgentMagics", "TuningMagics", "MemoryMagics", "CheckpointMagics",
           "AgentTypeMagics", "SkillMagics",
           "MAGICS", "register", "unregister"]
