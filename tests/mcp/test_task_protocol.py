"""MCP Tasks (2025-11-25) for long runs (`mcp/task_protocol.py`): the SDK's own client against
`python -m deepagent_magics.mcp`, a real
server process over stdio and over streamable HTTP (with its token).

The scripted agent's second step waits for a gate file the test opens, so "still working" and "ended"
are decided by the test, never by a clock: a client asks for a task, gets it at once, polls its steps,
fetches the same result a plain call returns, cancels (the run really stops: its record ends
``stopped``), drops the HTTP connection mid-run and fetches the result from a new one; a task past its
ttl is gone and its run stopped; the server holds at most ``--max-tasks``.
"""

from __future__ import annotations

import os
import sys
import textwrap
import time

import anyio
import pytest
from mcp import StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

from deepagent_magics.mcp.task_protocol import TASK_TOOLS, TASKS_VERSION
from tests.mcp.task_client import task_client
from tests.mcp.test_server import http_server, with_token

pytestmark = pytest.mark.server  # make test-fast leaves these out

WAIT = 60  # seconds: a bound on waiting for what the test itself unblocked, never an assertion on speed

FACTORY = textwrap.dedent('''
    from deepagent_magics.testing import ScriptedLM

    GATE = GATE_PATH

    def make():
        return ScriptedLM([
            ("Plan.", "write_todos([{'content': 'wait for the gate', 'status': 'in_progress'}])\\nprint('working')"),
            ("Wait.", f"import pathlib, time\\nwhile not pathlib.Path({GATE!r}).exists():\\n    time.sleep(0.05)\\n"
                      "print('gate open')"),
            ("Write.", "write_file('after_gate.txt', 'step 3 ran')"),
            ("Done.", "SUBMIT(result='through the gate')"),
        ])
''')


@pytest.fixture
def served(tmp_path):
    """(root, gate, stdio parameters): the factory module sits in tmp_path, as `test_server` expects it."""
    gate = tmp_path / "gate"
    (tmp_path / "lm_factory_for_test.py").write_text(FACTORY.replace("GATE_PATH", repr(str(gate))))
    root = tmp_path / "root"
    root.mkdir()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")])))
    params = StdioServerParameters(command=sys.executable, env=env, cwd=str(tmp_path), args=[
        "-m", "deepagent_magics.mcp", "--root", str(root), "--lm-factory", "lm_factory_for_test:make",
        "--max-depth", "0"])
    return root, gate, params


async def until(check, what: str):
    """Poll ``check()`` (async) until it returns something true; fail after `WAIT` seconds."""
    deadline = time.monotonic() + WAIT
    while True:
        value = await check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {WAIT} s: {what}")
        await anyio.sleep(0.1)


async def at_step_two(client, task_id):
    async def check():
        status = await client.get(task_id)
        return status if "step 2 running" in (status.status_message or "") else None
    return await until(check, "the run reached its second step")


async def record_status(client, workspace, wanted=None):
    """The status of the workspace's one run, from its record, once it is not running (list_runs, a plain call)."""
    async def check():
        runs = (await client.session.call_tool("list_runs", {"workspace": workspace})).structured_content["result"]
        return runs[0] if runs and runs[0]["status"] not in ("running", "pending") else None
    return await until(check, f"the run in {workspace} ended")


def test_run_task_as_a_task_over_stdio_polls_steps_and_fetches_what_a_plain_call_returns(served):
    root, gate, params = served

    async def scenario():
        async with task_client(stdio_client(params)) as client:
            tools = {tool.name: tool for tool in (await client.session.list_tools()).tools}
            created = await client.call_as_task("run_task", {"task": "wait, then write", "workspace": "ws"})
            working = await at_step_two(client, created.task.task_id)
            listed = await client.list()
            gate.touch()
            result = await client.result(created.task.task_id)
            after = await client.get(created.task.task_id)
            await until(lambda: anyio.to_thread.run_sync(lambda: bool(client.statuses)), "a status notification")
            plain = await client.session.call_tool("run_task", {"task": "wait, then write", "workspace": "plain"})
            return client.initialized, tools, created, working, listed, result, after, client.statuses, plain

    init, tools, created, working, listed, result, after, statuses, plain = anyio.run(scenario)
    assert init.protocol_version == TASKS_VERSION
    assert init.capabilities.tasks.requests.tools.call is not None  # the capability, for tools/call
    assert init.capabilities.tasks.list is not None and init.capabilities.tasks.cancel is not None
    assert TASK_TOOLS == {"run_task"} and tools["run_task"].execution.task_support == "optional"
    assert tools["list_runs"].execution is None and tools["get_run"].execution is None  # quick: plain calls only
    assert created.task.status == "working" and created.task.ttl == 60_000  # at once, before the run ended
    assert len(created.task.task_id) >= 32
    assert "1 of at most 20 steps done, step 2 running" in working.status_message  # its progress: steps so far
    assert "working on: wait for the gate" in working.status_message  # and the todo in progress
    assert working.status == "working"
    assert [task.task_id for task in listed.tasks] == [created.task.task_id]
    run = result.structured_content
    assert not result.is_error and run["status"] == "finished" and run["result"] == "through the gate"
    assert run["steps"] == 4 and run["files"] == ["after_gate.txt"]
    assert result.meta["io.modelcontextprotocol/related-task"] == {"taskId": created.task.task_id}
    assert set(run) == set(plain.structured_content) and plain.structured_content["status"] == "finished"
    assert after.status == "completed" and f"run {run['id']} ended finished after 4 steps" == after.status_message
    assert [(s.task_id, s.status) for s in statuses] == [(created.task.task_id, "completed")]
    assert (root / "ws" / "after_gate.txt").read_text() == "step 3 ran"


