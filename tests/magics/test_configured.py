"""magics/configured.py: the magics after ``%%deepagent`` read its configured settings and build agents as it does."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from IPython.core.error import UsageError

from deepagent_magics.core.model.lm import NoLMError, PreviewLM
from deepagent_magics.magics.configured import AgentMagicsBase
from deepagent_magics.magics.tuning import TuningMagics
from deepagent_magics.testing import ScriptedLM


def magics(ip):
    found = ip.magics_manager.registry["TuningMagics"]
    assert isinstance(found, AgentMagicsBase)
    return found


def test_the_configured_magics_are_found_and_a_missing_extension_is_one_line(ip):
    assert magics(ip)._core() is ip.magics_manager.registry["DeepAgentMagics"]
    lonely = TuningMagics(shell=None)  # in a shell where the extension is not loaded: no DeepAgentMagics
    lonely.shell = SimpleNamespace(magics_manager=SimpleNamespace(registry={}))
    with pytest.raises(UsageError, match="run %load_ext deepagent_magics"):
        lonely._core()


def test_a_profile_must_be_packaged_or_one_of_the_users_types(ip):
    assert magics(ip)._profile(None) == "default"
    assert magics(ip)._profile("reviewer") == "reviewer"
    with pytest.raises(UsageError, match="unknown profile 'nope'; choose one of: "):
        magics(ip)._profile("nope")


def test_the_agent_is_the_one_the_cell_would_run_with_its_configured_settings(ip):
    ip.user_ns["lm"] = ScriptedLM([("x", "SUBMIT(result='1')")])
    ip.run_line_magic("deepagent_config", "--max-iters 7")
    agent = magics(ip)._agent("default", "lm")
    assert agent.max_iters == 7 and agent.lm is ip.user_ns["lm"]


def test_a_preview_needs_no_lm_and_its_stand_in_refuses_to_be_called(ip):
    agent = magics(ip)._agent("default", None, need_lm=False)
    assert isinstance(agent.lm, PreviewLM)
    with pytest.raises(NoLMError):
        agent.lm.forward(messages=[])


def test_a_notebook_variable_is_read_by_name_or_one_line(ip):
    ip.user_ns["dev"] = [1]
    assert magics(ip)._variable("dev", "--devset") == [1]
    with pytest.raises(UsageError, match="--devset gone: there is no notebook variable 'gone'; define it first"):
        magics(ip)._variable("gone", "--devset")
