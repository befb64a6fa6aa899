"""core/run/stopping.py: `StopRun` ends a run ``stopped`` with everything kept; DSPy's loop does not hand it to the
model as an error, and the stop button's name for it is the same class."""

from __future__ import annotations

from dspy.primitives.code_interpreter import CodeInterpreterError

from deepagent_magics import DeepAgent, ScriptedLM
from deepagent_magics.core.policy.steering import StopRequested, steering_of
from deepagent_magics.core.run.session import current
from deepagent_magics.core.run.stopping import StopRun
from deepagent_magics.errors import DeepAgentError


def test_it_is_of_the_family_and_no_error_the_model_would_read():
    assert issubclass(StopRun, DeepAgentError)
    assert not issubclass(StopRun, (CodeInterpreterError, RuntimeError))
    assert StopRequested is StopRun


def test_the_stop_button_ends_the_run_stopped_at_the_next_step_with_everything_kept(tmp_path):
    def press_stop() -> str:
        """The user presses stop while this step runs."""
        steering_of(current().run, create=True).request_stop()
        return "pressed"

    lm = ScriptedLM([("Work.", "x = 1\nprint(x)"), ("Stop.", "press_stop()"), ("Never.", "SUBMIT(result='no')")])
    namespace = {}
    run = DeepAgent(lm=lm, workspace=tmp_path, tools=[press_stop]).run("Work then stop.", namespace=namespace)
    assert run.status == "stopped" and run.error == "stopped by the user after step 2"
    assert len(run.steps) == 2 and namespace["x"] == 1 and len(lm.requests) == 2  # the third step was never asked for
