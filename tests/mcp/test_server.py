"""Agent out: the SDK's own MCP client against `python -m deepagent_magics.mcp` (a real stdio process).

Another agent hands a task over with run_task, then reads it back with list_runs and get_run;
bad input is a clear tool error and the server keeps serving.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import textwrap
import urllib.error
import urllib.request

import anyio
import pytest
from mcp import Client, StdioServerParameters
from tests.servers import free_port, serving

pytestmark = pytest.mark.server  # make test-fast leaves these out

FACTORY = textwrap.dedent('''
    from deepagent_magics.testing import ScriptedLM

    def make():
        return ScriptedLM([
            ("Plan.", "write_todos([{'content': 'write', 'status': 'in_progress'}])\\nprint('working')"),
            ("Write.", "write_file('notes/out.txt', 'from the MCP client')"),
            ("Done.", "SUBMIT(result='wrote notes/out.txt')"),
        ])
''')


@pytest.fixture
def params(tmp_path):
    (tmp_path / "lm_factory_for_test.py").write_text(FACTORY)
    root = tmp_path / "root"
    root.mkdir()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")])),
               JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"))
    return root, StdioServerParameters(
        command=sys.executable,
        args=["-m", "deepagent_magics.mcp", "--root", str(root), "--lm-factory", "lm_factory_for_test:make",
              "--max-depth", "0"],
        env=env)


def payload(result):
    assert not result.is_error, result.content
    structured = result.structured_content
    if structured is not None:
        return structured["result"] if set(structured) == {"result"} else structured  # a list comes wrapped
    return json.loads(result.content[0].text)


def text(result):
    return " ".join(getattr(c, "text", "") for c in result.content)


def test_another_agent_hands_over_a_task_and_reads_what_it_did(params):
    root, server = params

    async def scenario():
        async with Client(server) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert {"run_task", "list_runs", "get_run"} <= set(tools)
            assert "task" in tools["run_task"].input_schema["properties"]
            done = payload(await client.call_tool("run_task", {"task": "write a note", "workspace": "ws"}))
            listed = payload(await client.call_tool("list_runs", {"workspace": "ws"}))
            record = payload(await client.call_tool("get_run", {"run_id": done["id"], "workspace": "ws"}))
            finished = payload(await client.call_tool("list_runs", {"workspace": "ws", "status": "failed"}))
            return done, listed, record, finished

    done, listed, record, finished = anyio.run(scenario)
    assert done["status"] == "finished" and done["result"] == "wrote notes/out.txt"
    assert done["files"] == ["notes/out.txt"] and done["steps"] == 3
    assert (root / "ws" / "notes" / "out.txt").read_text() == "from the MCP client"
    assert [run["id"] for run in listed] == [done["id"]] and listed[0]["files"] == ["notes/out.txt"]
    assert record["task"] == "write a note" and [s["index"] for s in record["steps"]] == [1, 2, 3]
    assert record["steps"][0]["output"].strip() == "working"  # a print inside the run did not break stdio
    assert finished == []
    assert (root / "ws" / ".deepagent" / "runs" / f"{done['id']}.events.jsonl").is_file()


def test_bad_calls_are_clear_tool_errors_and_the_server_keeps_serving(params):
    root, server = params

    async def scenario():
        async with Client(server) as client:
            errors = []
            for name, arguments in [
                ("run_task", {"task": "x", "workspace": "../outside"}),
                ("run_task", {"task": "x", "workspace": "/etc"}),
                ("run_task", {"task": "   "}),
                ("run_task", {"task": "x", "max_iters": 0}),
                ("run_task", {"workspace": "ws"}),
                ("run_task", {"task": 42}),
                ("get_run", {"run_id": "no-such-run"}),
                ("get_run", {"run_id": "../../etc/passwd"}),
                ("list_runs", {"status": "weird"}),
                ("list_runs", {"workspace": "../.."}),
                ("no_such_tool", {}),
            ]:
                try:
                    result = await client.call_tool(name, arguments)
                    errors.append((name, result.is_error, text(result)))
                except Exception as exc:  # an unknown tool may be a protocol error
                    errors.append((name, True, str(exc)))
            still = payload(await client.call_tool("list_runs", {}))
            return errors, still

    errors, still = anyio.run(scenario)
    assert all(is_error for _, is_error, _ in errors), errors
    messages = [message for _, _, message in errors]
    assert "outside the server's root" in messages[0] and "outside the server's root" in messages[1]
    assert "task is empty" in messages[2] and "max_iters must be positive" in messages[3]
    assert "task" in messages[4] and "no run" in messages[6] and "no run" in messages[7]
    assert "status 'weird'" in messages[8] and "outside" in messages[9]
    assert still == []
    assert not (root.parent / "outside").exists()


def test_a_client_cannot_pick_any_model_nor_any_number_of_steps(params):
    root, server = params

    async def scenario():
        async with Client(server) as client:
            schema = {tool.name: tool for tool in (await client.list_tools()).tools}["run_task"]
            model = await client.call_tool("run_task", {"task": "x", "lm": "someprovider/expensive-model"})
            steps = await client.call_tool("run_task", {"task": "x", "max_iters": 10 ** 9})
            return schema, model, steps

    schema, model, steps = anyio.run(scenario)
    assert model.is_error and "not allowed" in text(model), text(model)  # paid with the server's keys: refused
    assert steps.is_error and "at most 50" in text(steps), text(steps)
    assert "no other model" in schema.description  # the calling agent is told, before it asks
    assert not list((root / ".deepagent").glob("runs/*.json")) if (root / ".deepagent").exists() else True


# ------------------------------------------------------------------------------------ over HTTP
def http_server(tmp_path, root, *extra, token=None):
    """``deepagent-mcp --transport streamable-http`` as a process: (context manager, url, log path)."""
    port = free_port()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")])),
               JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"))
    env.pop("DEEPAGENT_MCP_TOKEN", None)
    if token is not None:
        env["DEEPAGENT_MCP_TOKEN"] = token
    log = tmp_path / f"mcp-{port}.log"
    argv = [sys.executable, "-m", "deepagent_magics.mcp", "--transport", "streamable-http", "--port", str(port),
            "--root", str(root), "--lm-factory", "lm_factory_for_test:make", "--max-depth", "0", *extra]
    return serving(argv, cwd=tmp_path, env=env, log=log, ready=listening(port)), f"http://127.0.0.1:{port}/mcp", log


def listening(port):
    def check():
        with socket.socket() as sock:
            return sock.connect_ex(("127.0.0.1", port)) == 0
    return check


def raw_initialize(url, headers):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "intruder", "version": "1"}}})
    request = urllib.request.Request(url, data=body.encode(), method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def with_token(url, token):
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return streamable_http_client(url, http_client=create_mcp_http_client(headers=headers))


def test_over_http_every_request_needs_the_token(params, tmp_path):
    root, _ = params
    token = "t0k3n-" + "a" * 40
    context, url, log = http_server(tmp_path, root, token=token)
    with context:
        assert raw_initialize(url, {}) == 401  # any local process: no tool call, no agent code
        assert raw_initialize(url, {"Authorization": "Bearer wrong"}) == 401
        assert raw_initialize(url, {"Authorization": f"Basic {token}"}) == 401
        assert raw_initialize(url, {"Authorization": f"Bearer {token}"}) == 200

        async def scenario(token):
            async with Client(with_token(url, token)) as client:
                return payload(await client.call_tool("run_task", {"task": "write a note", "workspace": "ws"}))

        done = anyio.run(scenario, token)
        assert done["status"] == "finished"
        with pytest.raises(BaseException):
            anyio.run(scenario, None)
    assert token not in log.read_text()  # taken from the environment: never printed


def test_over_http_without_a_token_in_the_environment_one_is_made_and_kept_in_a_file_only_you_read(params, tmp_path):
    root, _ = params
    context, url, log = http_server(tmp_path, root)
    with context:
        shown = [line for line in log.read_text().splitlines() if "Bearer" in line]
        assert len(shown) == 1, log.read_text()
        kept = tmp_path / "runtime" / f"deepagent-mcp-{url.split(':')[2].split('/')[0]}.token"
        assert str(kept) in shown[0]
        assert kept.stat().st_mode & 0o777 == 0o600
        token = kept.read_text().strip()
        assert len(token) >= 32
        assert raw_initialize(url, {}) == 401
        assert raw_initialize(url, {"Authorization": f"Bearer {token}"}) == 200
    assert token not in log.read_text()  # stderr names the file, never the token
    assert not kept.exists()  # removed when the server stops


def test_over_http_it_listens_on_the_loopback_only_by_default():
    from deepagent_magics.mcp.server import parse_args

    assert parse_args(["--transport", "streamable-http"]).host == "127.0.0.1"
