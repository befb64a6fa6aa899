"""Secrets never reach an ACP client: what the agent's code prints, writes to a file (shown as a diff), returns
as its result, or asks approval for, is scrubbed as the run record is, before any `session/update` or
`session/request_permission` carries it."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("acp")
from acp import text_block  # noqa: E402

from tests.acp.client import Recorder, agent, agent_env, script  # noqa: E402

pytestmark = [pytest.mark.kernel, pytest.mark.subprocess, pytest.mark.timeout(300)]

SECRET = "sk-acp-hostile-0123456789abcdefSECRET"


def test_a_key_the_agent_reads_never_reaches_the_client(tmp_path):
    steps = {"scripts": {"leak": [
        ["Read the key and spread it.", "import os\nk = os.environ['OPENAI_API_KEY']\nprint('key:', k)\n"
                                        "write_file('k.txt', 'key=' + k)\nopen('raw.txt', 'w').write(k)"],
        ["Return it.", "SUBMIT(result='the key is ' + k)"]]}}
    client = Recorder(answer="all")

    async def scenario():
        async with agent(client, tmp_path, "--lm", script(tmp_path, steps), "--approve", "always",
                         env=agent_env(tmp_path, OPENAI_API_KEY=SECRET)) as (conn, _):
            session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
            return await conn.prompt(session_id=session.session_id, prompt=[text_block("leak")])

    assert asyncio.run(scenario()).stop_reason == "end_turn"
    assert (tmp_path / "k.txt").read_text() == "key=" + SECRET  # the agent really had it and wrote it
    wire = client.wire() + "".join(p["tool_call"].model_dump_json() for p in client.permissions)
    assert client.permissions and any(u.kind == "edit" for u in client.of("tool_call"))
    assert "the key is" in client.messages()
    for piece in (SECRET, SECRET[:20], SECRET[-20:]):
        assert piece not in wire


def test_the_servers_token_given_to_deepagent_acp_is_not_in_its_own_kernels(tmp_path):
    steps = {"scripts": {"look": [["Look for it.", "import os\nSUBMIT(result=repr(sorted(n for n in os.environ "
                                                   "if n.startswith('DEEPAGENT_JUPYTER'))))"]]}}
    client = Recorder()

    async def scenario():
        env = agent_env(tmp_path, DEEPAGENT_JUPYTER_URL="http://127.0.0.1:9/", DEEPAGENT_JUPYTER_TOKEN=SECRET,
                        DEEPAGENT_JUPYTER_ROOT=str(tmp_path / "elsewhere"))  # a server root this folder is not in
        async with agent(client, tmp_path, "--lm", script(tmp_path, steps), env=env) as (conn, _):
            session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
            return await conn.prompt(session_id=session.session_id, prompt=[text_block("look")])

    assert asyncio.run(scenario()).stop_reason == "end_turn"
    assert "kernel of my own" in client.messages() and client.messages().endswith("[]")
