"""MCP Tasks against a hostile or careless client, and a cancelled run whose code fights back.

Every bad request is an MCP error with a short message, nothing runs, and the server keeps serving:
ttl values a client should never send (negative, NaN and Infinity in the raw JSON, huge, not a
number), task ids that name nothing (unknown, empty, a megabyte, the wrong type), a task asked of a
tool that does not run as one. A cancelled run stops even when its step catches every exception, in
the main thread or a worker; a server that stops takes its working runs down with it (no orphan).
"""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from pathlib import Path

import anyio
import pytest
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

from deepagent_magics import DeepAgent
from deepagent_magics.core.run.run import Run
from deepagent_magics.mcp.tasks import TaskStore
from deepagent_magics.testing import ScriptedLM
from tests.adversarial.test_time_limits import HOSTILE
from tests.mcp.task_client import task_client
from tests.mcp.test_server import http_server
from tests.mcp.test_task_protocol import at_step_two, served  # noqa: F401 - the fixture: a gated scripted agent

pytestmark = pytest.mark.server

BAD_TTLS = [-1, 0, 999, 86_400_001, 10 ** 30, 1e300, 1.5, "60000", True, [], {"nested": 1}]
BOUND = 30  # seconds: a cancelled step that fights back is still stopped well within this


def test_bad_ttls_and_task_ids_are_mcp_errors_nothing_runs_and_the_server_keeps_serving(served):  # noqa: F811
    root, _, params = served

    async def scenario():
        async with task_client(stdio_client(params)) as client:
            errors = []
            for ttl in BAD_TTLS:
                with pytest.raises(MCPError) as caught:
                    await client.call_as_task("run_task", {"task": "x", "workspace": "ws"}, task={"ttl": ttl})
                errors.append(("ttl", ttl, caught.value.error))
            for task in ("a string", [60_000], 7):
                with pytest.raises(MCPError) as caught:
                    await client.call_as_task("run_task", {"task": "x", "workspace": "ws"}, task=task)
                errors.append(("task", task, caught.value.error))
            for name in ("list_runs", "get_run", "no_such_tool"):
                with pytest.raises(MCPError) as caught:
                    await client.call_as_task(name, {})
                errors.append(("tool", name, caught.value.error))
            for method in ("tasks/get", "tasks/result", "tasks/cancel"):
                for params_ in ({"taskId": "no-such-task"}, {"taskId": ""}, {"taskId": "x" * 1_000_000},
                                {"taskId": 42}, {"taskId": None}, {}, {"taskId": "../../etc/passwd"}):
                    with pytest.raises(MCPError) as caught:
                        await client.raw(method, params_)
                    errors.append((method, str(params_)[:40], caught.value.error))
            with pytest.raises(MCPError) as caught:
                await client.raw("tasks/list", {"cursor": "not-a-cursor"})
            errors.append(("tasks/list", "cursor", caught.value.error))
            listed = await client.list()
            still = await client.session.call_tool("list_runs", {})
            failing = []  # the tool's own refusals: a task that fails with the same result a plain call gets
            for arguments in ({"task": "   "}, {"task": "x", "workspace": "../outside"}):
                created = await client.call_as_task("run_task", arguments)
                failing.append((await client.result(created.task.task_id), await client.get(created.task.task_id),
                                await client.session.call_tool("run_task", arguments)))
            return errors, listed, still, failing

    errors, listed, still, failing = anyio.run(scenario)
    for what, value, error in errors:
        wanted = -32601 if what == "tool" else -32602
        assert error.code == wanted, (what, value, error)
        assert len(error.message) < 300, (what, value)  # a megabyte id is not echoed back
    ttl_messages = [error.message for what, _, error in errors if what == "ttl"]
    assert all("whole number of milliseconds from 1000 to 86400000" in m for m in ttl_messages)
    assert listed.tasks == [] and not still.is_error  # nothing was created; the server still serves
    assert not (root / "ws").exists()  # and nothing ran
    for (result, status, plain), said in zip(failing, ("task is empty", "outside the server's root")):
        assert result.is_error and said in result.content[0].text
        assert result.content == plain.content and plain.is_error
        assert status.status == "failed" and said in status.status_message
    assert not (root.parent / "outside").exists()


