"""interpreters/step_execution.py: either interpreter runs a block after approval and closes the run's open step with
what it printed, noting a step that repeats the one before (the note with a real model's loop:
tests/interpreters/test_repeat_note.py)."""

from __future__ import annotations

import pytest
from dspy.primitives.code_interpreter import CodeInterpreterError, FinalOutput

from deepagent_magics.core.policy.approval import Approver, attach
from deepagent_magics.core.run.run import REPEAT_NOTE, Run
from deepagent_magics.interpreters.step_execution import OUTPUT_LIMIT, StepInterpreter, describe_execution


class Echo(StepInterpreter):
    """Runs nothing: returns (or raises) what the test gives it, so the base class's part is what is seen."""

    def __init__(self, run, outcome):
        self.run, self.outcome, self.ran = run, outcome, []

    def _execute(self, code, variables):
        self.ran.append(code)
        if isinstance(self.outcome, BaseException):
            raise self.outcome
        return self.outcome


def open_run(code="print(1)"):
    run = Run("t")
    run.start()
    run.begin_step("r", code)
    return run


def test_the_open_step_closes_with_what_the_code_printed():
    run = open_run()
    assert Echo(run, "1\n")("print(1)") == "1\n"
    assert run.steps[0].output == "1\n"
    assert describe_execution(FinalOutput({"result": 3})) == "SUBMIT({'result': 3})"
    assert describe_execution(["a", 1]) == "a\n1" and describe_execution(None) == ""
    assert describe_execution("x" * (OUTPUT_LIMIT + 5)).endswith("... (5 more chars)")


def test_an_error_closes_the_step_with_it_and_is_raised_as_rlm_expects():
    run = open_run()
    with pytest.raises(CodeInterpreterError):
        Echo(run, CodeInterpreterError("NameError: x"))("x")
    assert run.steps[0].output == "[Error] NameError: x"
    run2 = open_run()
    with pytest.raises(KeyboardInterrupt):
        Echo(run2, KeyboardInterrupt())("while True: pass")
    assert run2.steps[0].output == "(interrupted)"


def test_a_refused_block_never_runs_and_its_refusal_is_the_output():
    run = open_run("import shutil; shutil.rmtree('x')")
    attach(run, Approver(policy=lambda proposal: "n no"))
    interpreter = Echo(run, "ran")
    refusal = interpreter("import shutil; shutil.rmtree('x')")
    assert interpreter.ran == [] and refusal.startswith("Not run:") and run.steps[0].output == refusal


def test_the_same_step_again_gets_a_note_for_the_model():
    run = open_run("print(1)")
    Echo(run, "1")("print(1)")
    run.begin_step("r", "print(1)")
    result = Echo(run, "1")("print(1)")
    assert result.startswith("1\n" + REPEAT_NOTE + " 1.")
    assert run.steps[1].output == result
