"""core/loop/attempts.py: a step's request made again while its reply cannot be read, then a one-line failure (what
real models send, over HTTP: tests/adversarial/test_what_models_send.py)."""

from __future__ import annotations

from deepagent_magics import DeepAgent, ScriptedLM
from deepagent_magics.core.loop.attempts import FEEDBACK, FORMAT_RETRIES, finish_reason
from deepagent_magics.testing import ScriptedRequest


def unreadable_then(good):
    """A model that first answers with prose only, then (when told what was wrong) with a readable step."""
    def policy(request: ScriptedRequest):
        if "[Format error]" in request.user:
            return good
        return {"reasoning": "", "code": ""}

    return policy


def test_an_unreadable_reply_is_asked_again_with_what_was_wrong_and_the_step_that_ran_is_recorded(tmp_path):
    seen = []
    lm = ScriptedLM(unreadable_then(("Now properly.", "SUBMIT(result='ok')")))
    from deepagent_magics.core.run.run import Run

    run = Run("t")
    run.subscribe(lambda event: seen.append(event.data) if event.kind == "reply_retry" else None)
    DeepAgent(lm=lm, workspace=tmp_path).run("t", namespace={}, run=run)
    assert run.status == "finished" and run.result == "ok" and len(run.steps) == 1
    assert seen and seen[0]["attempt"] == 1 and seen[0]["step"] == 1 and seen[0]["problem"]
    assert "Nothing was run." in lm.requests[-1]["user"]


def test_a_model_that_never_sends_a_readable_reply_fails_the_run_in_one_line(tmp_path):
    lm = ScriptedLM(lambda request: {"reasoning": "", "code": ""})
    run = DeepAgent(lm=lm, workspace=tmp_path).run("t", namespace={})
    assert run.status == "failed" and run.error.startswith("UnreadableReply: ") and "\n" not in run.error
    assert len(lm.requests) == FORMAT_RETRIES + 1
    assert FEEDBACK.startswith("[Format error]")


def test_the_finish_reason_is_read_from_either_shape_of_response():
    assert finish_reason(None) is None
    assert finish_reason({"choices": [{"finish_reason": "length"}]}) == "length"
    assert finish_reason(type("R", (), {"finish_reason": "stop"})()) == "stop"
