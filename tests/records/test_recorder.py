"""Run records on disk: written as the run goes, complete after it, kept after an interrupt, free of secrets."""

from __future__ import annotations

import json
import threading

import dspy
import pytest

from deepagent_magics import DeepAgent
from deepagent_magics.records import recorder as records
from deepagent_magics.records import RunRecorder, load_record, replay, runs_dir
from deepagent_magics.core.run.run import STEP_STARTED, Run
from deepagent_magics.testing import ScriptedLM

SCRIPT = [
    ("Plan the work.", "write_todos([{'content': 'add', 'status': 'in_progress'}])\nx = 40"),
    ("Add and write.", "y = x + 2\nwrite_file('out/answer.txt', str(y))\nprint(y)"),
    ("Finish.", "write_todos([{'content': 'add', 'status': 'completed'}])\nSUBMIT(result=f'y={y}')"),
]


def record_path(workspace, run):
    return runs_dir(workspace) / f"{run.id}.json"


def test_the_record_is_written_while_the_run_goes(workspace, monkeypatch):
    monkeypatch.setattr(RunRecorder, "MIN_INTERVAL", 0.0)  # write after every event,
    monkeypatch.setattr(RunRecorder, "BUDGET", float("inf"))  # however long the last write took
    seen = {}

    def at_step_3(event):
        if event.kind == STEP_STARTED and event.data["index"] == 3 and event.run.parent is None:
            seen["record"] = json.loads(record_path(workspace, event.run).read_text())

    DeepAgent(lm=ScriptedLM(SCRIPT), workspace=workspace).run("add two", {}, listeners=[at_step_3])
    mid = seen["record"]
    assert mid["status"] == "running" and mid["task"] == "add two"
    assert [step["index"] for step in mid["steps"][:2]] == [1, 2]
    assert mid["steps"][1]["output"].strip() == "42"
    assert mid["todos"] == [{"content": "add", "status": "in_progress"}]


def test_with_the_default_throttle_the_record_exists_from_the_start(workspace):
    seen = {}

    def at_step_2(event):
        if event.kind == STEP_STARTED and event.data["index"] == 2:
            seen["record"] = json.loads(record_path(workspace, event.run).read_text())

    DeepAgent(lm=ScriptedLM(SCRIPT), workspace=workspace).run("add two", {}, listeners=[at_step_2])
    assert seen["record"]["status"] == "running"
    assert seen["record"]["config"]["workspace"] == str(workspace)


def test_the_record_is_complete_after_the_run(workspace):
    run = DeepAgent(lm=ScriptedLM(SCRIPT), workspace=workspace, max_iters=7).run("add two", {})
    record = load_record(record_path(workspace, run))
    assert record["status"] == "finished" and record["result"] == "y=42"
    assert record["task"] == "add two" and record["prompt_hash"] == run.prompt_hash
    assert record["config"]["max_iters"] == 7 and record["config"]["lm"] == "scripted/demo"
    assert [step["code"] for step in record["steps"]] == [code for _, code in SCRIPT]
    assert record["todos"] == [{"content": "add", "status": "completed"}]
    assert record["files"] == {"out/answer.txt": 2} and record["files_written"] == ["out/answer.txt"]
    assert record["usage"]["lm_calls"] == 3 and record["usage_total"]["input_tokens"] > 0
    assert record["started_at"] <= record["steps"][0]["started_at"] <= record["steps"][-1]["ended_at"] <= record["ended_at"]
    assert [call["name"] for call in record["tool_calls"]] == ["write_todos", "write_file", "write_todos"]


def test_an_interrupted_run_keeps_its_record(workspace):
    script = SCRIPT[:2] + [("Wait.", "raise KeyboardInterrupt")]
    agent = DeepAgent(lm=ScriptedLM(script), workspace=workspace)
    run = Run("add two")
    with pytest.raises(KeyboardInterrupt):
        agent.run("add two", {}, run=run)
    record = load_record(record_path(workspace, run))
    assert record["status"] == "interrupted"
    assert len(record["steps"]) == 3 and record["steps"][1]["output"].strip() == "42"
    assert record["steps"][2]["output"] == "(interrupted)"


