"""acp/sessions.py: a session's prompts are runs one after another, named by the session, each continuing the
last; the run's questions are the client's permission requests; a session is found again by its signed records.

The place here is the test's own IPython shell (`ShellPlace`): it runs the same ``%%deepagent`` cell a kernel of
the session's own gets (`server.launch.cell_code`, as `own_kernel.OwnKernel` sends it) with a scripted model,
so the runs, their event logs and their records are real; the places themselves are tested in
tests/acp/test_own_kernel.py and tests/acp/test_notebook_kernel.py, the whole agent over ACP in
tests/acp/test_protocol.py. The client is the one tests/acp drives the real agent with (`client.Recorder`).
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("acp")
from acp import RequestError  # noqa: E402

from deepagent_magics.acp.options import CELL_FLAGS, Options  # noqa: E402
from deepagent_magics.acp.own_kernel import Poll  # noqa: E402
from deepagent_magics.acp.sessions import Session, glob_safe  # noqa: E402
from deepagent_magics.core.run.event_kinds import APPROVAL_ASKED  # noqa: E402
from deepagent_magics.core.run.event_payloads import ApprovalAsked  # noqa: E402
from deepagent_magics.records.events import LogTail, events_path  # noqa: E402
from deepagent_magics.server.launch import cell_code  # noqa: E402
from deepagent_magics.testing import ScriptedLM  # noqa: E402

from .client import Recorder  # noqa: E402

STEPS = {"make x": [("Compute x.", "x = 41 + 1\nprint('x is', x)"), ("Done.", "SUBMIT(result=f'x = {x}')")],
         "double it": [("x is still here.", "SUBMIT(result=f'y = {x * 2}')")],
         "go on": [("Going on.", "SUBMIT(result='went on')")]}


class ShellPlace:
    """A session's place in this process's IPython shell: `start` runs the prompt's cell to its end; `poll`
    then reads its event log, as `OwnKernel.poll` does a kernel's."""

    def __init__(self, shell: Any, workspace: Path):
        self.shell, self.workspace = shell, workspace
        self.tail: LogTail | None = None
        self.error: str | None = None
        self.stopped = self.closed = 0

    def where(self) -> str:
        return "I work in the test's shell."

    async def start(self, run_id: str, task: str, flags: dict[str, Any], continues: str | None) -> None:
        more = ("--door", "acp") + (("--continue", continues) if continues else ("--new",))
        self.tail = LogTail(events_path(self.workspace, run_id))
        result = self.shell.run_cell(cell_code(run_id, task, self.workspace, flags, CELL_FLAGS, more))
        failed = result.error_before_exec or result.error_in_exec
        self.error = f"{type(failed).__name__}: {failed}" if failed else None

    async def poll(self) -> Poll:
        return Poll(events=self.tail.read(), ended=True, error=self.error)

    async def answer(self, text: str) -> None:
        raise AssertionError("the shell's runs ask nothing")

    async def stop(self) -> None:
        self.stopped += 1

    async def close(self) -> None:
        self.closed += 1


@pytest.fixture
def chat(ip, tmp_path):
    """A session on the shell with a scripted model; yields (session, the updates it sent)."""
    ip.user_ns["lm"] = ScriptedLM(scripts=STEPS)
    sent: list[Any] = []

    async def send(update: Any) -> None:
        sent.append(update)
        await asyncio.sleep(0)  # a real connection's write yields to the loop

    def make(session_id: str = "s1", client: Any = None, options: Options | None = None) -> Session:
        return Session(session_id, tmp_path, ShellPlace(ip, tmp_path), options or Options(lm_flag="lm"), send,
                       client or Recorder())

    return make, sent


def texts(sent: list[Any]) -> list[str]:
    return [u.content.text for u in sent if u.session_update in ("agent_message_chunk", "user_message_chunk")]


def record(folder: Path, run_id: str) -> dict:
    return json.loads((folder / ".deepagent" / "runs" / f"{run_id}.json").read_text())


def test_each_prompt_is_a_run_named_by_the_session_and_the_next_continues_it(chat, tmp_path):
    make, sent = chat
    session = make()
    first = asyncio.run(session.prompt("make x"))
    said = len(sent)
    second = asyncio.run(session.prompt("double it"))
    assert first.stop_reason == second.stop_reason == "end_turn" and first.usage.input_tokens > 0
    assert texts(sent)[0] == "I work in the test's shell.\n\n"  # where it works: said first, and once
    assert "I work in the test's shell.\n\n" not in texts(sent[said:])
    assert texts(sent)[-1] == "y = 84" and session.last_run == "s1-2" and session.turns == 2
    assert record(tmp_path, "s1-1")["config"]["door"] == "acp"
    assert record(tmp_path, "s1-2")["config"]["thread"] == "s1-1"  # the conversation of the first


