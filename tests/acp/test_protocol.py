"""`deepagent acp` end to end (acp/protocol.py and the sessions it opens): the ACP SDK's own client spawns it over
stdio, with a scripted model.

Each session runs its prompts in a kernel of its own in its cwd (no Jupyter Server here): initialise,
new session, a turn with every kind of update, a second prompt continuing the first, cancel, a
permission asked and refused, a session loaded from its records, and bad input answered with errors.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

pytest.importorskip("acp")
from acp import RequestError, text_block  # noqa: E402
from acp.schema import ImageContentBlock, ResourceContentBlock  # noqa: E402

from .client import Recorder, agent, script  # noqa: E402

pytestmark = [pytest.mark.kernel, pytest.mark.subprocess, pytest.mark.timeout(300)]

TURN = {"scripts": {
    "make x": [["Plan the work, then compute x.",
                "write_todos([{'content': 'compute x', 'status': 'in_progress'}, "
                "{'content': 'write notes', 'status': 'pending'}])\nx = 41 + 1\nprint('x is', x)"],
               ["Write the notes.", "write_file('notes.md', 'x is 42\\n')\nprint('wrote notes')"],
               ["Done.", "SUBMIT(result=f'x = {x}')"]],
    "double it": [["x is still here.", "y = x * 2\nSUBMIT(result=f'y = {y}')"]],
}}


def record(folder: Path, run_id: str) -> dict:
    return json.loads((folder / ".deepagent" / "runs" / f"{run_id}.json").read_text())


def run(coro):
    return asyncio.run(coro)


def test_a_turn_is_told_with_acps_own_updates_and_a_second_prompt_continues_it(tmp_path):
    client = Recorder()

    async def scenario():
        async with agent(client, tmp_path, "--lm", script(tmp_path, TURN)) as (conn, _):
            session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
            first = await conn.prompt(session_id=session.session_id, prompt=[text_block("make x")])
            count = len(client.updates)
            second = await conn.prompt(session_id=session.session_id, prompt=[text_block("double it")])
            return session.session_id, first, second, count

    sid, first, second, count = run(scenario())
    assert first.stop_reason == "end_turn" and second.stop_reason == "end_turn"
    kinds = client.kinds()
    # The first words say where the code runs; then the model's text, the plan, the steps and the file.
    assert kinds[0] == "agent_message_chunk" and "kernel of my own" in client.of("agent_message_chunk")[0].content.text
    assert str(tmp_path) in client.of("agent_message_chunk")[0].content.text
    assert {"plan", "tool_call", "tool_call_update"} <= set(kinds)
    plan = client.of("plan")[0]
    assert [(e.content, e.status) for e in plan.entries] == [("compute x", "in_progress"), ("write notes", "pending")]
    steps = [u for u in client.of("tool_call") if u.kind == "execute"]
    assert [s.title for s in steps][:3] == ["Step 1", "Step 2", "Step 3"]
    assert "x = 41 + 1" in steps[0].content[0].content.text and steps[0].raw_input["code"].startswith("write_todos")
    outputs = {u.tool_call_id: u for u in client.of("tool_call_update")}
    assert "x is 42" in outputs[steps[0].tool_call_id].raw_output["output"]
    assert outputs[steps[0].tool_call_id].status == "completed"
    edit = [u for u in client.of("tool_call") if u.kind == "edit"]
    assert len(edit) == 1 and edit[0].content[0].type == "diff"
    assert edit[0].content[0].path == str((tmp_path / "notes.md").resolve()) and edit[0].content[0].new_text == "x is 42\n"
    texts = [u.content.text for u in client.of("agent_message_chunk")]
    assert "Plan the work, then compute x.\n\n" in texts
    assert texts[texts.index("Done.\n\n") + 1] == "x = 42"  # the result is the turn's last message
    assert first.usage is not None and first.usage.input_tokens > 0 and first.usage.total_tokens > first.usage.input_tokens
    # The second prompt: the same kernel (x is defined) and the same conversation (its record's thread).
    assert [u.content.text for u in client.of("agent_message_chunk")][-1] == "y = 84"
    assert "kernel of my own" not in "".join(u.content.text for _, u in client.updates[count:]
                                             if u.session_update == "agent_message_chunk")  # said once
    one, two = record(tmp_path, f"{sid}-1"), record(tmp_path, f"{sid}-2")
    assert one["status"] == two["status"] == "finished"
    assert two["config"]["thread"] == one["config"]["thread"] == f"{sid}-1"
    assert one["config"]["door"] == "acp"  # the prompt said where its code runs (a kernel of the conversation's)


def test_cancel_stops_the_run_the_turn_ends_cancelled_and_no_kernel_is_left(tmp_path):
    psutil = pytest.importorskip("psutil")
    steps = {"scripts": {"wait": [["Wait a long time.", "import os, time\nprint(os.getpid(), flush=True)\n"
                                                        "open('pid', 'w').write(str(os.getpid()))\ntime.sleep(600)"],
                                  ["Never reached.", "SUBMIT(result='slept')"]],
                         "again": [["Still here.", "SUBMIT(result='back')"]]}}
    client = Recorder()

    async def scenario():
        async with agent(client, tmp_path, "--lm", script(tmp_path, steps)) as (conn, process):
            session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
            turn = asyncio.ensure_future(conn.prompt(session_id=session.session_id, prompt=[text_block("wait")]))
            while not (tmp_path / "pid").exists():
                await asyncio.sleep(0.05)
            await conn.cancel(session_id=session.session_id)
            cancelled = await asyncio.wait_for(turn, 60)  # not the 600 s the step sleeps
            again = await conn.prompt(session_id=session.session_id, prompt=[text_block("again")])
            return session.session_id, cancelled, again, process

    sid, cancelled, again, process = run(scenario())
    assert cancelled.stop_reason == "cancelled"
    assert record(tmp_path, f"{sid}-1")["status"] == "interrupted"
    assert again.stop_reason == "end_turn" and client.messages().endswith("back")
    kernel = int((tmp_path / "pid").read_text())
    assert process.returncode is not None
    try:
        gone = psutil.Process(kernel).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        gone = True
    assert gone, "the session's kernel outlived the agent"
    left = []  # nor any kernel it started (the sub-agents' pool a %%deepagent cell keeps warm)
    for each in psutil.process_iter(["cmdline", "status"]):
        if f"deepagent-kernels-{kernel}-" in " ".join(each.info["cmdline"] or []) and \
                each.info["status"] != psutil.STATUS_ZOMBIE:
            left.append(each)
    assert left == [], left


def test_an_approval_is_a_permission_request_with_the_code_and_a_refusal_is_honoured(tmp_path):
    steps = {"scripts": {"risky": [["Write a file.", "open('made.txt', 'w').write('no')"],
                                   ["Report.", "SUBMIT(result='done: ' + str(__import__('os').path.exists('made.txt')))"]]}}
    client = Recorder(answer="refuse")

    async def scenario():
        async with agent(client, tmp_path, "--lm", script(tmp_path, steps), "--approve", "always") as (conn, _):
            session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
            return await conn.prompt(session_id=session.session_id, prompt=[text_block("risky")])

    response = run(scenario())
    assert response.stop_reason == "end_turn"
    assert len(client.permissions) >= 1
    asked = client.permissions[0]
    assert "open('made.txt', 'w')" in asked["tool_call"].content[0].content.text
    assert asked["tool_call"].raw_input["code"] == "open('made.txt', 'w').write('no')"
    assert {o.kind for o in asked["options"]} == {"allow_once", "allow_always", "reject_once", "reject_always"}
    step = [u for u in client.of("tool_call") if u.kind == "execute"][0]
    assert asked["tool_call"].tool_call_id == step.tool_call_id  # the step the chat already shows
    output = {u.tool_call_id: u for u in client.of("tool_call_update")}[step.tool_call_id].raw_output["output"]
    assert output.startswith("Not run: the user refused this block")
    assert not (tmp_path / "made.txt").exists()


def test_an_action_is_asked_with_its_resolved_target(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    steps = {"scripts": {"note": [["Write outside.", f"open({str(outside / 'n.txt')!r}, 'w').write('hi')"],
                                  ["Report.", "SUBMIT(result='ok')"]]}}
    client = Recorder(answer="run")

    async def scenario():
        async with agent(client, work, "--lm", script(tmp_path, steps), "--approve", "risky") as (conn, _):
            session = await conn.new_session(cwd=str(work), mcp_servers=[])
            return await conn.prompt(session_id=session.session_id, prompt=[text_block("note")])

    assert run(scenario()).stop_reason == "end_turn"
    said = json.dumps([p["tool_call"].model_dump(mode="json") for p in client.permissions])
    assert str(outside / "n.txt") in said and (outside / "n.txt").read_text() == "hi"  # asked, allowed, done


def test_a_session_is_loaded_from_its_records_and_continues(tmp_path):
    steps = {"scripts": {"first task": [["Remember.", "SUBMIT(result='first answer')"]],
                         "second task": [["Go on.", "SUBMIT(result='second answer')"]]}}
    lm = script(tmp_path, steps)

    async def first():
        async with agent(Recorder(), tmp_path, "--lm", lm) as (conn, _):
            session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
            await conn.prompt(session_id=session.session_id, prompt=[text_block("first task")])
            return session.session_id

    sid = run(first())
    client = Recorder()

    async def second():
        async with agent(client, tmp_path, "--lm", lm) as (conn, _):
            with pytest.raises(RequestError):
                await conn.load_session(cwd=str(tmp_path), session_id="20000101-000000-deadbeef", mcp_servers=[])
            await conn.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
            for _ in range(200):  # notifications sent before the response: handled as tasks of their own
                if len(client.updates) >= 2:
                    break
                await asyncio.sleep(0.05)
            replayed = list(client.kinds())
            await conn.prompt(session_id=sid, prompt=[text_block("second task")])
            return replayed

    replayed = run(second())
    assert replayed == ["user_message_chunk", "agent_message_chunk"]
    assert client.of("user_message_chunk")[0].content.text == "first task"
    assert client.of("agent_message_chunk")[0].content.text == "first answer"
    assert client.messages().endswith("second answer")
    assert record(tmp_path, f"{sid}-2")["config"]["thread"] == f"{sid}-1"


def test_bad_input_is_an_acp_error_and_the_agent_goes_on(tmp_path):
    steps = {"scripts": {"fine": [["Fine.", "SUBMIT(result='still serving')"]]}}
    client = Recorder()

    async def scenario():
        async with agent(client, tmp_path, "--lm", script(tmp_path, steps)) as (conn, process):
            errors = {}
            for name, call in {
                "unknown session": conn.prompt(session_id="nope", prompt=[text_block("fine")]),
                "bad cwd": conn.new_session(cwd="relative/dir", mcp_servers=[]),
            }.items():
                with pytest.raises(RequestError) as caught:
                    await call
                errors[name] = caught.value
            session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
            sid = session.session_id
            for name, blocks in {
                "no text": [text_block("   ")],
                "image": [text_block("look"), ImageContentBlock(type="image", data="AAAA", mime_type="image/png")],
                "missing file": [text_block("read"), ResourceContentBlock(type="resource_link", name="gone",
                                                                          uri=(tmp_path / "gone.csv").as_uri())],
                "remote link": [text_block("read"), ResourceContentBlock(type="resource_link", name="x",
                                                                         uri="https://example.com/x.csv")],
            }.items():
                with pytest.raises(RequestError) as caught:
                    await conn.prompt(session_id=sid, prompt=blocks)
                errors[name] = caught.value
            with pytest.raises(RequestError) as caught:  # malformed params, as a careless client sends them
                await conn._conn.send_request("session/prompt", {"sessionId": sid, "prompt": "not a list"})
            errors["malformed"] = caught.value
            process.stdin.write(b"this is not JSON\n{\"jsonrpc\": \"2.0\", \"id\": 99}\n")
            await process.stdin.drain()
            done = await conn.prompt(session_id=sid, prompt=[text_block("fine")])
            return errors, done, process

    errors, done, process = run(scenario())
    assert all(error.code == -32602 for error in errors.values()), {k: (e.code, str(e)) for k, e in errors.items()}
    assert "no session 'nope'" in errors["unknown session"].data["message"]
    assert "no text" in errors["no text"].data["message"]
    assert "not image" in errors["image"].data["message"]
    assert "no such file" in errors["missing file"].data["message"]
    assert "only local files" in errors["remote link"].data["message"]
    assert done.stop_reason == "end_turn" and client.messages().endswith("still serving")
    assert not (tmp_path / ".deepagent" / "runs").exists() or len(list((tmp_path / ".deepagent" / "runs").glob(
        "*.json"))) == 1  # no refused prompt started a run


def test_a_sub_agent_is_a_tool_call_and_its_steps_are_nested_under_it(tmp_path):
    steps = {"scripts": {"ask a helper": [["Delegate the sum.", "r = delegate('CHILD-ACP: add two and two')\nprint(r)"],
                                          ["Done.", "SUBMIT(result='helper said ' + r)"]],
                         "CHILD-ACP": [["Add.", "total = 2 + 2\nprint(total)"], ["Answer.", "SUBMIT(result=str(total))"]]}}
    client = Recorder()

    async def scenario():
        async with agent(client, tmp_path, "--lm", script(tmp_path, steps)) as (conn, _):
            session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
            return await conn.prompt(session_id=session.session_id, prompt=[text_block("ask a helper")])

    assert run(scenario()).stop_reason == "end_turn"
    [helper] = [u for u in client.of("tool_call") if u.kind == "think"]
    assert helper.title == "Sub-agent: CHILD-ACP: add two and two" and helper.status == "in_progress"
    root_step = [u for u in client.of("tool_call") if u.kind == "execute" and u.title == "Step 1"][0]
    assert helper.field_meta["deepagent"]["parent"] == root_step.tool_call_id
    nested = [u for u in client.of("tool_call") if u.kind == "execute" and u.field_meta]
    assert [u.title.split(" · ")[1] for u in nested] == ["step 1", "step 2"]
    assert all(u.field_meta["deepagent"]["parent"] == helper.tool_call_id for u in nested)
    assert "total = 2 + 2" in nested[0].content[0].content.text
    finished = [u for u in client.of("tool_call_update") if u.tool_call_id == helper.tool_call_id]
    assert finished[-1].status == "completed" and finished[-1].raw_output["result"] == "4"
    assert client.messages().endswith("helper said 4")
    assert "Add.\n\n" not in [u.content.text for u in client.of("agent_message_chunk")]  # the chat's text is the root's
