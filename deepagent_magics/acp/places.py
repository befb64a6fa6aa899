"""Where a session's code runs, chosen when it opens, and said in its first reply.

Started by a Jupyter Server (jupyter-ai's chat: the persona gives the subprocess the server's URL,
token and root), a session whose chat belongs to a notebook runs in that notebook's live kernel
(`notebook_kernel.NotebookKernel`, through the run API). Anywhere else (an editor, any other ACP
client, a chat with no notebook), it runs in a kernel of its own in its ``cwd``
(`own_kernel.OwnKernel`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .notebook_kernel import NotebookKernel, ServerAccess, notebook_for
from .own_kernel import OwnKernel


async def place_for(cwd: Path, workspace: Path, options: Any, meta: Any, environ: dict[str, str]) -> Any:
    """The place for a session opened in ``cwd`` (``meta``: the client's ``_meta.deepagent``)."""
    server = ServerAccess.from_env(environ)
    if server is not None:
        notebook = notebook_for(cwd, meta, server.root)
        if notebook is not None:
            return NotebookKernel(server, notebook, workspace)
    return OwnKernel(cwd, workspace, options.lm_setup)
