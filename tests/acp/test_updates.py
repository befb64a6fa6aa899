"""The run's events as ACP updates (`deepagent_magics.acp.updates`), one event kind at a time, and what a planted
event log cannot make it read."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("acp")
from deepagent_magics.acp.updates import Translator, fenced  # noqa: E402


def event(kind, data, run="R", parent=None):
    return {"kind": kind, "run": run, "parent": parent, "depth": 0 if parent is None else 1, "data": data}


def test_todos_are_a_plan_with_acps_statuses(tmp_path):
    [plan] = Translator(tmp_path).updates(event("todos", {"todos": [
        {"content": "a", "status": "completed"}, {"content": "b", "status": "weird"}, {"content": " "}, "junk"]}))
    assert plan.session_update == "plan"
    assert [(e.content, e.status) for e in plan.entries] == [("a", "completed"), ("b", "pending")]


def test_a_sub_agent_is_a_tool_call_and_its_steps_name_it_as_their_parent(tmp_path):
    translate = Translator(tmp_path)
    [call] = translate.updates(event("subagent_started", {"child": {"id": "C1", "task": "Sum the rows\nmore"},
                                                          "step": 2}))
    assert call.kind == "think" and call.title == "Sub-agent: Sum the rows" and call.status == "in_progress"
    assert call.field_meta == {"deepagent": {"parent": "R:step-2", "run": "C1"}}
    updates = translate.updates(event("step_started", {"index": 1, "reasoning": "child thinks", "code": "1"},
                                      run="C1", parent="R"))
    assert [u.session_update for u in updates] == ["tool_call"]  # a sub-agent's reasoning is not the chat's text
    assert updates[0].field_meta["deepagent"]["parent"] == call.tool_call_id
    [end] = translate.updates(event("run_finished", {"status": "finished", "result": "42"}, run="C1", parent="R"))
    assert end.tool_call_id == call.tool_call_id and end.status == "completed" and end.raw_output["result"] == "42"
    assert translate.status is None  # a sub-agent's end is not the turn's


@pytest.mark.parametrize("planted", ["../outside.txt", "/etc/passwd", "link/secret.txt", "nul\x00l", ""])
def test_a_planted_event_never_makes_it_read_a_file_outside_the_workspace(tmp_path, planted):
    workspace, outside = tmp_path / "w", tmp_path / "outside.txt"
    workspace.mkdir()
    outside.write_text("private")
    (tmp_path / "secret.txt").write_text("private")
    os.symlink(tmp_path, workspace / "link")
    [call] = Translator(workspace).updates(event("file_written", {"path": planted, "size": 7}))
    assert call.content[0].type == "content" and call.locations is None
    assert "private" not in call.model_dump_json()


def test_a_written_file_is_a_diff_against_what_the_session_showed_before(tmp_path):
    translate = Translator(tmp_path)
    (tmp_path / "r.md").write_text("one")
    [first] = translate.updates(event("file_written", {"path": "r.md", "size": 3}))
    (tmp_path / "r.md").write_text("two")
    [second] = translate.updates(event("file_written", {"path": "r.md", "size": 3}))
    assert (first.content[0].old_text, first.content[0].new_text) == (None, "one")
    assert (second.content[0].old_text, second.content[0].new_text) == ("one", "two")


def test_code_holding_a_fence_stays_one_block():
    assert fenced("a = '```'", "python") == "````python\na = '```'\n````"


def test_the_end_says_why_and_how_the_turn_stopped(tmp_path):
    translate = Translator(tmp_path)
    translate.updates(event("lm_usage", {"input_tokens": 10, "output_tokens": 5, "cached_tokens": 2}))
    [said] = translate.updates(event("run_finished", {"status": "budget_exhausted", "error": "max_cost $0.01"}))
    assert said.content.text == "Stopped at a spend cap: max_cost $0.01"
    assert translate.stop_reason(cancelled=False) == "max_turn_requests" and translate.stop_reason(True) == "cancelled"
    usage = translate.turn_usage()
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens, usage.cached_read_tokens) == (10, 5, 15, 2)
