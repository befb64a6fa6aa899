"""tuning/choices.py: the names the magics' help lists are those the modules that run them accept."""

from __future__ import annotations

import pytest

from deepagent_magics import DeepAgent
from deepagent_magics.testing import ScriptedLM
from deepagent_magics.tuning import choices
from deepagent_magics.tuning.bench import BenchError, check_arguments
from deepagent_magics.tuning.suites import SUITES
from deepagent_magics.tuning.systems import systems_for


def test_the_suites_are_the_benchmarks_own_in_its_order():
    assert choices.SUITES == tuple(SUITES)


def test_every_baseline_listed_is_one_the_systems_build_and_no_other_is_accepted():
    lm = ScriptedLM([("x", "SUBMIT(result='x')")])
    systems = systems_for(DeepAgent(lm=lm), list(choices.BASELINES))
    assert set(choices.BASELINES) <= set(systems)
    with pytest.raises(BenchError, match="unknown baseline"):
        check_arguments("sklearn", baselines="cot,gpt")


def test_the_optimizers_and_their_budgets_are_the_flags_choices():
    from deepagent_magics.magics.tuning import TuningMagics

    actions = {action.dest: action for action in TuningMagics.deepagent_optimize.parser._actions}
    assert tuple(actions["optimizer"].choices) == choices.OPTIMIZERS
    assert tuple(actions["auto"].choices) == choices.AUTO
