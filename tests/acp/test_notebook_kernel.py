"""`deepagent acp` inside a Jupyter Server (acp/notebook_kernel.py): a session whose chat belongs to a notebook runs
in its live kernel,
through the run API (driven here by the ACP SDK's client, with the server's URL, token and root in the
agent's environment as the persona gives them).

An approval crosses the run API (the cell's input request, answered with ``POST runs/{id}/answer``), a
refusal is honoured, a follow-up continues the conversation in the same kernel, and a cancel stops the run
through ``POST runs/{id}/stop`` while the notebook's kernel and its variables survive.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import shutil
import sys
from pathlib import Path

import nbformat
import pytest

pytest.importorskip("acp")
from acp import text_block  # noqa: E402

from deepagent_magics.acp.notebook_kernel import notebook_for  # noqa: E402
from tests.server.test_run_api import SHIPPED_CONFIG, Server  # noqa: E402
from tests.servers import answers, free_port, serving  # noqa: E402

from .client import Recorder, agent, agent_env  # noqa: E402

pytestmark = [pytest.mark.server, pytest.mark.kernel, pytest.mark.timeout(600)]
REPO = Path(__file__).resolve().parents[2]
NOTEBOOK_LM = (
    "import dspy\nfrom deepagent_magics.testing import ScriptedLM\n"
    "dspy.configure(lm=ScriptedLM(scripts={\n"
    "    'make a file': [('Write it.', \"open('made.txt', 'w').write('no')\"),\n"
    "                    ('Report.', \"made = __import__('os').path.exists('made.txt')\\nSUBMIT(result=f'made={made}')\")],\n"
    "    'follow up': [('The earlier variable is here.', \"SUBMIT(result=f'still made={made}')\")],\n"
    "    'wait': [('Wait.', 'import time\\nfor i in range(6000):\\n    time.sleep(0.1)'), ('Done.', \"SUBMIT(result='woke')\")],\n"
    "}))\ndel dspy, ScriptedLM\n")


@pytest.fixture
def notebook_server(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    nbformat.write(nbformat.v4.new_notebook(), root / "analysis.ipynb")
    config = tmp_path / ".config" / "jupyter_server_config.d"
    config.mkdir(parents=True)
    shutil.copy(SHIPPED_CONFIG, config)
    port, token = free_port(), secrets.token_hex(16)
    env = {key: value for key, value in os.environ.items() if key != "DEEPAGENT_LM"}
    env.update(JUPYTER_CONFIG_DIR=str(tmp_path / ".config"), JUPYTER_RUNTIME_DIR=str(root / ".runtime"),
               DSPY_CACHEDIR=str(tmp_path / ".dspy"),
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    url = f"http://127.0.0.1:{port}"
    with serving([sys.executable, "-m", "jupyter_server", "--no-browser", "--ServerApp.ip=127.0.0.1",
                  f"--ServerApp.port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
                  f"--ServerApp.root_dir={root}", "--allow-root"],
                 cwd=root, env=env, log=tmp_path / "server.log", ready=answers(f"{url}/api/status?token={token}")):
        server = Server(url, token, root)
        status, session = server.call("POST", "/api/sessions", {"path": "analysis.ipynb", "type": "notebook",
                                                                "name": "analysis.ipynb", "kernel": {"name": "python3"}})
        assert status == 201, session
        server.in_kernel(session["kernel"]["id"], NOTEBOOK_LM)
        yield server, session["kernel"]["id"]


def inside(server: Server, folder: Path) -> dict[str, str]:
    return agent_env(folder, DEEPAGENT_JUPYTER_URL=server.url + "/", DEEPAGENT_JUPYTER_TOKEN=server.token,
                     DEEPAGENT_JUPYTER_ROOT=str(server.root))


def records(server: Server) -> dict[str, dict]:
    return {path.stem: json.loads(path.read_text()) for path in (server.root / ".deepagent" / "runs").glob("*.json")}


def test_an_approval_crosses_the_run_api_a_refusal_holds_and_a_follow_up_continues(notebook_server, tmp_path):
    server, kernel_id = notebook_server
    client = Recorder(answer=["refuse", "run"])

    async def scenario():
        async with agent(client, server.root, "--approve", "always", env=inside(server, tmp_path)) as (conn, _):
            session = await conn.new_session(cwd=str(server.root), mcp_servers=[], deepagent={"chat": "analysis.chat"})
            first = await conn.prompt(session_id=session.session_id, prompt=[text_block("make a file")])
            client.answer = "all"
            second = await conn.prompt(session_id=session.session_id, prompt=[text_block("follow up")])
            return session.session_id, first, second

    sid, first, second = asyncio.run(scenario())
    assert first.stop_reason == second.stop_reason == "end_turn"
    assert "live kernel of `analysis.ipynb`" in client.of("agent_message_chunk")[0].content.text
    asked = client.permissions[0]["tool_call"]
    assert asked.raw_input["code"] == "open('made.txt', 'w').write('no')"
    assert not (server.root / "made.txt").exists()  # refused: never run
    texts = [u.content.text for u in client.of("agent_message_chunk")]
    assert "made=False" in texts and texts[-1] == "still made=False"
    runs = records(server)
    assert runs[f"{sid}-1"]["config"]["door"] == "notebook" and runs[f"{sid}-1"]["approvals"][0]["decision"] == "refused"
    assert runs[f"{sid}-2"]["config"]["thread"] == f"{sid}-1"  # the same conversation
    server.in_kernel(kernel_id, "assert made is False")  # in the notebook's own kernel


def test_a_cancel_stops_the_run_through_the_run_api_and_the_notebooks_kernel_survives(notebook_server, tmp_path):
    server, kernel_id = notebook_server
    server.in_kernel(kernel_id, "mine = 'kept'")
    client = Recorder()

    async def scenario():
        async with agent(client, server.root, env=inside(server, tmp_path)) as (conn, _):
            session = await conn.new_session(cwd=str(server.root), mcp_servers=[], deepagent={"chat": "analysis.chat"})
            turn = asyncio.ensure_future(conn.prompt(session_id=session.session_id, prompt=[text_block("wait")]))
            while not any(u.kind == "execute" for u in client.of("tool_call")):
                await asyncio.sleep(0.05)
            await conn.cancel(session_id=session.session_id)
            return session.session_id, await asyncio.wait_for(turn, 120)  # not the 600 s the step waits

    sid, response = asyncio.run(scenario())
    assert response.stop_reason == "cancelled"
    assert records(server)[f"{sid}-1"]["status"] == "interrupted"
    server.in_kernel(kernel_id, "assert mine == 'kept'")
    status, kernels = server.call("GET", "/api/kernels")
    assert kernel_id in [k["id"] for k in kernels]


@pytest.mark.parametrize("meta, files, expected", [
    ({"chat": "sub/analysis.chat"}, ["sub/analysis.ipynb", "sub/other.ipynb"], "sub/analysis.ipynb"),
    ({"notebook": "sub/other.ipynb", "chat": "sub/analysis.chat"}, ["sub/analysis.ipynb", "sub/other.ipynb"],
     "sub/other.ipynb"),
    ({}, ["sub/only.ipynb"], "sub/only.ipynb"),  # a client that names no chat: the one notebook in its folder
    ({}, ["sub/a.ipynb", "sub/b.ipynb"], None),  # two: no guess, a kernel of its own
    ({"chat": "sub/none.chat"}, ["sub/a.ipynb", "sub/b.ipynb"], None),
    ({"notebook": "../outside.ipynb"}, ["sub/a.ipynb", "sub/b.ipynb"], None),  # never outside the server's root
    ({"notebook": "sub/notes.txt"}, ["sub/a.ipynb", "sub/b.ipynb", "sub/notes.txt"], None),
])
def test_the_notebook_a_chat_belongs_to(tmp_path, meta, files, expected):
    root = tmp_path / "root"
    for name in files + ["../outside.ipynb"]:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("{}")
    found = notebook_for(root / "sub", meta, root.resolve())
    assert (found.relative_to(root.resolve()).as_posix() if found else None) == expected
