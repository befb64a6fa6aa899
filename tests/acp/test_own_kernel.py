"""acp/own_kernel.py: a session with no notebook runs each prompt as a ``%%deepagent`` cell in a kernel of its own,
in its folder: the run's events are read from its log as it goes, its questions are the cell's input requests,
a cancel interrupts it (or shuts down a kernel that does not heed it), and closing ends the kernel.

Real kernels (``jupyter_client``), set up with a scripted model as ``deepagent acp --lm scripted:FILE`` sets
one up (`cli/acp.py`); no ACP connection (tests/acp/test_protocol.py drives the whole agent).
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import psutil
import pytest

pytest.importorskip("acp")
from deepagent_magics.acp import own_kernel  # noqa: E402
from deepagent_magics.acp.own_kernel import OwnKernel, Poll  # noqa: E402
from deepagent_magics.records.events import events_path  # noqa: E402

pytestmark = [pytest.mark.kernel, pytest.mark.timeout(300)]


def kernel(folder: Path, scripts: dict) -> OwnKernel:
    path = folder / "steps.json"
    path.write_text(json.dumps({"scripts": scripts}))
    setup = ("__import__('dspy').configure(lm=__import__('deepagent_magics.cli.models', fromlist=['model_from_spec'])"
             f".model_from_spec({'scripted:' + str(path)!r}))")
    return OwnKernel(folder, folder, setup)


async def follow(place: OwnKernel, answers: tuple[str, ...] = ()) -> tuple[list[dict], list[str], Poll]:
    """The events and questions of the running cell until it ends (the questions answered with ``answers``, in turn,
    the last for the rest)."""
    events, questions = [], []
    while True:
        poll = await place.poll()
        events += poll.events
        if poll.question is not None:
            questions.append(poll.question)
            await place.answer(answers[min(len(questions), len(answers)) - 1])
        if poll.ended:
            return events, questions, poll
        await asyncio.sleep(0.05)


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def finished(events: list[dict]) -> dict:
    return [e for e in events if e["kind"] == "run_finished" and e["depth"] == 0][-1]["data"]


def test_each_prompt_runs_in_the_same_kernel_and_its_events_are_read_as_they_are_written(tmp_path):
    place = kernel(tmp_path, {"make x": [["Compute.", "x = 41 + 1\nprint('x is', x)"], ["Done.", "SUBMIT(result=x)"]],
                              "use x": [["Still here.", "SUBMIT(result=x * 2)"]]})

    async def scenario():
        try:
            await place.start("t-1", "make x", {}, None)
            first = await asyncio.wait_for(follow(place), 120)
            pid = place.manager.provisioner.pid
            await place.start("t-2", "use x", {}, "t-1")
            return first, await asyncio.wait_for(follow(place), 120), pid
        finally:
            await place.close()

    (events, questions, poll), (again, _, last), pid = asyncio.run(scenario())
    assert questions == [] and poll.error is None and [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert events[0]["kind"] == "run_started" and finished(events)["status"] == "finished"
    assert finished(again)["result"] == "84" and last.error is None  # the same namespace: x was still there
    assert "kernel of my own" in place.where() and str(tmp_path) in place.where()
    assert place.manager is None and gone(pid)


def test_a_log_planted_before_the_run_began_is_not_read(tmp_path):
    place = kernel(tmp_path, {"go": [["Go.", "SUBMIT(result='real')"]]})
    planted = events_path(tmp_path, "t-1")
    planted.parent.mkdir(parents=True, exist_ok=True)
    planted.write_text(json.dumps({"seq": 1, "time": 0, "kind": "run_finished", "run": "t-1", "parent": None,
                                   "depth": 0, "data": {"status": "finished", "result": "planted"}}) + "\n")

    async def scenario():
        try:
            await place.start("t-1", "go", {}, None)
            return await asyncio.wait_for(follow(place), 120)
        finally:
            await place.close()

    events, _, _ = asyncio.run(scenario())
    assert [e["data"].get("result") for e in events if e["kind"] == "run_finished"] == ["real"]


def test_an_approval_is_the_cells_input_request_and_the_answer_is_the_users(tmp_path):
    place = kernel(tmp_path, {"risky": [["Write.", "open('made.txt', 'w').write('no')"],
                                        ["Report.", "SUBMIT(result=__import__('os').path.exists('made.txt'))"]]})

    async def scenario():
        try:
            await place.start("t-1", "risky", {"approve": "always"}, None)
            return await asyncio.wait_for(follow(place, answers=("n", "y")), 120)
        finally:
            await place.close()

    events, questions, poll = asyncio.run(scenario())
    assert len(questions) == 2 and questions[0].startswith("Run it?") and poll.error is None
    assert [e["data"]["decision"] for e in events if e["kind"] == "approval"] == ["refused", "approved"]
    assert finished(events)["result"] == "False" and not (tmp_path / "made.txt").exists()


def test_a_cancel_interrupts_the_cell_and_the_run_ends_interrupted(tmp_path):
    # A long sleep: the interrupt's SIGINT may land on another thread of the kernel; the step's sleep sleeps in
    # slices, so the main thread handles it (forced in tests/interpreters/time_limit/test_limit.py).
    place = kernel(tmp_path, {"wait": [["Wait.", "open('started', 'w')\nimport time\ntime.sleep(600)"],
                                       ["Never.", "SUBMIT(result='slept')"]]})

    async def scenario():
        try:
            await place.start("t-1", "wait", {}, None)
            events = []
            while not (tmp_path / "started").exists():
                events += (await place.poll()).events
                await asyncio.sleep(0.05)
            await place.stop()
            more, _, poll = await asyncio.wait_for(follow(place), 60)
            return events + more, poll, place.manager is not None
        finally:
            await place.close()

    events, poll, kept = asyncio.run(scenario())
    assert finished(events)["status"] == "interrupted" and kept  # the kernel lives on for the next prompt


def test_a_kernel_that_does_not_heed_the_cancel_is_shut_down_and_the_turn_ends(tmp_path, monkeypatch):
    monkeypatch.setattr(own_kernel, "STOP_GRACE", 2.0)
    place = kernel(tmp_path, {"stuck": [["Ignore interrupts.", "import os, signal, time\n"
                                         "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                                         "open('pid', 'w').write(str(os.getpid()))\ntime.sleep(600)"]]})

    async def scenario():
        try:
            await place.start("t-1", "stuck", {}, None)
            while not (tmp_path / "pid").exists():
                await place.poll()
                await asyncio.sleep(0.05)
            await place.stop()
            return await asyncio.wait_for(follow(place), 60), place.manager is None
        finally:
            await place.close()  # (also when this test fails: a kernel that ignores SIGINT outlives its host)

    (_, _, poll), shut_down = asyncio.run(scenario())
    pid = int((tmp_path / "pid").read_text())
    assert poll.ended and poll.error == "the kernel was shut down" and shut_down
    assert gone(pid)


def test_a_kernel_that_cannot_be_set_up_says_why_and_is_shut_down_on_close(tmp_path):
    place = OwnKernel(tmp_path, tmp_path, "raise ValueError('no model here')")

    async def scenario():
        with pytest.raises(RuntimeError, match="could not be set up: ValueError: no model here"):
            await place.start("t-1", "task", {}, None)
        pid = place.manager.provisioner.pid
        await place.close()
        return pid

    pid = asyncio.run(scenario())
    assert place.manager is None and gone(pid)


def test_the_servers_access_is_not_in_the_kernels_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("DEEPAGENT_JUPYTER_TOKEN", "server-token-not-for-the-agent")
    monkeypatch.setenv("DEEPAGENT_KEPT", "kept")
    place = OwnKernel(tmp_path, tmp_path, "import os\nassert 'DEEPAGENT_JUPYTER_TOKEN' not in os.environ\n"
                                          "assert os.environ['DEEPAGENT_KEPT'] == 'kept'\nassert os.getcwd() == "
                                          f"{str(tmp_path)!r}")

    async def scenario():
        try:
            await place._ready()  # the set-up code's asserts run in the kernel
        finally:
            await place.close()

    asyncio.run(scenario())
    assert os.environ["DEEPAGENT_JUPYTER_TOKEN"]  # the host's own is untouched