def test_nan_and_infinity_in_the_raw_json_are_mcp_errors(served, tmp_path):  # noqa: F811
    """NaN and Infinity are not JSON, but Python's parser reads them: a ttl of either is refused, not a crash."""
    root, _, _ = served
    token = "t0k3n-" + "c" * 40
    context, url, _ = http_server(tmp_path, root, token=token)

    def post(body, session=None):
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                   "Authorization": f"Bearer {token}"}
        if session:
            headers.update({"mcp-session-id": session, "mcp-protocol-version": "2025-11-25"})
        request = urllib.request.Request(url, data=body.encode(), method="POST", headers=headers)
        with urllib.request.urlopen(request, timeout=30) as response:
            text = response.read().decode()
            data = [line[5:] for line in text.splitlines() if line.startswith("data:")]
            return response.headers.get("mcp-session-id"), json.loads(data[0]) if data else None

    with context:
        session, answer = post(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "hostile", "version": "1"}}}))
        assert answer["result"]["capabilities"]["tasks"]["requests"]["tools"]["call"] == {}
        post(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}), session)
        answers = [post('{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "run_task", '
                        '"arguments": {"task": "x", "workspace": "ws"}, "task": {"ttl": %s}}}' % token_, session)[1]
                   for token_ in ("NaN", "Infinity", "-Infinity", "1e999")]
        _, listed = post('{"jsonrpc": "2.0", "id": 3, "method": "tasks/list", "params": {}}', session)
    for answer in answers:
        assert answer["error"]["code"] == -32602 and "whole number of milliseconds" in answer["error"]["message"]
    assert listed["result"]["tasks"] == []
    assert not (root / "ws").exists()


def cancelled_while_fighting(code, tmp_path):
    """A real run whose first step fights any exception; the MCP task it runs as is cancelled mid-step."""
    lm = ScriptedLM([("Fight.", code), ("Never reached.", "SUBMIT(result='not stopped')")])
    agent = DeepAgent(lm=lm, workspace=tmp_path, timeout=600)  # far longer than the test: only the cancel stops it
    box = {}

    async def main():
        task = TaskStore().create("stdio", 60_000, "run_task")
        run = Run("fight", profile=agent.profile)

        def work():
            task.attach(run, 20)
            try:
                box["run"] = agent.run("fight", {}, run=run)
            finally:
                task.detach()

        worker = threading.Thread(target=work, daemon=True)  # broken, it would hold the test process
        worker.start()
        while run.open_step is None:
            await anyio.sleep(0.05)
        await anyio.sleep(0.3)  # into the fight
        started = time.monotonic()
        task.cancel()
        await anyio.to_thread.run_sync(worker.join, BOUND)
        box["alive"], box["elapsed"] = worker.is_alive(), time.monotonic() - started

    anyio.run(main)
    return box


@pytest.mark.parametrize("case", ["bare except around sleep", "pure-Python loop with bare except",
                                  "nested handlers in a busy loop", "a finally that loops",
                                  "a with-statement that swallows"])
def test_a_cancelled_run_stops_even_when_its_code_catches_everything(tmp_path, case):
    box = cancelled_while_fighting(HOSTILE[case], tmp_path)
    assert not box["alive"], "the run's thread never ended"
    run = box["run"]
    assert run.status == "stopped" and run.result is None
    assert "Stopped: the run was cancelled" in run.steps[0].output
    assert len(run.steps) == 1  # the next step was never asked for
    assert box["elapsed"] < BOUND


def test_a_server_that_stops_stops_its_working_runs(served):  # noqa: F811
    root, _, params = served

    async def scenario():
        async with task_client(stdio_client(params)) as client:
            created = await client.call_as_task("run_task", {"task": "wait for ever", "workspace": "ws"})
            await at_step_two(client, created.task.task_id)
        # the client has closed the server's stdin: the server ends, and with it the run

    anyio.run(scenario)
    records = [json.loads(path.read_text()) for path in (root / "ws" / ".deepagent" / "runs").glob("*.json")]
    assert [(r["status"], len(r["steps"])) for r in records] == [("stopped", 2)]
    assert not servers_for(root), "the server process outlived its client"


def servers_for(root):
    """The processes whose command line is an MCP server for ``root``."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # ended meanwhile
            continue
        if "deepagent_magics.mcp" in text and str(root) in text:
            found.append(text)
    return found
