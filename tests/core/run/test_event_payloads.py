"""core/run/event_payloads.py: every event kind's data typed, and a real run's events holding exactly those keys
(every emit call read statically: tests/core/run/test_event_kinds.py)."""

from __future__ import annotations

from typing import get_type_hints

from deepagent_magics import DeepAgent, ScriptedLM
from deepagent_magics.core.run import event_kinds
from deepagent_magics.core.run.event_payloads import PAYLOADS, StepStarted, keys


def test_every_kind_has_its_payload():
    declared = {value for name, value in vars(event_kinds).items() if name.isupper() and isinstance(value, str)}
    assert set(PAYLOADS) == declared
    required, allowed = keys(event_kinds.STEP_STARTED)
    assert required == {"index", "reasoning", "code"} == allowed
    assert get_type_hints(StepStarted)["index"] is int


def test_a_real_runs_events_hold_the_keys_their_payload_says(tmp_path):
    seen = []
    lm = ScriptedLM([("Plan.", "write_todos([{'content': 'a'}])\nwrite_file('a.txt', 'x')\nprint(read_todos())"),
                     ("Done.", "SUBMIT(result='ok')")])
    agent = DeepAgent(lm=lm, workspace=tmp_path)
    from deepagent_magics.core.run.run import Run

    run = Run("Plan and write")
    run.subscribe(lambda event: seen.append(event))
    agent.run("Plan and write", namespace={}, run=run)
    assert {event.kind for event in seen} >= {"run_started", "step_started", "step_finished", "todos", "file_written",
                                              "tool_call", "lm_usage", "status", "run_finished"}
    for event in seen:
        required, allowed = keys(event.kind)
        assert required <= set(event.data) <= allowed, (event.kind, sorted(event.data))
