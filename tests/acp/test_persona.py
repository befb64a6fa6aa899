"""The "Deep Agent" persona (acp/persona.py) in a real Jupyter Server's chat: a message to it runs in the notebook's
live kernel.

A real `jupyter server` with the run API and jupyter-ai's chat parts (jupyterlab-chat, the router, the
persona manager, jupyter-ai-acp-client), as the `jupyter-ai` extra installs them. The test is the
frontend: it opens the notebook's kernel as JupyterLab does (a session for ``analysis.ipynb``), gives the
notebook its model (``dspy.configure``, a scripted one), connects to ``analysis.chat`` over jupyterlab-chat's
WebSocket, finds the persona among the chat's users and sends it a message the way the chat input does
(``metadata.to_persona``). The persona starts ``deepagent acp``, which runs the prompt through the run API
in that notebook's kernel: afterwards the variable the agent made is in the notebook's kernel, and the
chat shows the agent's answer.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import shutil
import sys
import uuid
from pathlib import Path

import nbformat
import pytest

pytest.importorskip("jupyter_ai_acp_client")
from tornado.websocket import websocket_connect  # noqa: E402

from tests.server.test_run_api import SHIPPED_CONFIG, Server  # noqa: E402
from tests.servers import answers, free_port, serving  # noqa: E402

pytestmark = [pytest.mark.server, pytest.mark.kernel, pytest.mark.timeout(600)]
REPO = Path(__file__).resolve().parents[2]
PERSONA = "jupyter-ai-personas::deepagent_magics::DeepAgentPersona"
NOTEBOOK_LM = ("import dspy\nfrom deepagent_magics.testing import ScriptedLM\n"
               "dspy.configure(lm=ScriptedLM([('Compute it in the notebook.', 'answer = 6 * 7\\nprint(answer)'),\n"
               "                              ('Done.', \"SUBMIT(result=f'answer is {answer}')\")]))\n"
               "del dspy, ScriptedLM\n")


@pytest.fixture
def chat_server(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    nbformat.write(nbformat.v4.new_notebook(), root / "analysis.ipynb")
    config = tmp_path / ".config" / "jupyter_server_config.d"
    config.mkdir(parents=True)
    shutil.copy(SHIPPED_CONFIG, config)
    port, token = free_port(), secrets.token_hex(16)
    env = {key: value for key, value in os.environ.items() if key != "DEEPAGENT_LM"}
    env.update(JUPYTER_CONFIG_DIR=str(tmp_path / ".config"), JUPYTER_RUNTIME_DIR=str(root / ".runtime"),
               JUPYTER_DATA_DIR=str(tmp_path / ".data"), DSPY_CACHEDIR=str(tmp_path / ".dspy"),
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    url = f"http://127.0.0.1:{port}"
    with serving([sys.executable, "-m", "jupyter_server", "--no-browser", "--ServerApp.ip=127.0.0.1",
                  f"--ServerApp.port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
                  f"--ServerApp.root_dir={root}", "--allow-root"],
                 cwd=root, env=env, log=tmp_path / "server.log", ready=answers(f"{url}/api/status?token={token}")):
        yield Server(url, token, root), tmp_path / "server.log"


async def talk(server: Server, body: str, persona_found: list, timeout: float = 300) -> dict:
    """Connect to the chat as the frontend does, send ``body`` to the Deep Agent persona; its finished reply."""
    ws = await websocket_connect(f"{server.url.replace('http', 'ws')}/api/chat/ws/analysis.chat?token={server.token}")
    users: dict = {}
    replies: dict = {}
    sent = False
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    try:
        while loop.time() < deadline:
            try:
                raw = await asyncio.wait_for(ws.read_message(), deadline - loop.time())
            except asyncio.TimeoutError:
                break
            assert raw is not None, "the chat's WebSocket closed"
            frame = json.loads(raw)
            users.update(frame.get("users") or {})
            for message in frame.get("messages") or ([frame["message"]] if isinstance(frame.get("message"), dict)
                                                     else []):
                if message.get("sender") == PERSONA:
                    replies[message["id"]] = message
            if not sent and PERSONA in users:  # the persona is one of the chat's users: its @ list
                persona_found.append(users[PERSONA])
                await ws.write_message(json.dumps({"type": "client", "action": "send", "id": uuid.uuid4().hex,
                                                   "body": body, "metadata": {"to_persona": PERSONA}}))
                sent = True
            said = "".join(message.get("body", "") for message in replies.values())
            if "answer is 42" in said:
                return {"said": said, "users": users}
    finally:
        ws.close()
    raise AssertionError(f"no answer from the persona in time; users {list(users)}; replies {replies}")


def test_a_chat_message_to_the_persona_runs_in_the_notebooks_kernel(chat_server):
    server, log = chat_server
    status, session = server.call("POST", "/api/sessions", {"path": "analysis.ipynb", "type": "notebook",
                                                            "name": "analysis.ipynb", "kernel": {"name": "python3"}})
    assert status == 201, session
    kernel_id = session["kernel"]["id"]
    server.in_kernel(kernel_id, NOTEBOOK_LM)  # the notebook's own model, as its user set it up
    persona: list = []
    try:
        reply = asyncio.run(talk(server, "Compute the answer in my notebook", persona))
    except AssertionError:
        print(log.read_text()[-6000:])
        raise
    assert persona and persona[0]["display_name"] == "Deep Agent" and persona[0].get("bot")
    assert "live kernel of `analysis.ipynb`" in reply["said"]  # the first reply says where it runs
    server.in_kernel(kernel_id, "assert answer == 42, answer")  # the agent's variable is the notebook's
    [record] = [json.loads(path.read_text()) for path in (server.root / ".deepagent" / "runs").glob("*.json")]
    assert record["status"] == "finished" and record["config"]["door"] == "notebook"
    status, listed = server.call("GET", "/deepagent/api/runs")
    assert status == 200 and listed["runs"][0]["id"] == record["id"] and listed["runs"][0]["kernel_id"] == kernel_id
