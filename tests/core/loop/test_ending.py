"""core/loop/ending.py: a run that ends before the agent answers: a cap, the user's stop, a stalled agent (caps through
retries and every call: tests/adversarial/test_spend_caps*.py; stops: test_stop_paths.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from deepagent_magics import DeepAgent, ScriptedLM
from deepagent_magics.core.loop.ending import STALL_STEPS, Stalled, check_stall, ended_by, not_submitted
from deepagent_magics.core.run.run import Run


def test_the_same_step_three_times_stalls_and_two_does_not():
    run = Run("t")
    session = SimpleNamespace(run=run)
    for _ in range(STALL_STEPS - 1):
        run.begin_step("r", "print(1)")
        run.end_step("1")
        check_stall(session)
    run.begin_step("r", "print(1)")
    check_stall(session)  # the third is still running: not yet
    run.end_step("1")
    with pytest.raises(Stalled, match="the same code with the same output 3 times in a row \\(steps 1-3\\)"):
        check_stall(session)


def test_a_stalled_run_ends_with_an_answer_taken_from_its_output_and_says_so(tmp_path):
    lm = ScriptedLM(["print(17 * 23)"] * 5, replies=lambda prompt: {"reasoning": "it printed 391", "result": "391"})
    run = DeepAgent(lm=lm, workspace=tmp_path, max_iters=10).run("Compute 17 * 23", namespace={})
    assert run.status == "finished" and run.result == "391" and len(run.steps) == STALL_STEPS
    assert run.extracted.startswith("the agent stalled") and "the answer was taken from its output" in run.config["stalled"]
    assert not_submitted("x").startswith("not submitted by the agent")


def test_a_stalled_run_that_printed_only_errors_fails_without_an_answer(tmp_path):
    lm = ScriptedLM(["1 / 0"] * 5, replies=lambda prompt: {"reasoning": "made up", "result": "42"})
    run = DeepAgent(lm=lm, workspace=tmp_path, max_iters=10).run("Compute", namespace={})
    assert run.status == "failed" and "no step produced any output" in run.error and run.result is None


def test_a_cap_reached_gives_the_root_one_final_answer_from_what_it_has(tmp_path):
    lm = ScriptedLM(["x = 391\nprint(x)", "print('more')"], tokens=(100, 10),
                    replies=lambda prompt: {"reasoning": "x is 391", "result": "391"})
    run = DeepAgent(lm=lm, workspace=tmp_path, max_tokens=150).run("Compute", namespace={})
    assert run.status == "finished" and run.result == "391" and run.extracted.startswith("a spend cap was reached")
    assert run.config["spend"]["final_answer"] == "extract"


def test_how_each_run_ended_is_told_apart_from_the_run_itself(tmp_path):
    """A benchmark counts how answers came: the agent's SUBMIT, or extract after a stall, after the last step or at
    a cap, or none (a failure); each from what the run recorded, not from its wording."""
    extract = lambda prompt: {"reasoning": "it printed 391", "result": "391"}  # noqa: E731
    agent = lambda lm, **kw: DeepAgent(lm=lm, workspace=tmp_path, **kw)  # noqa: E731
    submitted = agent(ScriptedLM(["SUBMIT(result='391')"])).run("Compute", namespace={})
    stalled = agent(ScriptedLM(["print(17 * 23)"] * 5, replies=extract), max_iters=10).run("Compute", namespace={})
    ran_out = agent(ScriptedLM(["print(1)", "print(2)"], replies=extract), max_iters=2).run("Compute", namespace={})
    capped = agent(ScriptedLM(["x = 391\nprint(x)", "print('more')"], tokens=(100, 10), replies=extract),
                   max_tokens=150).run("Compute", namespace={})
    failed = agent(ScriptedLM(["1 / 0"] * 5, replies=extract), max_iters=10).run("Compute", namespace={})
    assert [ended_by(run) for run in (submitted, stalled, ran_out, capped, failed)] == [
        "SUBMIT", "stall", "extraction", "spend cap", "failure"]
    assert ran_out.extracted and ran_out.status == "finished"
