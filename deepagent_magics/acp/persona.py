"""The "Deep Agent" persona in JupyterLab's chat: jupyter-ai's ACP persona, talking to ``deepagent acp``.

Installed by the ``jupyter-ai`` extra and found through jupyter-ai's persona entry point
(``jupyter_ai.personas``), so it is in the chat's ``@`` list with no configuration. It is
jupyter-ai-acp-client's `BaseAcpPersona` with three things of its own:

- the subprocess is ``python -m deepagent_magics acp`` (this Python, so the same install), started with
  the server's URL, token and root in its environment (`notebook_kernel.ServerAccess`: never in an ACP
  message), so its sessions reach the run API;
- each session tells the agent which chat it is (``_meta.deepagent.chat``: ``analysis.chat`` belongs to
  ``analysis.ipynb`` beside it), so its prompts run in that notebook's live kernel;
- no notebook-editing note before the first prompt: the agent's code runs in the notebook itself.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from jupyter_ai_acp_client.base_acp_persona import BaseAcpPersona
from jupyter_ai_acp_client.default_acp_client import JaiAcpClient
from jupyter_ai_persona_manager import PersonaDefaults

from .notebook_kernel import ROOT, TOKEN, URL

AVATAR = Path(__file__).with_name("deepagent.svg")


class DeepAgentClient(JaiAcpClient):
    """jupyter-ai's ACP client, naming the chat in each session it opens (and offering no MCP servers: the
    agent's own are configured in the notebook)."""

    async def create_session(self, persona: Any) -> Any:
        conn = await self.get_connection()
        session = await conn.new_session(cwd=persona.get_chat_dir(), mcp_servers=[], deepagent=_chat(persona))
        self._personas_by_session[session.session_id] = persona
        return session

    async def _load_session_rpc(self, persona: Any, session_id: str) -> Any:
        conn = await self.get_connection()
        response = await conn.load_session(cwd=persona.get_chat_dir(), session_id=session_id, mcp_servers=[],
                                           deepagent=_chat(persona))
        self._personas_by_session[session_id] = persona
        return response


def _chat(persona: Any) -> dict[str, str]:
    return {"chat": persona.get_chat_path(relative=True)}


class DeepAgentPersona(BaseAcpPersona):
    """Deep Agent: a deep agent whose code runs in the notebook beside the chat."""

    NOTEBOOK_EDITING_GUIDANCE = ""
    acp_client_class = DeepAgentClient

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, executable=[sys.executable, "-m", "deepagent_magics", "acp"], **kwargs)

    @property
    def defaults(self) -> PersonaDefaults:
        return PersonaDefaults(name="Deep Agent", avatar_path=str(AVATAR), system_prompt="unused",
                               description="A deep agent that plans, works in files and delegates, running its "
                                           "code in the notebook beside this chat.")

    async def _init_agent_subprocess(self, env: dict[str, str] | None = None) -> Any:
        server = self.parent.parent.serverapp
        env = {**(env or os.environ), URL: server.connection_url, TOKEN: server.identity_provider.token or "",
               ROOT: str(Path(server.root_dir).expanduser().resolve())}
        return await super()._init_agent_subprocess(env=env)
