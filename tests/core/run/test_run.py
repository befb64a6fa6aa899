"""core/run/run.py: a run's one event stream, its steps, sub-agents, usage and status; what it keeps is scrubbed."""

from __future__ import annotations

import pytest

from deepagent_magics.core.run.run import REPEAT_NOTE, RESULT_CHARS, STATUSES, Run, Step, Usage
from deepagent_magics.core.run.secrets import register_secret

SECRET = "sk-run-secret-value-55443322"


def events_of(run):
    seen = []
    run.subscribe(lambda event: seen.append((event.kind, event.run.id)))
    return seen


def test_a_run_records_its_steps_and_emits_one_event_for_each_change():
    run = Run("Count")
    seen = events_of(run)
    run.start()
    run.begin_step("Look.", "print(1)")
    run.end_step("1")
    run.begin_step("Again.", "print(2)")
    run.begin_step("Newer.", "print(3)")  # the step before it closes: it never ran
    run.set_todos([{"content": "count", "status": "done"}])
    run.record_file("a.txt", 3)
    run.record_file("a.txt", 4)
    run.record_tool_call("ls", {"path": "."})
    run.finish("finished", result="3")
    assert [step.output for step in run.steps] == ["1", "(not executed)", "(no output)"]
    assert run.files_written == ["a.txt"] and run.status == "finished" and run.result == "3"
    kinds = [kind for kind, _ in seen]
    assert kinds[0] == "run_started" and kinds[-2:] == ["status", "run_finished"]
    assert kinds.count("step_started") == 3 and kinds.count("file_written") == 2 and "tool_call" in kinds


def test_a_run_finishes_once():
    run = Run("t")
    run.start()
    run.finish("stopped", error="by you")
    run.finish("failed", error="late")
    assert (run.status, run.error) == ("stopped", "by you")
    with pytest.raises(AssertionError):
        Run("t").finish("exploded")
    assert "abandoned" in STATUSES


def test_an_interrupted_run_closes_its_open_step_as_interrupted():
    run = Run("t")
    run.start()
    run.begin_step("r", "while True: pass")
    run.finish("interrupted")
    assert run.steps[0].output == "(interrupted)"


def test_sub_agents_nest_under_the_step_that_started_them_and_their_events_reach_the_root():
    root = Run("root")
    seen = events_of(root)
    orphan = root.add_child("before any step")
    root.begin_step("Delegate.", "delegate(...)")
    child = root.add_child("count words")
    child.start()
    child.record_usage("m", 10, 5, 0.01)
    child.finish("finished", result="42")
    root.child_finished(child)
    root.record_usage("m", 100, 50, 0.1)
    assert child.parent_step == 1 and root.steps[0].children == [child] and orphan.parent_step is None
    assert root.children == [child, orphan] and child.tree is root.tree and child.depth == 1
    assert ("run_finished", child.id) in seen and ("subagent_finished", root.id) in seen
    assert root.usage.tokens == 150 and root.tree_usage().tokens == 165 and root.tree_usage().lm_calls == 2
    assert [run.id for run in root.walk()] == [root.id, child.id, orphan.id]


def test_a_broken_listener_never_breaks_the_run():
    run = Run("t")
    run.subscribe(lambda event: 1 / 0)
    seen = events_of(run)
    run.start()
    assert seen == [("run_started", run.id)]


def test_secrets_never_reach_what_the_run_keeps_or_emits():
    register_secret(SECRET)
    run = Run(f"use {SECRET}")
    seen = []
    run.subscribe(lambda event: seen.append(repr(event.data)))
    run.start()
    run.begin_step(f"key {SECRET}", f"print('{SECRET}')")
    run.end_step(f"printed {SECRET[:12]}")  # a piece of it too
    run.finish("failed", error=f"auth {SECRET}", result={"key": SECRET})
    assert SECRET not in repr(run.to_dict()) and not any(SECRET in text for text in seen)
    assert SECRET[:12] not in run.steps[0].output


def test_a_result_that_is_data_is_kept_bounded_in_the_record():
    run = Run("t")
    run.finish("finished", result=list(range(100_000)))
    shown = run.to_dict()["result"]
    assert isinstance(shown, str) and len(shown) < RESULT_CHARS + 100 and shown.endswith("more characters)")
    assert Run("t").to_dict()["status"] == "pending" and "Run" in repr(run)


def test_usage_says_unknown_cost_rather_than_a_made_up_zero():
    usage = Usage()
    usage.add(10, 5, None)
    assert usage.cost is None and usage.cost_text() == "cost unknown"
    usage.add(10, 5, 0.02)
    assert usage.cost == pytest.approx(0.02) and usage.cost_text() == "$0.0200 + 1 unpriced calls"
    again = Usage.from_dict(usage.to_dict())
    assert again == usage
    assert Usage.from_dict({"lm_calls": "x", "cost": [1]}).lm_calls == 0
    assert Usage.from_dict(None).cost_text() == "$0.0000"


def test_a_step_is_the_same_as_another_when_code_and_output_match_but_the_step_name():
    step = Step(1, code="1/0", output='File "<agent step 1>", line 1\nZeroDivisionError')
    assert step.same_as(" 1/0 ", 'File "<agent step 2>", line 1\nZeroDivisionError\n' + REPEAT_NOTE + " 1.")
    assert not step.same_as("1/0", "other output")
    assert not step.same_as("2/0", step.output)
