"""core/model/lm.py: which LM a run uses, in order, and its keys secrets from then on."""

from __future__ import annotations

import dspy
import pytest

from deepagent_magics.core.model.lm import NO_LM_MESSAGE, NoLMError, lm_label, make_lm, resolve_lm
from deepagent_magics.core.run.secrets import scrub
from deepagent_magics.errors import InvalidType, InvalidValue
from deepagent_magics.testing import ScriptedLM


def test_an_lm_a_notebook_variable_or_a_model_id_with_options():
    mine = ScriptedLM([])
    assert make_lm(mine) is mine and make_lm(None) is None
    assert make_lm("mine", {"mine": mine}) is mine
    built = make_lm("openai/gpt-4o-mini", options={"max_tokens": 123})
    assert isinstance(built, dspy.LM) and built.kwargs["max_tokens"] == 123
    with pytest.raises(InvalidValue, match="is not a model id"):
        make_lm("gpt4")
    with pytest.raises(InvalidType):
        make_lm(3)


def test_the_order_is_explicit_configured_dspy_then_the_environment(monkeypatch):
    explicit, configured, configured_dspy = ScriptedLM([]), ScriptedLM([]), ScriptedLM([])
    monkeypatch.setenv("DEEPAGENT_LM", "openai/from-env")
    with dspy.context(lm=configured_dspy):
        assert resolve_lm(explicit, configured) is explicit
        assert resolve_lm(None, configured) is configured
        assert resolve_lm() is configured_dspy
    with dspy.context(lm=None):
        assert resolve_lm().model == "openai/from-env"
        monkeypatch.delenv("DEEPAGENT_LM")
        with pytest.raises(NoLMError, match="No LM configured"):
            resolve_lm()
    assert "DEEPAGENT_LM" in NO_LM_MESSAGE


def test_the_key_of_a_resolved_lm_is_a_secret_from_then_on():
    lm = dspy.LM("openai/x", api_key="plain-resolved-key-0011223344")
    resolve_lm(lm)
    assert "plain-resolved-key-0011223344" not in scrub("key=plain-resolved-key-0011223344")
    assert lm_label(lm) == "openai/x" and lm_label(object()) == "object"
