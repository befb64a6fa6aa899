"""How a run ends before the agent answers: a spend cap reached, the user's stop, or a stalled agent.

`pipeline.StepPredict` remembers, at each step, what it showed the LM (`remember`); when the next
step may not start (`spend.CapReached`), or the user stops the run (`stopping.StopRun`: the stop
button at a step boundary, ``q`` at an approval question), `DeepAgent` ends the run here:

- the user's stop: ``stopped`` with the stop's one-line reason, no further LM call;
- a spend cap, for the root agent: one final chance to answer from what it has, RLM's own
  ``extract`` step over the REPL history so far (the one LM call a reached cap allows; its usage
  is counted). The run ends ``finished`` with that answer, or ``budget_exhausted`` when there was
  nothing to answer from or the call failed (its error one line: the cap's reason, then why the final
  answer failed); why the cap stopped it is on ``run.config["spend"]``;
- a spend cap, for a sub-agent: ``budget_exhausted`` at once (the tree's final call is the root's);
  its parent reads that as the sub-agent's error;
- a stalled agent (`Stalled`: its last `STALL_STEPS` steps ran the same code and printed the same, the
  repeat note of `interpreters/step_execution.py` read and ignored; a small model at temperature 0 would write it
  until its steps run out): RLM's ``extract`` over the history so far, as when the steps run out, now
  instead of after every remaining step. ``finished`` with that answer; ``failed`` when no step printed
  anything but errors (the answer would be made up) or none came; why is on ``run.config["stalled"]``.

An answer taken by ``extract`` is not one the agent submitted: the run says why on ``run.extracted``
(and RLM's own extract when the steps run out, `core.loop.agent`), and every door that shows the
result says so (a model can print "FINAL ANSWER: ..." that the extract step then takes as the answer).

Trajectory, variables and files are kept either way: the interpreter's own shutdown ran as the
exception left the loop.
"""

from __future__ import annotations

from typing import Any

from ..model.failures import produced_output, reason as failure_reason
from ..policy.spend import CapReached, budget_of
from ..run.stopping import StopRun
from ..run.event_kinds import SPEND_CAP
from ...errors import DeepAgentError

STALL_STEPS = 3  # the same step this many times in a row: the agent is not going to change it


class Stalled(DeepAgentError):
    """The agent wrote the same step `STALL_STEPS` times in a row; the run ends from what it has."""


def not_submitted(extracted: str) -> str:
    """The words every door shows beside an answer that was extracted (``run.extracted``: why)."""
    return f"not submitted by the agent: its answer was taken from its output ({extracted})"


ENDINGS = ("SUBMIT", "stall", "extraction", "spend cap", "failure")  # how a run's answer came (`ended_by`)


def ended_by(run: Any) -> str:
    """How ``run`` ended, one of `ENDINGS`: its own ``SUBMIT``; RLM's extract after a stall, after the last
    step, or at a spend cap; or no answer at all (failed, stopped, out of budget): what a benchmark counts."""
    if run.status != "finished":
        return "failure"
    if not run.extracted:
        return "SUBMIT"
    if run.config.get("stalled"):
        return "stall"
    if (run.config.get("spend") or {}).get("final_answer") == "extract":
        return "spend cap"
    return "extraction"


def check_stall(session: Any) -> None:
    """Before the next step is asked for: `Stalled` when the last `STALL_STEPS` steps were one step."""
    steps = session.run.steps[-STALL_STEPS:]
    if len(steps) < STALL_STEPS or not all(step.finished for step in steps):
        return
    if all(step.same_as(steps[0].code, steps[0].output) for step in steps[1:]):
        raise Stalled(f"the agent ran the same code with the same output {STALL_STEPS} times in a row "
                      f"(steps {steps[0].index}-{steps[-1].index})")



def remember(session: Any, kwargs: dict[str, Any]) -> None:
    if session is not None:
        session.last_inputs = {"variables_info": kwargs.get("variables_info"),
                                       "repl_history": kwargs.get("repl_history")}


def end_early(rlm: Any, session: Any, exc: BaseException, output_field: str) -> Any:
    """Finish ``session.run`` for ``exc`` (see the module docstring); returns the run."""
    run = session.run
    if isinstance(exc, StopRun):
        run.finish("stopped", error=str(exc))
        return run
    if isinstance(exc, Stalled):
        return _end_stalled(rlm, session, exc, output_field)
    assert isinstance(exc, CapReached)
    reason = str(exc)
    budget = budget_of(run)
    if budget is not None:
        run.config["spend"] = budget.to_dict()
    run.emit(SPEND_CAP, reason=reason)
    inputs = session.last_inputs
    if run.parent is not None or not inputs:
        run.finish("budget_exhausted", error=reason)
        return run
    try:
        prediction = rlm.extract(variables_info=inputs["variables_info"] or [],
                                 repl_history=inputs["repl_history"])
        answer = getattr(prediction, output_field, None)
    except Exception as failure:  # the provider failed the final call: the run still ends, kept
        run.finish("budget_exhausted", error=f"{reason}; the final answer failed: {failure_reason(failure)}")
        return run
    if budget is not None:
        run.config["spend"] = budget.to_dict()
    if answer is None or not str(answer).strip():
        run.finish("budget_exhausted", error=reason)
        return run
    run.prediction = prediction
    run.config["spend"] = {**run.config.get("spend", {}), "final_answer": "extract"}
    run.finish("finished", result=answer, extracted=f"a spend cap was reached ({reason})")
    return run


def _end_stalled(rlm: Any, session: Any, exc: Stalled, output_field: str) -> Any:
    run, inputs = session.run, session.last_inputs
    run.config["stalled"] = str(exc)
    if not any(produced_output(step) for step in run.steps):  # only errors: an extracted answer would be made up
        run.finish("failed", error=f"Stalled: {exc}; no step produced any output, so there is no answer to take")
        return run
    try:
        prediction = rlm.extract(variables_info=inputs["variables_info"] or [], repl_history=inputs["repl_history"])
        answer = getattr(prediction, output_field, None)
    except Exception as failure:  # noqa: BLE001 - the provider failed the final call: the run still ends, kept
        run.finish("failed", error=f"Stalled: {exc}; the final answer failed: {failure_reason(failure)}")
        return run
    if answer is None or not str(answer).strip():
        run.finish("failed", error=f"Stalled: {exc}; no answer could be taken from it")
        return run
    run.prediction = prediction
    run.config["stalled"] += "; the answer was taken from its output"
    run.finish("finished", result=answer, extracted=f"the agent stalled: {exc}")
    return run
