"""Steering a run while it works (issue 11, part 2), at the core: the run tree's inbox.

The dashboard's controls post to the inbox from a kernel thread while the cell runs
(tests/display/test_subshell.py, tests/display/test_controls_in_browser.py); here the posts come from the
agent's own steps, or from another thread while a step sleeps, and the effects are checked on the
run and on the LM requests: the run stops after the current step; the next request (and every one
after) shows the note; the agent's next ``read_todos()`` returns the edited list.
"""

from __future__ import annotations

import threading
import time

import pytest

from deepagent_magics import DeepAgent
from deepagent_magics.core.run.run import Run
from deepagent_magics.core.policy.steering import USER_NOTE, check_todos, steering_of
from deepagent_magics.testing import ScriptedLM


def start(steps, tmp_path, **kwargs):
    """A run whose namespace holds its own inbox (``inbox``), so scripted steps can post to it."""
    run = Run("steer me")
    namespace = {"inbox": steering_of(run, create=True)}
    lm = ScriptedLM(steps, replies="final", **kwargs)
    return lm, run, namespace


def test_stop_after_this_step_ends_the_run_stopped_and_starts_no_further_call(tmp_path):
    steps = [("One.", "a = 1"), ("Two.", "b = 2\ninbox.request_stop()\nprint('finishing this step')"),
             ("Three.", "c = 3"), ("Done.", "SUBMIT(result='never')")]
    lm, run, namespace = start(steps, tmp_path)
    DeepAgent(lm=lm, workspace=tmp_path).run("task", namespace=namespace, run=run)
    assert run.status == "stopped" and "stopped by the user after step 2" in run.error
    assert len(lm.requests) == 2 and len(run.steps) == 2  # the step it was in finished; no third request
    assert run.steps[1].output.strip() == "finishing this step"
    assert namespace["a"] == 1 and namespace["b"] == 2 and "c" not in namespace  # everything kept


def test_stop_from_another_thread_while_a_step_is_running(tmp_path):
    steps = [("Slow.", "import time\ntime.sleep(1.0)\nslow_done = True")] + [("More.", "x = 1")] * 5
    lm, run, namespace = start(steps, tmp_path)
    clicker = threading.Timer(0.3, namespace["inbox"].request_stop)
    clicker.start()
    DeepAgent(lm=lm, workspace=tmp_path).run("task", namespace=namespace, run=run)
    assert run.status == "stopped" and len(run.steps) == 1 and namespace["slow_done"] is True


def test_a_note_reaches_the_next_lm_request_and_every_one_after(tmp_path):
    steps = [("One.", "inbox.send_note('Use the 2023 figures, not 2022.')"), ("Two.", "x = 2"),
             ("Three.", "SUBMIT(result='ok')")]
    lm, run, namespace = start(steps, tmp_path)
    events = []
    DeepAgent(lm=lm, workspace=tmp_path).run("task", namespace=namespace, run=run,
                                              listeners=[lambda e: events.append(e) if e.kind == USER_NOTE else None])
    users = [request["user"] for request in lm.requests]
    assert "2023 figures" not in users[0]
    assert "Use the 2023 figures, not 2022." in users[1] and "Use the 2023 figures" in users[2]
    assert "Notes from the user" in users[1]
    assert [e.data["note"] for e in events] == ["Use the 2023 figures, not 2022."] and events[0].data["step"] == 2
    assert run.config["user_notes"] == [{"step": 2, "note": "Use the 2023 figures, not 2022."}]


def test_notes_keep_their_order_empty_ones_are_ignored_and_a_huge_one_is_cut(tmp_path):
    steps = [("Post.", "inbox.send_note('first')\ninbox.send_note('   ')\ninbox.send_note('second')\n"
                       "inbox.send_note('x' * 100_000)"), ("Done.", "SUBMIT(result='ok')")]
    lm, run, namespace = start(steps, tmp_path)
    DeepAgent(lm=lm, workspace=tmp_path).run("task", namespace=namespace, run=run)
    user = lm.requests[1]["user"]
    assert user.index("- first") < user.index("- second")
    assert "x" * 4_000 not in user and "x" * 3_000 in user
    assert [n["note"][:6] for n in run.config["user_notes"]] == ["first", "second", "xxxxxx"]