def test_a_cancelled_task_stops_its_run_and_has_no_result(served):
    root, gate, params = served

    async def scenario():
        async with task_client(stdio_client(params)) as client:
            created = await client.call_as_task("run_task", {"task": "wait forever", "workspace": "ws"})
            task_id = created.task.task_id
            await at_step_two(client, task_id)
            cancelled = await client.cancel(task_id)
            errors = []
            for request in (client.result, client.cancel):
                with pytest.raises(MCPError) as caught:
                    await request(task_id)
                errors.append(caught.value.error)
            record = await record_status(client, "ws")  # the run ended by itself: nobody opened the gate
            gate.touch()  # too late: nothing runs on
            await anyio.sleep(0.5)
            full = (await client.session.call_tool("get_run", {"run_id": record["id"], "workspace": "ws"}))
            return cancelled, errors, record, full.structured_content, await client.get(task_id)

    cancelled, errors, record, full, later = anyio.run(scenario)
    assert cancelled.status == "cancelled" and later.status == "cancelled"  # before the answer, and for good
    assert errors[0].code == -32602 and "was cancelled: it has no result" in errors[0].message
    assert errors[1].code == -32602 and "already in terminal status 'cancelled'" in errors[1].message
    assert record["status"] == "stopped" and record["steps"] == 2  # the run's record: stopped where it was
    assert "Stopped: the run was cancelled" in full["steps"][1]["output"]  # the waiting step was cut short
    assert not (root / "ws" / "after_gate.txt").exists()


def test_a_task_past_its_ttl_is_gone_and_its_run_stopped(served):
    root, gate, params = served

    async def scenario():
        async with task_client(stdio_client(params)) as client:
            created = await client.call_as_task("run_task", {"task": "wait", "workspace": "ws"}, task={"ttl": 1000})
            record = await record_status(client, "ws")

            async def expired():
                try:
                    await client.get(created.task.task_id)
                except MCPError as exc:
                    return exc.error
                return None
            return created, record, await until(expired, "the task expired")

    created, record, error = anyio.run(scenario)
    assert created.task.ttl == 1000
    assert record["status"] == "stopped"  # a task still working when its ttl passes is cancelled: its run stops
    assert error.code == -32602 and "no task" in error.message
    assert not (root / "ws" / "after_gate.txt").exists()


def test_over_http_a_task_outlives_its_connection_and_is_cancelled_with_the_token(served, tmp_path):
    root, gate, _ = served
    token = "t0k3n-" + "b" * 40
    context, url, log = http_server(tmp_path, root, token=token)

    async def first_connection():
        async with task_client(with_token(url, token)) as client:
            created = await client.call_as_task("run_task", {"task": "wait, then write", "workspace": "ws"})
            await at_step_two(client, created.task.task_id)
            return created.task.task_id  # and the connection is dropped, mid-run

    async def second_connection(task_id):
        async with task_client(with_token(url, token)) as client:
            status = await client.get(task_id)
            gate.touch()
            result = await client.result(task_id)
            gate.unlink()
            other = await client.call_as_task("run_task", {"task": "wait again", "workspace": "ws2"})
            await at_step_two(client, other.task.task_id)
            cancelled = await client.cancel(other.task.task_id)
            return status, result, cancelled, await record_status(client, "ws2")

    with context:
        task_id = anyio.run(first_connection)
        status, result, cancelled, record = anyio.run(second_connection, task_id)
        with pytest.raises(BaseException):  # no token: 401, no task
            anyio.run(_without_token, url, task_id)
    assert status.status == "working"  # still running after its connection went
    assert result.structured_content["status"] == "finished" and result.structured_content["steps"] == 4
    assert (root / "ws" / "after_gate.txt").read_text() == "step 3 ran"
    assert cancelled.status == "cancelled" and record["status"] == "stopped"
    assert token not in log.read_text()


async def _without_token(url, task_id):
    async with task_client(with_token(url, None)) as client:
        await client.get(task_id)


def test_the_server_holds_at_most_max_tasks_live(served):
    root, gate, params = served
    params.args += ["--max-tasks", "1"]

    async def scenario():
        async with task_client(stdio_client(params)) as client:
            first = await client.call_as_task("run_task", {"task": "wait", "workspace": "ws"})
            with pytest.raises(MCPError) as refused:
                await client.call_as_task("run_task", {"task": "one more", "workspace": "ws2"})
            await client.cancel(first.task.task_id)
            await record_status(client, "ws")  # its run has ended: the task no longer counts
            again = await client.call_as_task("run_task", {"task": "now there is room", "workspace": "ws3"})
            gate.touch()
            return refused.value.error, (await client.result(again.task.task_id)).structured_content

    refused, result = anyio.run(scenario)
    assert refused.code == -32600 and "already holds 1 live tasks" in refused.message
    assert result["status"] == "finished"
    assert not (root / "ws2").exists()  # the refused task ran nothing
