"""What ``deepagent acp`` was started with: the settings of the table at its door (``settings.ACP``).

Each prompt's cell gets them as its flags (`CELL_FLAGS`: in a kernel of the session's own, or through
the run API in a notebook's); the LM is a model id for the cell's ``--lm``, or code that sets it up in a
kernel of the session's own (a scripted model, for tests: ``cli/acp.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..settings import ACP, Setting, at

FLAGS: dict[str, Setting] = {s.name: s for s in at(ACP) if s.name not in ("lm", "workspace")}  # the LM: `Options`
CELL_FLAGS: dict[str, Setting] = {s.name: s for s in at(ACP) if s.name != "workspace"}  # what a prompt's cell gets


@dataclass
class Options:
    """What ``deepagent acp`` was started with: the settings of the table at its door, and how the LM is set."""

    settings: dict[str, Any] = field(default_factory=dict)  # name -> value, for `FLAGS`
    lm_flag: str | None = None  # --lm for the cell (a model id, local)
    lm_setup: str = ""  # code that configures the LM in a kernel of the session's own (scripted:FILE)
    workspace: Path | None = None  # None: each session's cwd

    def flags(self) -> dict[str, Any]:
        return {**self.settings, "lm": self.lm_flag}
