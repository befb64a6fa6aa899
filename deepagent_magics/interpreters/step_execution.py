"""What both interpreters share: each execution closes the run's open step with its output.

`RunObserver` opens a step when the LM has proposed code; the interpreter that runs
the code closes it with what the code printed (or its error), so a step's output on
the `Run` is exactly what the model reads next.
"""

from __future__ import annotations

from typing import Any

from dspy.primitives.code_interpreter import CodeInterpreterError, FinalOutput
from dspy.primitives.facade import HOST_TOKEN_VAR

from ..core.policy import approval
from ..core.run.run import REPEAT_NOTE, Run

OUTPUT_LIMIT = 20_000


def describe_execution(result: Any, limit: int = OUTPUT_LIMIT) -> str:
    """How an interpreter's result is shown as a step's output."""
    if isinstance(result, FinalOutput):
        text = f"SUBMIT({result.output!r})"
    elif result is None:
        text = ""
    elif isinstance(result, list):
        text = "\n".join(map(str, result))
    else:
        text = str(result)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text) - limit} more chars)"


def repeat_note(run: Run | None, code: str, output: str) -> str | None:
    """A line for the model when a step ran the same code as the step before it and printed the same.

    A small model at temperature 0 that does not call SUBMIT writes the same step again, with the same
    input each time, until its steps run out (the bundled 1.5B model did, 20 times). The note makes
    the next request differ and says what to do."""
    steps = run.steps if run is not None else []
    if len(steps) < 2 or steps[-1].finished:
        return None
    before = steps[-2]
    if not before.same_as(code, output):
        return None
    return (f"{REPEAT_NOTE} {before.index}. If this output answers the task, call "
            "SUBMIT(...) now, in a step of its own; if not, change the approach.")


class StepInterpreter:
    """Base of the interpreters: ``execute`` runs ``_execute`` and closes the open step."""

    run: Run | None = None

    def execute(self, code: str, variables: dict[str, Any] | None = None) -> Any:
        """Run ``code``; a step the run has open is closed with what it printed.

        Every block passes the run's approval first (`core.policy.approval`; DSPy's own set-up code
        excepted): a refused block is not run, and its refusal is the step's output. Its time
        limit starts after that, so waiting for the user's answer never counts against it."""
        if not (variables and HOST_TOKEN_VAR in variables):
            refusal = approval.review(self.run, code, self.protected_names())  # StopRun on the user's `q`
            if refusal is not None:
                self._end_step(refusal)
                return refusal
        try:
            result = self._execute(code, variables)
        except (CodeInterpreterError, SyntaxError) as exc:
            kind = "SyntaxError: " if isinstance(exc, SyntaxError) else ""
            output = f"[Error] {kind}{exc}"
            note = repeat_note(self.run, code, output)
            self._end_step(f"{output}\n{note}" if note else output)
            if note and isinstance(exc, SyntaxError):
                exc.msg = f"{exc.msg}\n{note}"
            elif note:
                exc.args = (f"{exc}\n{note}",)  # the same exception, as RLM expects it; the model reads this
            raise
        except BaseException:
            self._end_step("(interrupted)")
            raise
        output = describe_execution(result)
        note = repeat_note(self.run, code, output) if not isinstance(result, FinalOutput) else None
        if note and isinstance(result, str | None):
            result = f"{result}\n{note}" if result else note
            output = describe_execution(result)
        self._end_step(output)
        return result

    def __call__(self, code: str, variables: dict[str, Any] | None = None) -> Any:
        return self.execute(code, variables)

    def _execute(self, code: str, variables: dict[str, Any] | None) -> Any:
        raise NotImplementedError

    def protected_names(self) -> set[str]:
        """The user's variables in this REPL (for approval's ``deletes_variable`` rule): none by default."""
        return set()

    def _end_step(self, output: str) -> None:
        if self.run is not None and self.run.open_step is not None:
            self.run.end_step(output)