def test_a_secret_in_a_note_is_scrubbed_from_the_run(tmp_path, monkeypatch):
    key = "sk-" + "proj" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6"
    steps = [("Post.", f"inbox.send_note('use key {key}')"), ("Done.", "SUBMIT(result='ok')")]
    lm, run, namespace = start(steps, tmp_path)
    DeepAgent(lm=lm, workspace=tmp_path).run("task", namespace=namespace, run=run)
    assert key not in str(run.config["user_notes"])


def test_edited_todos_are_what_the_next_read_todos_returns(tmp_path):
    steps = [("Plan.", "write_todos([{'content': 'load', 'status': 'in_progress'}])\n"
                       "inbox.edit_todos([{'content': 'load', 'status': 'completed'}, {'content': 'plot'}])\n"
                       "print('same step:', read_todos())"),
             ("Read.", "print('next step:', read_todos())"), ("Done.", "SUBMIT(result='ok')")]
    lm, run, namespace = start(steps, tmp_path)
    DeepAgent(lm=lm, workspace=tmp_path).run("task", namespace=namespace, run=run)
    assert "same step: [{'content': 'load', 'status': 'in_progress'}]" in run.steps[0].output
    assert ("next step: [{'content': 'load', 'status': 'completed'}, {'content': 'plot', 'status': 'pending'}]"
            in run.steps[1].output)
    assert run.todos[-1] == {"content": "plot", "status": "pending"}


@pytest.mark.parametrize("todos", ["load data", [{"status": "pending"}], [{"content": " "}],
                                   [{"content": "a", "status": "done"}], [None], {"content": "a"}])
def test_a_malformed_todo_edit_is_refused_in_one_line_and_changes_nothing(todos):
    run = Run("t")
    inbox = steering_of(run, create=True)
    with pytest.raises(ValueError) as info:
        inbox.edit_todos(todos)
    assert "\n" not in str(info.value) and inbox.take_todos() is None


def test_one_inbox_for_the_tree_and_none_until_asked_for():
    root = Run("root")
    assert steering_of(root) is None
    child = root.add_child("child")
    grandchild = child.add_child("grandchild")
    made = steering_of(grandchild, create=True)
    assert steering_of(root) is made is steering_of(child)


def test_concurrent_posts_are_all_delivered_once(tmp_path):
    run = Run("t")
    inbox = steering_of(run, create=True)
    threads = [threading.Thread(target=lambda i=i: [inbox.send_note(f"n{i}-{j}") for j in range(50)]) for i in range(8)]
    for thread in threads:
        thread.start()
    taken = []
    while any(t.is_alive() for t in threads):
        taken += inbox.take_notes()
        time.sleep(0.001)
    for thread in threads:
        thread.join()
    taken += inbox.take_notes()
    assert sorted(taken) == sorted(f"n{i}-{j}" for i in range(8) for j in range(50))
    assert check_todos([{"content": "a"}]) == [{"content": "a", "status": "pending"}]


@pytest.mark.kernel
def test_stop_reaches_every_sub_agent_of_a_delegate_batched(tmp_path):
    from deepagent_magics.interpreters.pool import KernelPool

    # each step prints its own number: 30 identical steps would end as a stall (core/loop/ending.py), not a stop
    child = [("Work.", f"import time\ntime.sleep(0.4)\nprint('worked', {n})") for n in range(30)]
    root = [("Fan out.", "rs = delegate_batched(['KID-A: work', 'KID-B: work', 'KID-C: work'])\nprint(rs)"),
            ("Never.", "never = True")]
    run = Run("ROOT: fan out")
    namespace = {}
    inbox = steering_of(run, create=True)
    lm = ScriptedLM(scripts={"ROOT": root, "KID-A": child, "KID-B": child, "KID-C": child})
    pool = KernelPool(size=2).warm()
    timer = threading.Timer(4.0, inbox.request_stop)
    try:
        timer.start()
        started = time.monotonic()
        DeepAgent(lm=lm, workspace=tmp_path, pool=pool, timeout=60).run("ROOT: fan out", namespace=namespace, run=run)
        elapsed = time.monotonic() - started
    finally:
        timer.cancel()
        pool.stop()
    assert run.status == "stopped" and len(run.steps) == 1 and "never" not in namespace
    assert [kid.status for kid in run.children] == ["stopped"] * 3
    assert all(len(kid.steps) < 30 for kid in run.children)
    assert run.steps[0].output.count("Error: the sub-agent ended stopped") == 3
    assert elapsed < 30  # did not run the children's 30 steps
