"""A step that repeats the one before it (same code, same output) gets a note the model reads next.

The bundled 1.5B model, at temperature 0, wrote `result = 17 * 23; print(result)` 20 times without calling
SUBMIT: each request was the same as the last but one step longer. These runs use a real DeepAgent on a real
ShellInterpreter, answered by a ScriptedLM that records what the model would read.
"""

from __future__ import annotations

from deepagent_magics import DeepAgent
from deepagent_magics.testing import ScriptedLM

SAME = ("Compute it.", "result = 17 * 23\nprint(result)")
NOTE = "[Note] Same code and output as step"


def run_script(tmp_path, script, **kwargs):
    lm = ScriptedLM(script)
    run = DeepAgent(lm=lm, workspace=tmp_path, max_depth=0, **kwargs).run("Compute 17 * 23.", {})
    return run, lm


def history(request) -> str:
    return request["user"].split("[[ ## repl_history ## ]]", 1)[1]


def test_a_repeated_step_gets_the_note_in_what_the_model_reads_and_in_the_record(tmp_path):
    run, lm = run_script(tmp_path, [SAME, SAME, SAME, ("Done.", "SUBMIT(result=391)")])
    assert run.status == "finished" and str(run.result) == "391"
    assert NOTE not in run.steps[0].output
    assert run.steps[1].output.startswith("391\n" + NOTE + " 1.") and "SUBMIT" in run.steps[1].output
    assert run.steps[2].output.startswith("391\n" + NOTE + " 2.")  # a repeat of a repeat: still the same
    assert NOTE not in history(lm.requests[1]) and NOTE + " 1." in history(lm.requests[2])
    assert history(lm.requests[3]).count(NOTE) == 2


def test_a_repeated_error_gets_the_note_too(tmp_path):
    failing = ("Load it.", "data = open('units.csv').read()")
    run, lm = run_script(tmp_path, [failing, failing, ("Done.", "SUBMIT(result='no file')")])
    assert "FileNotFoundError" in run.steps[1].output and NOTE + " 1." in run.steps[1].output
    assert NOTE not in run.steps[0].output
    assert NOTE + " 1." in history(lm.requests[2])


def test_a_changed_step_or_a_changed_output_gets_no_note(tmp_path):
    script = [SAME, ("Again, printed otherwise.", "result = 17 * 23\nprint(result, 'units')"),
              ("Count.", "import itertools\n_n = globals().setdefault('_calls', itertools.count())\nprint(next(_n))"),
              ("Count.", "import itertools\n_n = globals().setdefault('_calls', itertools.count())\nprint(next(_n))"),
              ("Done.", "SUBMIT(result=391)")]
    run, lm = run_script(tmp_path, script)
    assert run.status == "finished"
    assert [NOTE in step.output for step in run.steps[:4]] == [False, False, False, False]  # same code, new output


def test_a_repeated_syntax_error_gets_the_note_too(tmp_path):
    broken = ("Print it.", "print(17 * 23")
    run, lm = run_script(tmp_path, [broken, broken, ("Done.", "SUBMIT(result=391)")])
    assert "SyntaxError" in run.steps[1].output and NOTE + " 1." in run.steps[1].output
    assert NOTE + " 1." in history(lm.requests[2]) and run.status == "finished"
