"""core/loop/agent.py: `DeepAgent` around dspy.RLM: its settings checked when made, a run that always ends in a final
status with the namespace released, its record's config without keys (end to end: tests/magics/test_task_cell.py)."""

from __future__ import annotations

import dspy
import pytest

from deepagent_magics import DeepAgent, ScriptedLM
from deepagent_magics.core.loop.agent import INPUT_FIELDS, OUTPUT_FIELD, build_signature
from deepagent_magics.core.run.session import NamespaceBusy, claim, release
from deepagent_magics.errors import InvalidValue


def test_the_signature_is_the_agents_inputs_and_one_result():
    signature = build_signature("Do it.", depth=1)
    assert set(signature.input_fields) == set(INPUT_FIELDS) and list(signature.output_fields) == [OUTPUT_FIELD]


@pytest.mark.parametrize("settings, says", [({"max_cost": -1}, "--max-cost must be a number of USD above 0"), ({"approve": "sometimes"}, "sometimes"),
                                            ({"approve_rules": "nope"}, "nope"), ({"door": "teams"}, "not a front door"),
                                            ({"profile": "../x"}, "profile name")])
def test_a_bad_setting_is_refused_when_the_agent_is_made(settings, says):
    with pytest.raises((ValueError, InvalidValue)) as caught:
        DeepAgent(lm=ScriptedLM([]), **settings)
    assert says in str(caught.value)


def test_the_record_keeps_model_names_never_keys():
    agent = DeepAgent(lm=dspy.LM("openai/x", api_key="sk-never-recorded-12345"), max_iters=7)
    config = agent.config()
    assert config["lm"] == "openai/x" and config["max_iters"] == 7 and "sk-never" not in repr(config)
    assert len(agent.prompt_hash) == 12


def test_a_run_that_raises_ends_failed_and_releases_its_namespace(tmp_path):
    namespace = {}
    lm = ScriptedLM(lambda request: (_ for _ in ()).throw(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        DeepAgent(lm=lm, workspace=tmp_path).run("t", namespace=namespace)
    from deepagent_magics.core.run.run import Run

    other = Run("next")
    claim(namespace, other)  # released: the next run may have it
    release(namespace, other)


def test_a_namespace_in_use_is_refused_at_once_and_that_run_ends_failed(tmp_path):
    namespace, holder = {}, __import__("deepagent_magics").Run("holder")
    claim(namespace, holder)
    try:
        with pytest.raises(NamespaceBusy):
            DeepAgent(lm=ScriptedLM([]), workspace=tmp_path).run("t", namespace=namespace)
    finally:
        release(namespace, holder)


def test_forward_runs_in_a_fresh_namespace_for_optimisers(tmp_path):
    agent = DeepAgent(lm=ScriptedLM(["SUBMIT(result='done')"]), workspace=tmp_path)
    prediction = agent.forward("Do it")
    assert prediction.result == "done" and prediction.run.status == "finished"
    failing = DeepAgent(lm=ScriptedLM(lambda request: (_ for _ in ()).throw(RuntimeError("down"))), workspace=tmp_path)
    with pytest.raises(Exception, match="down"):  # a failed run raises what ended it, for the optimiser to score
        failing.forward("Do it")
