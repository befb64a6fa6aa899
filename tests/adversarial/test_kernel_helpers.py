"""tests/kernels.py reports a cell as the kernel sent it: what eight kernel test files rely on.

A cell that mixes stdout and stderr, raises, asks for input, sets a payload, leaves an unread reply
on the shell channel, prints from a thread into another cell, or never ends: each must come back
from ``execute`` with the right status, streams, error, payload and messages, and a kernel started
by ``started_kernel`` must be gone when the block ends, however it ends.
"""

from __future__ import annotations

import time

import psutil
import pytest
from tests.kernels import Cell, execute, reply_to, started_kernel

pytestmark = pytest.mark.kernel


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    with started_kernel(tmp_path_factory.mktemp("helpers")) as (manager, client):
        yield manager, client


def test_stdout_stderr_and_an_error_are_told_apart(pair):
    _, client = pair
    cell = execute(client, "import sys\nprint('out-1')\nprint('err-1', file=sys.stderr, flush=True)\n"
                           "sys.stdout.flush()\nprint('out-2')\nraise ValueError('bad value 7')")
    assert isinstance(cell, Cell) and cell.status == "error"
    assert cell.stdout == "out-1\nout-2\n"
    assert "err-1\n" in cell.streams and "out-1\n" in cell.streams and "err-1" not in cell.stdout
    assert cell.error == "ValueError" and cell.evalue == "bad value 7"
    assert "bad value 7" in cell.output and "err-1" in cell.output  # streams and the traceback
    assert cell.reply["ename"] == "ValueError"
    assert all(m["parent_header"]["msg_id"] == cell.msg_id for m in cell.messages)
    assert cell.messages[-1]["msg_type"] == "status" and cell.messages[-1]["content"]["execution_state"] == "idle"


def test_a_cell_that_succeeds_has_no_error_and_keeps_its_payload(pair):
    _, client = pair
    cell = execute(client, "get_ipython().set_next_input('x = 1')\nprint('asked')")
    assert cell.status == "ok" and cell.error is None and cell.evalue is None and cell.stdout == "asked\n"
    assert [p for p in cell.payload if p.get("source") == "set_next_input" and p.get("text") == "x = 1"]
    assert execute(client, "print(2 + 2)").stdout == "4\n"


def test_input_requests_are_answered_in_order_and_none_sends_nothing(pair):
    manager, client = pair
    asked = []

    def answer(prompt, cell):
        asked.append(prompt)
        return {"first? ": "one", "second? ": "two"}[prompt]

    cell = execute(client, "print('before')\na = input('first? ')\nb = input('second? ')\nprint(a, b)",
                   allow_stdin=True, on_input=answer)
    assert cell.status == "ok" and cell.stdout.endswith("one two\n")
    assert asked == ["first? ", "second? "]

    def stop_instead(prompt, cell):
        manager.interrupt_kernel()  # the stop button instead of an answer
        return None

    cell = execute(client, "input('never answered? ')", allow_stdin=True, on_input=stop_instead)
    assert cell.status == "error" and cell.error == "KeyboardInterrupt"


def test_without_stdin_input_fails_at_once_instead_of_hanging(pair):
    _, client = pair
    started = time.monotonic()
    cell = execute(client, "input('anyone? ')", timeout=30, allow_stdin=False)
    assert cell.status == "error" and cell.error == "StdinNotImplementedError"
    assert time.monotonic() - started < 30


def test_an_earlier_unread_reply_is_passed_over(pair):
    _, client = pair
    first = client.execute("get_ipython().set_next_input('from first')\nprint('first')")  # left unread
    cell = execute(client, "print('second')")
    assert cell.stdout == "second\n" and cell.msg_id != first
    assert cell.payload == []  # the second cell's reply, not the first's
    assert {m["parent_header"]["msg_id"] for m in cell.strays} <= {first}
    assert "first\n" not in cell.stdout


def test_a_request_ipykernel_aborts_after_an_error_is_sent_again(pair):
    """A cell queued behind one that fails is answered "aborted" without running (stop_on_error)."""
    _, client = pair
    client.execute("import time\ntime.sleep(0.5)\nraise ValueError('the cell before')")  # left unread
    cell = execute(client, "ran_after_the_error = True\nprint('ran')")
    assert cell.status == "ok" and cell.stdout == "ran\n"
    assert execute(client, "print(ran_after_the_error)").stdout == "True\n"


def test_messages_of_other_parents_are_kept_as_strays(pair):
    _, client = pair
    execute(client, "import contextvars, threading\nold = contextvars.copy_context()")
    cell = execute(client, "t = threading.Thread(target=lambda: old.run(print, 'from an old cell'))\n"
                           "t.start(); t.join()\nimport sys; sys.stdout.flush()\nprint('mine')")
    assert "mine\n" in cell.stdout
    everything = "".join(m["content"].get("text", "") for m in cell.messages + cell.strays)
    assert "from an old cell" in everything


def test_a_cell_that_never_ends_fails_the_test_after_its_timeout(pair):
    manager, client = pair
    started = time.monotonic()
    with pytest.raises(AssertionError, match="did not end within 2 s: waiting"):
        execute(client, "import time\nprint('waiting', flush=True)\nwhile True:\n    time.sleep(0.05)", timeout=2)
    assert time.monotonic() - started < 20  # did not wait for the cell
    manager.interrupt_kernel()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # the interrupted cell's idle, then the kernel is free again
        cell = execute(client, "print('free')")
        if cell.status == "ok":
            break
    assert cell.stdout == "free\n"


def test_reply_to_an_unknown_request_fails_instead_of_hanging(pair):
    _, client = pair
    with pytest.raises(AssertionError, match="no shell reply"):
        reply_to(client, "no-such-request", timeout=1)


def test_started_kernel_is_shut_down_however_the_block_ends(tmp_path):
    with pytest.raises(RuntimeError, match="the test broke"):
        with started_kernel(tmp_path) as (manager, client):
            pid = manager.provisioner.process.pid
            assert execute(client, "import os\nprint(os.getcwd())").stdout.strip() == str(tmp_path)
            raise RuntimeError("the test broke")
    assert not manager.is_alive()
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
