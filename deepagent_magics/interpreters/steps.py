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
from ..core.run.run import Run

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
            self._end_step(f"[Error] {kind}{exc}")
            raise
        except BaseException:
            self._end_step("(interrupted)")
            raise
        self._end_step(describe_execution(result))
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
