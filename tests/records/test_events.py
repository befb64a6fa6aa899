"""records/events.py: the event log: every event of a run and its sub-agents as one JSON line, as it happens; a crash reads back as such."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from deepagent_magics import DeepAgent
from deepagent_magics.core.run.run import RUN_FINISHED, STEP_STARTED, Run
from deepagent_magics.interpreters.pool import KernelPool
from deepagent_magics.records import EventLogWriter, events_path, follow_events, read_events
from deepagent_magics.testing import ScriptedLM

SCRIPT = [
    ("Plan.", "write_todos([{'content': 'add', 'status': 'in_progress'}])\nx = 40"),
    ("Write.", "y = x + 2\nwrite_file('out/answer.txt', str(y))\nprint(y)"),
    ("Finish.", "SUBMIT(result=f'y={y}')"),
]


def seen_by(listener_events):
    return [(event.kind, event.run.id) for event in listener_events]


def logged(log):
    return [(event["kind"], event["run"]) for event in log.events]


def test_the_log_has_the_events_a_listener_sees_in_order(workspace):
    heard = []
    run = DeepAgent(lm=ScriptedLM(SCRIPT), workspace=workspace).run("add two", {}, listeners=[heard.append])
    log = read_events(events_path(workspace, run.id))
    assert logged(log) == seen_by(heard)
    assert [event["seq"] for event in log.events] == list(range(1, len(heard) + 1))
    assert log.finished and not log.ended_mid_run and not log.torn and log.status == "finished"
    kinds = [event["kind"] for event in log.events]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
    step2 = [e for e in log.events if e["kind"] == "step_finished" and e["data"]["index"] == 2][0]
    assert step2["data"]["output"].strip() == "42"
    written = [e for e in log.events if e["kind"] == "file_written"][0]
    assert written["data"] == {"path": "out/answer.txt", "size": 2}
    assert log.events[-1]["data"]["result"] == "y=42"


def test_lines_are_written_as_the_run_goes_not_at_its_end(workspace):
    seen = {}

    def at_step_3(event):
        if event.kind == STEP_STARTED and event.data["index"] == 3:
            seen["log"] = read_events(events_path(workspace, event.run.id))

    DeepAgent(lm=ScriptedLM(SCRIPT), workspace=workspace).run("add two", {}, listeners=[at_step_3])
    mid = seen["log"]
    assert mid.ended_mid_run and mid.status is None
    finished = [e["data"]["index"] for e in mid.events if e["kind"] == "step_finished"]
    assert finished == [1, 2]  # both earlier steps are on disk while step 3 starts


@pytest.mark.kernel
def test_sub_agents_events_are_in_the_log_with_their_run_id_and_parent(workspace):
    lm = ScriptedLM(scripts={
        "LOG-PARENT": [("Delegate.", "answer = delegate('LOG-CHILD: count to three')\nprint(answer)"),
                       ("Done.", "SUBMIT(result=answer)")],
        "LOG-CHILD": [("Count.", "n = 3\nprint(n)"), ("Report.", "SUBMIT(result=str(n))")],
    })
    pool = KernelPool(size=1).warm()
    try:
        heard = []
        run = DeepAgent(lm=lm, workspace=workspace, pool=pool, timeout=60).run(
            "LOG-PARENT: delegate", {}, listeners=[heard.append])
    finally:
        pool.stop()
    assert run.status == "finished", run.error
    child = run.children[0]
    log = read_events(events_path(workspace, run.id))
    assert sorted(logged(log)) == sorted(seen_by(heard))  # sub-agent events may come from another thread
    mine = [e for e in log.events if e["run"] == child.id]
    assert mine and all(e["parent"] == run.id and e["depth"] == 1 for e in mine)
    assert [e["kind"] for e in mine][0] == "run_started" and mine[-1]["kind"] == "run_finished"
    assert any(e["kind"] == "step_started" and e["data"]["code"].startswith("n = 3") for e in mine)
    started = [e for e in log.events if e["kind"] == "subagent_started"][0]
    assert started["run"] == run.id and started["data"]["child"]["id"] == child.id
    assert not os.path.exists(events_path(workspace, child.id))  # one log per root run
    assert log.finished and log.status == "finished"  # the child's run_finished is not the root's


def test_secrets_never_reach_the_log(workspace, monkeypatch):
    env_key = "sk-test-PLANTEDenv0123456789abcdef"
    lm_key = "PLANTED-lm-secret-3f9a7c"
    monkeypatch.setenv("MY_SERVICE_API_KEY", env_key)
    lm = ScriptedLM([
        ("Look.", "import os\nprint(os.environ['MY_SERVICE_API_KEY'])\nprint(lm.kwargs)"),
        ("Write.", "write_file(lm.kwargs['api_key'] + '.txt', 'x')"),
        ("Report.", "SUBMIT(result=lm.kwargs['api_key'] + ' ghp_' + 'a' * 30)"),
    ])
    lm.kwargs["api_key"] = lm_key
    run = DeepAgent(lm=lm, workspace=workspace).run(f"use the key {env_key}", {"lm": lm})
    assert run.status == "finished" and lm_key in run.prediction.result  # run.result is scrubbed too
    text = events_path(workspace, run.id).read_text()
    assert "PLANTED" not in text and "ghp_aaaa" not in text and "[REDACTED]" in text
    assert read_events(events_path(workspace, run.id)).finished


def test_a_secret_set_mid_run_is_scrubbed_from_later_lines(workspace, monkeypatch):
    monkeypatch.setattr("deepagent_magics.records.events.REFRESH_SECRETS", 0.0)
    lm = ScriptedLM([
        ("Set.", "import os\nos.environ['LATE_SERVICE_TOKEN'] = 'late-PLANTED-9876'"),
        ("Print.", "print(os.environ['LATE_SERVICE_TOKEN'])"),
        ("Done.", "SUBMIT(result='ok')"),
    ])
    try:
        run = DeepAgent(lm=lm, workspace=workspace).run("late secret", {})
    finally:
        os.environ.pop("LATE_SERVICE_TOKEN", None)
    outputs = [e["data"]["output"] for e in read_events(events_path(workspace, run.id)).events
               if e["kind"] == "step_finished"]
    assert "late-PLANTED" not in outputs[1] and "[REDACTED]" in outputs[1]


def test_results_and_data_that_are_not_json_still_make_lines(workspace):
    lm = ScriptedLM([
        ("Odd things.", "class Weird:\n    def __repr__(self):\n        raise RuntimeError('no repr')\n"
                        "w = Weird()\nprint('\\u2603 \\x00 \\ud800'.encode('utf-8', 'replace'))"),
        ("Done.", "SUBMIT(result={1, 2})"),
    ])
    run = DeepAgent(lm=lm, workspace=workspace).run("odd", {})
    log = read_events(events_path(workspace, run.id))
    assert log.finished and not log.torn
    assert len(log.events) == len(read_events(events_path(workspace, run.id)).events)


@pytest.mark.subprocess
def test_a_process_killed_mid_run_leaves_a_log_that_reads_as_ended_mid_run(tmp_path):
    script = textwrap.dedent(f"""
        from deepagent_magics import DeepAgent
        from deepagent_magics.core.run.run import Run
        from deepagent_magics.testing import ScriptedLM
        steps = [(f"Step {{i}}.", f"import time\\nprint({{i}})\\ntime.sleep(0.2)") for i in range(200)]
        run = Run("killed task", run_id="KILLED-RUN")
        DeepAgent(lm=ScriptedLM(steps), workspace={str(tmp_path)!r}, max_iters=300).run("killed task", {{}}, run=run)
    """)
    process = subprocess.Popen([sys.executable, "-c", script], env=os.environ.copy())
    path = events_path(tmp_path, "KILLED-RUN")
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if path.exists() and read_events(path).events[-1:] and \
                    sum(e["kind"] == "step_finished" for e in read_events(path).events) >= 3:
                break
            assert process.poll() is None, "the run process died by itself"
            time.sleep(0.05)
        else:
            pytest.fail("the run never logged three steps")
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(10)
    log = read_events(path)
    assert log.ended_mid_run and not log.finished and log.status is None
    assert log.events[0]["kind"] == "run_started" and log.events[0]["run"] == "KILLED-RUN"
    assert all(e["kind"] != RUN_FINISHED for e in log.events)
    assert [e["seq"] for e in log.events] == list(range(1, len(log.events) + 1))  # whole lines, none lost


def test_a_torn_last_line_is_dropped_and_reported(tmp_path):
    path = tmp_path / "x.events.jsonl"
    good = {"seq": 1, "time": 0, "kind": "run_started", "run": "r", "parent": None, "depth": 0, "data": {}}
    path.write_text(json.dumps(good) + "\n" + '{"seq": 2, "kind": "step_sta')
    log = read_events(path)
    assert [e["seq"] for e in log.events] == [1] and log.torn and log.ended_mid_run
    path.write_text(json.dumps(good) + "\nnot json at all\n[1, 2]\n")
    log = read_events(path)
    assert [e["seq"] for e in log.events] == [1] and log.torn


def test_follow_replays_then_follows_live_then_stops_at_the_end(workspace):
    root = Run("followed", config={"workspace": str(workspace)})
    writer = EventLogWriter(root, workspace)
    root.start()
    root.begin_step("One.", "a = 1")
    got, done = [], threading.Event()

    def follow():
        for event in follow_events(writer.path, poll=0.01):
            got.append(event)
        done.set()

    threading.Thread(target=follow, daemon=True).start()
    deadline = time.monotonic() + 10
    while len(got) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [e["kind"] for e in got] == ["run_started", "step_started"]  # replayed
    root.end_step("")
    child = root.add_child("sub")
    child.start()
    child.finish("finished", result="sub done")  # a sub-agent's end does not end the follow
    assert not done.wait(0.3)
    root.finish("finished", result="ok")
    assert done.wait(10)
    assert [e["kind"] for e in got][-1] == "run_finished" and got[-1]["run"] == root.id
    assert [e["seq"] for e in got] == list(range(1, len(got) + 1))
    resumed = list(follow_events(writer.path, after=3, poll=0.01))  # Last-Event-ID
    assert [e["seq"] for e in resumed] == list(range(4, len(got) + 1))


def test_follow_gives_up_on_a_log_that_stopped_growing(tmp_path):
    path = tmp_path / "dead.events.jsonl"
    path.write_text(json.dumps({"seq": 1, "time": 0, "kind": "run_started", "run": "r", "parent": None,
                                "depth": 0, "data": {}}) + "\n")
    started = time.monotonic()
    assert [e["seq"] for e in follow_events(path, poll=0.01, idle_timeout=0.3)] == [1]
    assert time.monotonic() - started < 10


def test_a_workspace_where_the_log_cannot_be_written_does_not_stop_the_run(workspace):
    (workspace / ".deepagent").mkdir()
    (workspace / ".deepagent" / "runs").write_text("a file where the runs folder should be")
    run = DeepAgent(lm=ScriptedLM([("Done.", "SUBMIT(result='ok')")]), workspace=workspace).run("ro", {})
    assert run.status == "finished" and run.result == "ok"
