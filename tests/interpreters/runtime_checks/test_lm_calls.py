"""interpreters/runtime_checks/lm_calls.py: an LM the root agent's code calls itself, from a thread of its own, is held
to the run tree's caps and counted on the run (every route at length: tests/adversarial/test_spend_caps_every_call.py)."""

from __future__ import annotations

from dspy.clients.base_lm import BaseLM

from deepagent_magics import DeepAgent, ScriptedLM
from deepagent_magics.interpreters.runtime_checks.lm_calls import held

FROM_A_THREAD = ("from concurrent.futures import ThreadPoolExecutor\nwith ThreadPoolExecutor(1) as pool:\n"
                 "    out = pool.submit(direct, 'hello').result()\nprint(out)")


def run_with(tmp_path, **caps):
    direct = ScriptedLM(replies="hi there", tokens=(50, 5))
    lm = ScriptedLM([FROM_A_THREAD, "SUBMIT(result='ok')"], tokens=(10, 1))
    return DeepAgent(lm=lm, workspace=tmp_path, **caps).run("Ask the model yourself", namespace={"direct": direct})


def test_with_caps_a_call_from_the_agents_own_thread_is_counted_on_the_run(tmp_path):
    run = run_with(tmp_path, max_tokens=100_000)
    assert "hi there" in run.steps[0].output and run.usage.lm_calls == 3 and run.usage.tokens == 77
    assert run.spend.to_dict()["calls"] == 3


def test_past_a_cap_the_agents_own_call_is_refused_in_its_code(tmp_path):
    run = run_with(tmp_path, max_tokens=5)
    assert "CapReached" in run.steps[0].output and run.usage.lm_calls == 2


def test_without_caps_nothing_is_replaced_and_outside_a_run_calls_pass_untouched(tmp_path):
    original = BaseLM.__dict__["__call__"]
    run = run_with(tmp_path)
    assert run.usage.lm_calls == 2  # nothing held it: the thread's call is not the run's
    assert BaseLM.__dict__["__call__"] is original
    with held:
        assert BaseLM.__dict__["__call__"] is not original
        assert ScriptedLM(replies="plain")("hello") == ["plain"]  # the host's own call: no run, passed through
    assert BaseLM.__dict__["__call__"] is original