def test_a_second_prompt_while_one_runs_is_refused_and_the_first_goes_on(chat):
    make, _ = chat
    session = make()

    async def both():
        return await asyncio.gather(session.prompt("make x"), session.prompt("double it"), return_exceptions=True)

    first, second = asyncio.run(both())
    assert isinstance(second, RequestError) and "already working on a prompt" in str(second.data)
    assert first.stop_reason == "end_turn" and session.turns == 1 and not session.busy


def test_a_cell_that_never_started_its_run_says_why_and_the_next_prompt_starts_anew(chat, tmp_path):
    make, sent = chat
    session = make(options=Options(settings={"max_iters": "many"}, lm_flag="lm"))
    done = asyncio.run(session.prompt("make x"))
    assert done.stop_reason == "end_turn" and session.last_run is None
    assert texts(sent)[-1].startswith("The run did not start: ") and "max-iters" in texts(sent)[-1]
    assert not (tmp_path / ".deepagent" / "runs" / "s1-1.json").exists()


def asked(**data: Any) -> dict[str, Any]:
    payload: ApprovalAsked = {"agent": "the agent", "step": 2, "code": "open('f', 'w')", "reasons": ["writes a file"],
                              "action": None}
    return {"kind": APPROVAL_ASKED, "run": "s1-1", "data": {**payload, **data}}


@pytest.mark.parametrize("option, answer", [("run", "y"), ("all", "a"), ("refuse", "n"), ("stop", "q"), (None, "q")])
def test_an_approval_is_the_clients_permission_request_and_its_answer_goes_back_as_typed(chat, option, answer):
    make, _ = chat
    client = Recorder(answer=option)
    session = make(client=client)
    session.asked = asked()
    assert asyncio.run(session._ask("Run it? [y/n/a/q] ")) == answer
    [request] = client.permissions
    call = request["tool_call"]
    assert call.title == "Run step 2? (writes a file)" and call.raw_input["code"] == "open('f', 'w')"
    assert "open('f', 'w')" in call.content[0].content.text and session.asked is None
    assert {o.option_id: o.kind for o in request["options"]} == {
        "run": "allow_once", "all": "allow_always", "refuse": "reject_once", "stop": "reject_always"}


def test_an_action_is_asked_by_its_name_and_input_the_agents_code_calls_is_not_asked(chat):
    make, _ = chat
    client = Recorder(answer="run")
    session = make(client=client)
    session.asked = asked(action="write /etc/hosts", reasons=[])
    assert asyncio.run(session._ask("?")) == "y"
    assert client.permissions[0]["tool_call"].title == "Allow: write /etc/hosts"
    assert asyncio.run(session._ask("name? ")) == "" and len(client.permissions) == 1  # no approval event: no one asks


def test_a_cancel_while_the_user_is_asked_withdraws_the_question_and_stops_the_place(chat):
    make, _ = chat

    class Waiting(Recorder):
        async def request_permission(self, **kwargs: Any) -> Any:
            await asyncio.Event().wait()  # the user never answers

    session = make(client=Waiting())

    async def scenario():
        await session.cancel()  # not busy: nothing to stop
        assert session.place.stopped == 0
        session.busy, session.asked = True, asked()
        question = asyncio.ensure_future(session._ask("?"))
        while session.permission is None:
            await asyncio.sleep(0)
        await session.cancel()
        return await asyncio.wait_for(question, 10)

    assert asyncio.run(scenario()) == "q"
    assert session.cancelled and session.place.stopped == 1
    asyncio.run(session.close())
    assert session.place.stopped == 2 and session.place.closed == 1  # a busy session is cancelled first


def test_a_session_is_loaded_from_its_signed_records_in_turn_order_and_continues(chat, tmp_path):
    make, sent = chat
    first = make()
    first.turns = 1  # its turns 2 and 10: in turn order, not in the order of their names
    asyncio.run(first.prompt("make x"))
    first.turns = 9
    asyncio.run(first.prompt("double it"))
    runs = tmp_path / ".deepagent" / "runs"
    shutil.copy(runs / "s1-2.json", runs / "s1-12.json")  # planted: its signature names another file
    shutil.copy(runs / "s1-2.json", runs / "s1-x.json")
    with pytest.raises(RequestError):
        asyncio.run(make("s9").load())
    sent.clear()
    again = make()
    asyncio.run(again.load())
    assert texts(sent) == ["make x", "x = 42", "double it", "y = 84"]
    assert (again.turns, again.last_run) == (10, "s1-10")
    asyncio.run(again.prompt("go on"))
    assert record(tmp_path, "s1-11")["config"]["thread"] == "s1-2" and texts(sent)[-1] == "went on"


def test_a_session_id_is_matched_literally_in_the_records_folder(tmp_path):
    (tmp_path / "a[1]-1.json").write_text("{}")
    (tmp_path / "a1-1.json").write_text("{}")
    assert [p.name for p in tmp_path.glob(f"{glob_safe('a[1]')}-*.json")] == ["a[1]-1.json"]
