"""display/text.py: a run as text: one line per step, sub-agents indented, then a summary; a model's escape sequences
never reach the terminal."""

from __future__ import annotations

import io

from deepagent_magics.core.run.run import Run
from deepagent_magics.display.text import TextProgress, summary


def test_each_finished_step_is_a_line_then_the_summary_and_the_result():
    stream = io.StringIO()
    run = Run("t", config={"max_iters": 5})
    run.max_iters = 5
    view = TextProgress(run, stream=stream, show_result=True)
    run.start()
    run.begin_step("Look at the data\nmore", "print(1)")
    run.end_step("1")
    run.begin_step("Fail", "1/0")
    child = run.add_child("count the words")
    child.start()
    child.begin_step("Count", "x")
    child.end_step("3")
    child.finish("finished", result="3")
    run.end_step("[Error] ZeroDivisionError")
    run.set_todos([{"content": "a", "status": "completed"}])
    run.finish("finished", result="the answer")
    view.close()
    lines = stream.getvalue().splitlines()
    rid, cid = run.id[-6:], child.id[-6:]
    assert lines[0] == f"[{rid}] step 1/5 ✓ Look at the data"
    assert lines[1] == f"  ↳ sub-agent {cid} (step 2): count the words"
    assert lines[2] == f"  [{cid}] step 1/? ✓ Count"
    assert f"[{rid}] step 2/5 ✗ Fail" in lines
    assert lines[-3].startswith("finished: 2 steps (+1 sub-agents)") and "todos 1/1 completed" in lines[-3]
    assert lines[-2:] == ["", "the answer"]


def test_a_models_escape_sequences_are_shown_as_text():
    stream = io.StringIO()
    run = Run("t")
    TextProgress(run, stream=stream)
    run.begin_step("\x1b]0;pwned\x07title", "c")
    run.end_step("x")
    assert "\x1b" not in stream.getvalue() and "\\x1b]0;pwned" in stream.getvalue()


def test_the_summary_names_the_error_of_a_run_that_did_not_finish():
    run = Run("t")
    run.start()
    run.record_file("out.csv", 10)
    run.finish("failed", error="NoLMError: no LM")
    assert summary(run).startswith("failed (NoLMError: no LM): 0 steps") and "wrote out.csv" in summary(run)
