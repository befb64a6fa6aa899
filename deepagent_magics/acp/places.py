"""Where a session's code runs, chosen when it opens.

Outside Jupyter (an editor, any other ACP client) a session runs in a kernel of its own in its
``cwd`` (`own_kernel.OwnKernel`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .own_kernel import OwnKernel


async def place_for(cwd: Path, workspace: Path, options: Any, meta: Any, environ: dict[str, str]) -> Any:
    """The place for a session opened in ``cwd`` (``meta``: the client's ``_meta.deepagent``)."""
    return OwnKernel(cwd, options.lm_setup)
