"""records/replay.py: a past run back as a `Run`, its events emitted again for the displays."""

from __future__ import annotations

from deepagent_magics.records.replay import replay
from deepagent_magics.records.well_formed import normalize

RECORD = normalize({
    "id": "past", "task": "Count", "status": "finished", "result": "3", "started_at": 100.0, "ended_at": 160.0,
    "todos": [{"content": "count", "status": "completed"}], "files_written": ["out.txt"], "files": {"out.txt": 5},
    "usage": {"lm_calls": 2, "input_tokens": 10, "output_tokens": 4},
    "steps": [{"reasoning": "Count.", "code": "n = 3", "output": "",
               "children": [{"id": "kid", "task": "help", "status": "finished", "result": "ok",
                             "steps": [{"reasoning": "r", "code": "c", "output": "o"}]}]},
              {"reasoning": "Submit.", "code": "SUBMIT(result=n)", "output": "SUBMIT(3)"}]})


def test_the_run_comes_back_with_its_steps_children_todos_files_usage_and_times():
    kinds = []
    run = replay(RECORD, on_run=lambda run: run.subscribe(lambda event: kinds.append(event.kind)))
    assert run.id == "past" and run.status == "finished" and run.result == "3"
    assert [step.code for step in run.steps] == ["n = 3", "SUBMIT(result=n)"]
    assert run.steps[0].children[0].id == "kid" and run.steps[0].children[0].steps[0].output == "o"
    assert run.todos == [{"content": "count", "status": "completed"}]
    assert run.usage.lm_calls == 2 and (run.started_at, run.ended_at) == (100.0, 160.0)
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
    assert "subagent_started" in kinds and "file_written" in kinds and "todos" in kinds


def test_a_run_that_never_finished_reads_as_interrupted_and_a_made_up_status_as_failed():
    assert replay({**RECORD, "status": "running"}).status == "interrupted"
    odd = replay({**RECORD, "status": "pwned", "error": None})
    assert odd.status == "failed" and "the record says 'pwned', not a status" in odd.error