def test_secrets_from_the_environment_and_the_lm_config_never_reach_the_record(workspace, monkeypatch):
    env_key = "sk-test-PLANTEDenv0123456789abcdef"
    lm_key = "PLANTED-lm-secret-3f9a7c"  # no known key shape: only the LM's config can reveal it
    monkeypatch.setenv("MY_SERVICE_API_KEY", env_key)
    lm = ScriptedLM([
        ("Look at the settings.", "import os\nprint(os.environ['MY_SERVICE_API_KEY'])\nprint(lm.kwargs)"),
        ("Report.", "write_file('leak.txt', lm.kwargs['api_key'])\nSUBMIT(result=lm.kwargs['api_key'] + ' sk-anotherKEY12345678')"),
    ])
    lm.kwargs["api_key"] = lm_key
    run = DeepAgent(lm=lm, workspace=workspace).run(f"use the key {env_key}", {"lm": lm})
    assert run.status == "finished" and lm_key in run.prediction.result  # the agent itself saw them
    assert lm_key not in run.result  # what the run keeps and shows is scrubbed
    text = record_path(workspace, run).read_text()
    assert env_key not in text and lm_key not in text and "sk-anotherKEY" not in text
    assert "PLANTED" not in text
    assert "[REDACTED]" in text
    json.loads(text)  # still valid JSON


def test_a_wrapped_provider_lm_key_is_scrubbed_too(workspace):
    provider = dspy.LM("openai/x", api_key="sk-test-PLANTED-provider-key-999", extra_headers={"Authorization": "Bearer abcDEF123456789xyz"})
    secrets = records.secret_values(provider, environ={})
    redact = records.Redactor(secrets)
    cleaned = redact({"a": "key sk-test-PLANTED-provider-key-999 and abcDEF123456789xyz", "b": ["Bearer abcDEF123456789xyz"]})
    assert "PLANTED" not in json.dumps(cleaned) and "abcDEF123456789xyz" not in json.dumps(cleaned)


def test_writes_are_throttled_not_one_per_event(workspace, monkeypatch):
    monkeypatch.setattr(RunRecorder, "MIN_INTERVAL", 3600.0)
    writes = []
    original = records.write_json_atomic
    monkeypatch.setattr(records, "write_json_atomic",
                        lambda path, data, **how: (writes.append(path), original(path, data, **how)))
    steps = [(f"Step {i}.", f"v{i} = {i}") for i in range(30)] + [("Done.", "SUBMIT(result='ok')")]
    run = DeepAgent(lm=ScriptedLM(steps), workspace=workspace, max_iters=40).run("many steps", {})
    assert len(run.steps) == 31
    assert len(writes) == 2  # when the run started and when it finished
    assert len(load_record(record_path(workspace, run))["steps"]) == 31


def test_sub_agents_are_nested_in_the_record_even_from_another_thread(workspace):
    root = Run("parent task", config={"workspace": str(workspace)})
    recorder = RunRecorder(root, workspace, min_interval=0.0, budget=float("inf"))
    root.start()
    root.begin_step("Delegate.", "delegate('child task')")

    def child_work():
        child = root.add_child("child task")
        child.start()
        child.begin_step("Child step.", "z = 1")
        child.end_step("")
        child.record_usage("m", 10, 5, 0.01)
        child.finish("finished", result="child done")
        root.child_finished(child)

    worker = threading.Thread(target=child_work)
    worker.start()
    worker.join()
    root.end_step("child done")
    root.record_usage("m", 100, 50, 0.1)
    root.finish("finished", result="all done")
    record = load_record(recorder.path)
    child = record["steps"][0]["children"][0]
    assert child["task"] == "child task" and child["result"] == "child done" and child["depth"] == 1
    assert child["steps"][0]["code"] == "z = 1" and child["parent_step"] == 1
    assert record["usage_total"]["input_tokens"] == 110 and record["usage_total"]["lm_calls"] == 2

    rebuilt = replay(record)  # the record plays back as the same tree
    assert rebuilt.trajectory[0]["children"][0]["steps"][0]["code"] == "z = 1"
    assert rebuilt.status == "finished" and rebuilt.result == "all done"
