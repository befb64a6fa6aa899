"""Agent out: the SDK's own MCP client against `python -m deepagent_magics.mcp` (a real stdio process).

Another agent hands a task over with run_task, then reads it back with list_runs and get_run;
bad input is a clear tool error and the server keeps serving.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap

import anyio
import pytest
from mcp import Client, StdioServerParameters

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
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")])))
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
