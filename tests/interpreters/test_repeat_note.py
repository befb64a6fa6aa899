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
    run, lm = run_script(tmp_path, [SAME, SAME, ("Done.", "SUBMIT(result=391)")])
    assert run.status == "finished" and str(run.result) == "391"
    assert NOTE not in run.steps[0].output
    assert run.steps[1].output.startswith("391\n" + NOTE + " 1.") and "SUBMIT" in run.steps[1].output
    assert NOTE not in history(lm.requests[1]) and NOTE + " 1." in history(lm.requests[2])


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


def test_a_third_identical_step_ends_the_run_with_the_answer_taken_from_what_it_has(tmp_path):
    """After the note was read and ignored, the run does not wait for every step it has left: RLM's extract
    answers from the history (as when the steps run out), the trajectory kept."""
    lm = ScriptedLM([SAME] * 10, replies="391")
    run = DeepAgent(lm=lm, workspace=tmp_path, max_depth=0, max_iters=10).run("Compute 17 * 23.", {})
    assert run.status == "finished" and str(run.result) == "391", run.error
    assert len(run.steps) == 3 and "same code with the same output 3 times" in run.config["stalled"]
    assert len(lm.requests) == 4  # 3 steps and the extract: no 4th step asked for
    assert NOTE + " 2." in run.steps[2].output  # a repeat of a repeat is still the same step


def test_a_stall_with_nothing_to_answer_from_fails_in_one_line(tmp_path):
    lm = ScriptedLM([SAME] * 10, replies="")
    run = DeepAgent(lm=lm, workspace=tmp_path, max_depth=0, max_iters=10).run("Compute 17 * 23.", {})
    assert run.status == "failed" and run.error.startswith("Stalled: ") and "\n" not in run.error
    assert len(run.steps) == 3


def test_two_identical_steps_then_a_different_one_do_not_stall(tmp_path):
    run, lm = run_script(tmp_path, [SAME, SAME, ("Check.", "print(17 * 23 == 391)"), SAME,
                                    ("Done.", "SUBMIT(result=391)")])
    assert run.status == "finished" and len(run.steps) == 5 and "stalled" not in run.config


def test_the_summary_and_the_dashboards_status_say_the_run_stalled(tmp_path):
    from deepagent_magics.display.markup import status_line
    from deepagent_magics.display.text import summary

    lm = ScriptedLM([SAME] * 10, replies="391")
    run = DeepAgent(lm=lm, workspace=tmp_path, max_depth=0, max_iters=10).run("Compute 17 * 23.", {})
    assert summary(run).startswith("finished (not submitted by the agent: its answer was taken from its output "
                                   "(the agent stalled: the agent ran the same code")
    assert "the agent stalled: the agent ran the same code" in status_line(run)


def test_a_stall_of_nothing_but_errors_fails_without_asking_for_a_made_up_answer(tmp_path):
    failing = ("Load it.", "wine = open('wine.csv').read()")
    lm = ScriptedLM([failing] * 10, replies="356")
    run = DeepAgent(lm=lm, workspace=tmp_path, max_depth=0, max_iters=10).run("How many wines?", {})
    assert run.status == "failed" and run.result is None and "no step produced any output" in run.error
    assert len(run.steps) == 3 and len(lm.requests) == 3  # no extract call
